"""What a process loads when it starts: one list of entry points (a module, or
`module:function` to call too), the modules each must not load, a fresh interpreter each.

The import contracts (`[tool.importlinter]`, `tests/project/test_layers.py`) see every import
in the source; they cannot tell a deferred import from an eager one, nor see what a
library pulls in. This does: a member stays light because twelve start at once, the
views load no Textual, and litellm waits for the gateway's first call.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

MEMBER = (
    "horde_tui.member.__main__",
    "horde_tui.member.loop",
    "horde_tui.common.gatewayclient",
    "horde_tui.member.tools",
)
HYGIENE: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (what starts, the modules it imports, what they must not load)
    (
        "a member: its client is http.client, the fetch tools load urllib on first use, "
        "it checks its settings part with the model but never reads a config file (TOML)",
        MEMBER,
        (
            "aiohttp",
            "httpx",
            "litellm",
            "json_repair",
            "textual",
            "mcp",
            "urllib.request",
            "html.parser",
            "tomllib",
        ),
    ),
    (
        "the views: Textual-free, what the app, the web pages and the CLI show",
        (
            "horde_tui.view.events",
            "horde_tui.view.run",
            "horde_tui.view.ledgers",
            "horde_tui.view.coalesce",
            "horde_tui.view.source",
        ),
        ("textual", "litellm"),
    ),
    (
        "the AI Horde provider: litellm and aiohttp load with the gateway's server",
        ("horde_tui.gateway.aihorde",),
        ("litellm", "aiohttp"),
    ),
    (
        "the CLI's parser: every command's flags load, none of the servers or the app "
        "they start (every command, `--version` too, builds it first)",
        ("horde_tui.commands.cli:build_parser",),
        ("aiohttp", "litellm", "textual", "mcp", "jinja2"),
    ),
    (
        "the control files and targets: a member's confirm and the CLI's controls load "
        "none of the tool's pydantic models",
        ("horde_tui.protocol.controls", "horde_tui.protocol.targets"),
        ("pydantic", "horde_tui.protocol.dispatch"),
    ),
)


@pytest.mark.parametrize(
    ("entries", "forbidden"),
    [(entries, forbidden) for _, entries, forbidden in HYGIENE],
    ids=[why.partition(":")[0] for why, _, _ in HYGIENE],
)
def test_an_entry_point_loads_nothing_it_must_not(
    entries: tuple[str, ...], forbidden: tuple[str, ...]
) -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(entries)!r}:\n"
        "    module, _, call = name.partition(':')\n"
        "    loaded = importlib.import_module(module)\n"
        "    if call:\n"
        "        getattr(loaded, call)()\n"
        f"print(json.dumps([m for m in {list(forbidden)!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"{entries} loaded these"
