"""The one list of secret files under a `.horde/`, and of the locks a command must not hold.

Every place that keeps a file out of sight reads it from here: the sandbox masks
(`sandbox/policy.py`), the member's `read` tool (`member/tools.py`), and `serve` and
`export` (`store/mask.py`, `web/pages.py`). Before, each had its own copy and they
disagreed (`runs/<id>/mcp-token` was masked by none). `tests/e2e/test_secret_files.py` runs
a gateway, a run and an MCP server, and fails on any file holding a secret that this
list does not name. Stdlib only: members import it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from pathlib import Path

SECRET_NAMES = ("config.toml", "*.token", "mcp-token", "*.key")
"""Files whose content is a credential: the gateway token of a run or swarm
(`gateway.token`), the token of `horde-tui mcp --http` (`mcp-token`), and the config file,
which may carry `api_key`. Matched by name at any depth of `.horde/`."""

LOCK_NAMES = (".lock", ".projecting.lock", ".mcp-join.lock", ".*.synced")
"""Lock files every writer of the horde waits on (`store/lock.py`, `store/durable.py`,
`mcp` seats): a read-only file can still be `flock`ed, so a sandboxed
`flock .horde/.lock sleep 590` would stall every write. Masked in the sandbox like the
secrets; their content is no secret, so `read`, `serve` and `export` may show them."""

PLACES = ("", "runs/*", "swarms/*", "swarms/*/h*", "swarms/*/h*/runs/*")
"""The directories of a `.horde/` that hold run files: the top, a run, a swarm, a swarm's
horde and its runs. The sandbox masks what these hold when a command starts."""

_URL_CREDENTIALS = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:\"'<>]*:[^\s/@\"'<>]+@")
"""`scheme://user:password@` in a URL (`DATABASE_URL`, a proxy, a git remote)."""


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def is_secret(path: Path, horde_dir: Path) -> bool:
    """Whether `path` (resolved) is a secret file under `horde_dir` (resolved), at any
    depth: its name alone decides, so a copy in an unexpected folder is refused too."""
    return horde_dir in path.parents and _matches(path.name, SECRET_NAMES)


def _places(horde_dir: Path) -> Iterator[Path]:
    for place in PLACES:
        yield from (horde_dir.glob(place) if place else [horde_dir])


def masked_files(horde_dir: Path, *, locks: bool) -> list[Path]:
    """The secret files (and with `locks` the lock files) in `horde_dir`'s places, as
    they are now: regular files and sockets, never a symlink (binding over one would
    follow it out of `.horde/`)."""
    patterns = SECRET_NAMES + LOCK_NAMES if locks else SECRET_NAMES
    found: list[Path] = []
    for place in _places(horde_dir):
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            if not _matches(entry.name, patterns) or entry.is_symlink():
                continue
            if entry.is_file() or Path(entry.path).is_socket():
                found.append(Path(entry.path))
    return sorted(found)


def mask_url_credentials(text: str, mask: str) -> str:
    """`postgres://app:pw@db/app` -> `postgres://[masked]@db/app`: the user and password
    of every URL in `text`."""
    return _URL_CREDENTIALS.sub(rf"\1{mask}@", text)


_SECRET_SUFFIXES = tuple(
    "_API_KEY _APIKEY _TOKEN _SECRET _PASSWORD _PASSWD _ACCESS_KEY _KEY_ID _PRIVATE_KEY "
    "_CREDENTIALS".split()
)
_SECRET_PREFIXES = tuple(
    f"{p}_"
    for p in "OPENAI ANTHROPIC AZURE AWS DEEPSEEK GROQ MISTRAL GEMINI OPENROUTER TOGETHER "
    "LITELLM".split()
)
_SECRET_NAMES = frozenset(
    "GOOGLE_APPLICATION_CREDENTIALS HF_TOKEN HUGGING_FACE_HUB_TOKEN HORDE_GATEWAY_URL "
    "HORDE_GATEWAY_TOKEN HORDE_API_KEY API_KEY TOKEN SECRET PASSWORD".split()
)


def secret_variable(name: str) -> bool:
    """Whether the environment variable `name` holds a credential: the one rule for what
    a member process never inherits (`sandbox/shell.scrubbed_env`) and whose values the
    masker hides (`store/mask.py`)."""
    upper = name.upper()
    return (
        upper.endswith(_SECRET_SUFFIXES)
        or upper.startswith(_SECRET_PREFIXES)
        or upper in _SECRET_NAMES
    )
