"""An external member (an agent joined through `horde-tui mcp`) in the one member fold.

Its life is its server's `member-join` and `member-leave` events and the outcomes of its
`horde` calls; the run never pauses, resets or waits on it. The screens and the report
(`recover.rebuild_members`) show it as external; the supervisor and resume leave it out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from horde_tui.store.members import MemberState, fold_lifecycle
from horde_tui.supervisor import recover


def lifecycle(kind: str, ts: str, **fields: Any) -> dict[str, Any]:
    return {"type": "lifecycle", "kind": kind, "ts": ts, "actor": "ext-1", **fields}


JOIN = lifecycle("member-join", "2026-01-02T12:00:00Z", member="ext-1", pid=4321)
CALL = {
    "type": "outcome",
    "ts": "2026-01-02T12:00:05Z",
    "actor": "ext-1",
    "action": "finding",
    "ok": True,
}
PAUSE = {
    "type": "lifecycle",
    "kind": "pause",
    "ts": "2026-01-02T12:00:06Z",
    "actor": "parent",
    "targets": ["member-1", "ext-1"],
}
LEAVE = lifecycle("member-leave", "2026-01-02T12:00:09Z", member="ext-1")


def test_a_join_adds_an_external_member_that_pause_does_not_touch() -> None:
    members = {"member-1": MemberState("member-1", "member", status="running")}

    for ev in (JOIN, CALL, PAUSE):
        fold_lifecycle(members, ev, externals=True)

    ext = members["ext-1"]
    assert (ext.external, ext.role, ext.status, ext.pid) == (True, "external", "running", 4321)
    assert ext.turns == 1 and ext.tool_summary == "horde finding"
    assert members["member-1"].status == "paused"

    fold_lifecycle(members, LEAVE, externals=True)
    assert (ext.status, ext.exit_cause) == ("exited", "left")
    assert ext.ended is not None and ext.started is not None and ext.ended - ext.started == 9


def test_the_supervisor_and_resume_fold_leaves_external_members_out() -> None:
    members = {"member-1": MemberState("member-1", "member", status="running")}

    assert not fold_lifecycle(members, JOIN)
    assert not fold_lifecycle(members, CALL)
    assert list(members) == ["member-1"]


def test_the_report_lists_an_external_member_as_external() -> None:
    manifest = {"members": [{"name": "member-1", "role": "member"}]}

    rebuilt = recover.rebuild_members(manifest, [JOIN, CALL, LEAVE])

    by_name = {m.name: m for m in rebuilt}
    assert set(by_name) == {"member-1", "ext-1"}
    ext = by_name["ext-1"]
    assert (ext.role, ext.external, ext.exit_cause, ext.turns) == ("external", True, "left", 1)


def test_an_external_member_whose_server_died_without_leaving_shows_as_ended(
    tmp_path: Path,
) -> None:
    """The server's process is the external member's heartbeat: SIGKILLed, it writes no
    `member-leave`, and the screens show the member ended rather than running forever."""
    from horde_tui.view.members import MemberFold

    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fold = MemberFold(tmp_path)
        fold.apply(lifecycle("member-join", "2026-01-02T12:00:00Z", member="ext-1", pid=server.pid))
        fold.apply(CALL)
        (shown,) = fold.members(run_live=True)
        assert (shown.status, shown.exit_cause) == ("running", None)
    finally:
        server.kill()
        server.wait()
    (shown,) = fold.members(run_live=True)
    assert (shown.status, shown.exit_cause) == ("exited", "killed")
    assert shown.detail == f"its MCP server (pid {server.pid}) ended without leaving"


def test_the_screens_follow_an_external_members_calls_from_the_event_log(
    tmp_path: Path,
) -> None:
    """An external member has no transcript: its row's turns and last call come from its
    outcome events, read as the log grows (other members' outcomes are not parsed)."""
    import json

    from horde_tui.view.run import RunView

    log = tmp_path / "events.jsonl"

    def append(*events: dict[str, Any]) -> None:
        with log.open("a") as f:
            for ev in events:
                f.write(json.dumps(ev, separators=(",", ":")) + "\n")

    append({**JOIN, "pid": os.getpid()})  # its server: this process, alive
    view = RunView(tmp_path, hosted=True)
    view.refresh()
    (ext,) = [m for m in view.fold.members(True) if m.name == "ext-1"]
    assert (ext.status, ext.turns) == ("running", 0)
    append(CALL, {**CALL, "actor": "member-1", "action": "post"})
    assert "members" in view.refresh()
    (ext,) = [m for m in view.fold.members(True) if m.name == "ext-1"]
    assert (ext.turns, ext.tool_summary) == (1, "horde finding")
    assert [c["actor"] for c in view.life.calls] == ["ext-1"]
