"""README is a front page a newcomer reads to the end; the manual is the MkDocs site
under `docs/` (issue 31 item 9).

These checks are what `mkdocs build --strict` (in `.ci/run`) cannot see: README's
length and its Quick start lines, that README's links land on files, that every page is
in the site's navigation, and that the module paths the pages name still exist (the
architecture page's "where to change X" table is only useful while it is true).
"""

from __future__ import annotations

import re
from pathlib import Path

from support.paths import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
MKDOCS = REPO / "mkdocs.yml"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
"""A Markdown link or image target, without its #fragment."""
MODULE_PATH = re.compile(r"`((?:horde_tui|widgets|styles|tests)/[\w/.-]*[\w/])`")
"""A backticked repository path a page names (`horde_tui/store/lock.py`, `tests/support/`)."""


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_readme_is_under_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines: move detail into docs/"


def test_readme_keeps_the_quick_start_lines_ci_runs() -> None:
    """`.ci/run` greps the test line and runs it; the demo line is the first thing a
    newcomer types."""
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert (
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && horde-tui demo" in quick
    )
    assert (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest"
        in quick
    )
    assert "pip install -e '.[test]' && pytest" in (REPO / ".ci" / "run").read_text()


def test_readme_links_land_on_files_and_reach_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if "://" not in t]
    missing = [t for t in targets if not (REPO / t).is_file()]
    assert missing == [], f"README links to files that are not there: {missing}"
    linked_pages = {t for t in targets if t.startswith("docs/")}
    assert len(linked_pages) >= 5, f"README should link into the docs: {linked_pages}"
    assert "CONTRIBUTING.md" in targets


def test_every_docs_page_is_in_the_navigation_and_every_nav_entry_exists() -> None:
    config = MKDOCS.read_text(encoding="utf-8")
    assert re.search(r"^theme:\s*\n\s+name:\s*material\s*$", config, re.M), "Material theme"
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    on_disk = {str(p.relative_to(DOCS)) for p in pages()}
    assert nav - on_disk == set(), f"nav entries with no page: {nav - on_disk}"
    assert on_disk - nav == set(), f"pages no navigation reaches: {on_disk - nav}"


def test_the_paths_the_docs_name_exist() -> None:
    """A page that names a module, a test or a script that moved sends a reader (or an
    engineer following "where to change X") nowhere."""
    wrong = [
        f"{page.relative_to(REPO)}: {path}"
        for page in pages()
        for path in MODULE_PATH.findall(page.read_text(encoding="utf-8"))
        if "<" not in path and "*" not in path and not (REPO / path).exists()
    ]
    assert wrong == [], "paths that are not in the repository:\n" + "\n".join(wrong)


def test_the_architecture_page_says_where_to_change_each_thing() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Where to change X", 1)[1].split("\n## ", 1)[0]
    for task in ("dedup", "member row", "gateway retries", "ledger's markdown", "new action"):
        row = next((line for line in table.splitlines() if task in line.lower()), "")
        assert MODULE_PATH.search(row), f"no row naming a module for {task!r}"


def test_ci_builds_the_docs_strictly_outside_the_repository() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    build = next((line for line in ci.splitlines() if ".venv/bin/mkdocs build" in line), "")
    assert "--strict" in build and "--site-dir" in build and "$work" in build, build
    assert "mkdocs-material" in (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_contributing_says_how_to_run_the_fast_subset() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "pytest -x -q tests/" in text and "-m slow" in text


COMMAND = re.compile(r"`horde-tui ([a-z][\w-]*)")
"""A `horde-tui CMD ...` a page names."""


def test_the_commands_the_conformance_page_names_exist() -> None:
    """The conformance notes map the reference's commands to horde-tui's: a command that
    was renamed or taken away leaves a row that points nowhere (its module paths are
    checked above, with every page's)."""
    from horde_tui.commands.cli import build_parser
    from horde_tui.commands.completion import command_parsers

    text = (DOCS / "reference" / "conformance.md").read_text(encoding="utf-8")
    named = set(COMMAND.findall(text))
    assert {"run", "serve", "export", "resume"} <= named, named
    unknown = named - set(command_parsers(build_parser()))
    assert unknown == set(), f"commands the conformance page names that do not exist: {unknown}"
