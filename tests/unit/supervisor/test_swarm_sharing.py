"""A swarm's hordes share by reading: sibling facts, resources and closed ideas show in
a horde's reads tagged [hN], and nothing is ever written to a sibling."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.protocol import run_action
from horde_tui.store.paths import HordePaths
from horde_tui.store.store import HordeStore


def act(root: Path, actor: str, action: str, siblings: dict[str, Path] | None = None, **f):  # type: ignore[no-untyped-def]
    store = HordeStore(root, actor)
    return run_action(store, {"action": action, **f}, run="s1-h1", siblings=siblings)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (a write of any kind changes this)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def swarm(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / ".horde" / "swarms" / "s1"
    h1, h2 = base / "h1", base / "h2"
    assert act(h2, "member-1", "fact", text="The service listens on port 8443").ok
    assert act(h2, "member-1", "resource", name="lab", path="lab/", cleanup="true").ok
    for text, close in (
        ("Audit the TLS setup", {"action": "done", "result": "TLS 1.3 only, fine"}),
        ("Check the debug endpoint", {"action": "rule-out", "reason": "no such endpoint"}),
        ("Fuzz the parser", None),
    ):
        ident = act(h2, "member-2", "idea", text=text).id
        if close is not None:
            assert act(h2, "member-2", "claim", id=ident).ok
            assert act(h2, "member-2", id=ident, **close).ok
    assert act(h1, "member-1", "fact", text="The config lives in etc/app.toml").ok
    return h1, h2


def test_sibling_entries_show_tagged_and_nothing_is_written_to_the_sibling(swarm) -> None:
    h1, h2 = swarm
    before = tree(h2)
    siblings = {"h2": h2}

    facts = act(h1, "member-1", "facts", siblings).text
    resources = act(h1, "member-1", "resources", siblings).text
    ideas = act(h1, "member-1", "list", siblings).text

    own, shared = facts.split("## Sibling hordes'")
    assert "etc/app.toml" in own and "8443" not in own
    assert "[h2]" in shared and "port 8443" in shared
    assert "[h2]" in resources.split("## Sibling hordes'")[1] and "lab/" in resources
    sibling_ideas = ideas.split("## Sibling hordes'")[1]
    assert "[h2]" in sibling_ideas and "Audit the TLS setup" in sibling_ideas
    assert "Check the debug endpoint" in sibling_ideas
    assert "Fuzz the parser" not in sibling_ideas  # open sibling ideas are not shown
    assert tree(h2) == before


def test_a_torn_sibling_tail_is_left_unread(swarm) -> None:
    h1, h2 = swarm
    with open(h2 / "ledger.jsonl", "ab") as fh:
        fh.write(b'{"op": "fact.add", "id": "T9", "text": "half a wri')
    before = tree(h2)

    result = act(h1, "member-1", "facts", {"h2": h2})

    assert result.ok and "port 8443" in result.text and "half a wri" not in result.text
    assert tree(h2) == before


def test_outside_a_swarm_reads_have_no_sibling_section(swarm) -> None:
    h1, _ = swarm
    assert "Sibling" not in act(h1, "member-1", "facts").text


def test_a_swarm_horde_works_in_the_project_directory(tmp_path: Path) -> None:
    paths = HordePaths(tmp_path / ".horde" / "swarms" / "s1" / "h2")
    assert paths.workdir == tmp_path and paths.top == tmp_path / ".horde"
    assert HordePaths(tmp_path / ".horde").workdir == tmp_path
    project = tmp_path / "swarms" / "proj"  # a project that merely sits in a "swarms" folder
    assert HordePaths(project / ".horde").workdir == project


def test_the_tool_command_reads_siblings_from_the_environment(swarm) -> None:
    h1, h2 = swarm
    env = dict(
        os.environ,
        HORDE_DIR=str(h1),
        HORDE_MEMBER="member-1",
        HORDE_RUN="s1-h1",
        HORDE_SIBLINGS=json.dumps({"h2": str(h2)}),
    )

    def facts() -> subprocess.CompletedProcess[str]:
        command = cli_argv("tool", "facts")
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    out = facts()
    assert out.returncode == 0, out.stderr
    assert "[h2]" in out.stdout and "port 8443" in out.stdout

    env["HORDE_SIBLINGS"] = "[1, 2]"
    bad = facts()
    assert bad.returncode == 2 and "HORDE_SIBLINGS" in bad.stderr
