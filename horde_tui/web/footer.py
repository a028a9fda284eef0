"""The footer of every page: the version and, from a git checkout, the commit, linked to
that commit in the project's repository when the repository's URL is known (a
`Repository`, `Source` or `Homepage` entry of `[project.urls]` in pyproject.toml)."""

from __future__ import annotations

import functools
import html
import tomllib
from pathlib import Path

from horde_tui.supervisor.setup import code_version

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
URL_KEYS = ("repository", "source", "source code", "code", "homepage")
"""`[project.urls]` keys that name the repository, in the order they are trusted."""


def repository_url(pyproject: Path = PYPROJECT) -> str | None:
    """The repository's web address from `[project.urls]`, without a trailing slash or
    `.git`; None when the file or the entry is missing or is not an http(s) URL."""
    try:
        urls = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["urls"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return None
    found = {str(k).strip().lower(): str(v).strip() for k, v in dict(urls).items()}
    for key in URL_KEYS:
        url = found.get(key, "")
        if url.startswith(("https://", "http://")):
            return url.rstrip("/").removesuffix(".git")
    return None


def footer_html(version: str, commit: str | None, repo: str | None) -> str:
    """`horde-tui 0.1.0 · commit <short>`, the commit a link into `repo` when known (a
    dirty tree links the commit it is based on)."""
    if not commit:
        return html.escape(f"horde-tui {version}")
    base = commit.removesuffix("-dirty")
    short = base[:12] + ("-dirty" if commit.endswith("-dirty") else "")
    text = html.escape(short)
    if repo:
        href = html.escape(f"{repo}/commit/{base}", quote=True)
        text = f'<a href="{href}">{text}</a>'
    return f"{html.escape(f'horde-tui {version}')} · commit {text}"


@functools.cache
def build_footer() -> str:
    """This package's footer (read once: the checkout does not change under a server)."""
    info = code_version()
    return footer_html(info["version"], info["commit"], repository_url())
