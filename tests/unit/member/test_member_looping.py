"""The member's loop guard beyond refusals: the same call with the same result in a row,
and the same cycle of three calls, end the session as `looping` after a warning; a ledger
read repeated (a member waiting for another's work) and a call whose result changed do
not. A real member process against the real gateway and the scripted stub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import GatewayProcess
from support.member import prepare, run_member

from horde_tui.common.fence import unfence
from horde_tui.store.activity import CYCLE_EXIT, CYCLE_WARN, LOOP_EXIT, LOOP_WARN


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _tool_records(transcript: Path) -> list[dict[str, Any]]:
    records = map(json.loads, transcript.read_text().splitlines())
    return [m for m in records if m.get("role") == "tool"]


def test_the_same_call_with_the_same_result_in_a_row_ends_the_session_looping(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n")
    same = _call("read", path="a.txt")
    gateway.stub.stub.set_scripts({"reader-1": [same] * (LOOP_EXIT + 4)})

    code, events, stderr = run_member(gateway, tmp_path, "reader-1", HORDE_REMIND_CALLS="0")

    assert code == 0, stderr
    exit_event = events[-1]
    assert exit_event["type"] == "exit" and exit_event["cause"] == "looping", exit_event
    assert exit_event["detail"] == (
        f"sent the same call {LOOP_EXIT} times in a row, same result: read a.txt"
    )
    tools = _tool_records(Path(exit_event["transcript"]))
    assert len(tools) == LOOP_EXIT
    notices = [("stop sending it" in unfence(t["content"])) for t in tools]
    assert notices == [n >= LOOP_WARN for n in range(1, LOOP_EXIT + 1)]
    # The count is in the transcript (the screens) and in the status lines (the supervisor).
    assert [t.get("repeat", {}).get("count", 1) for t in tools] == list(range(1, LOOP_EXIT + 1))
    ends = [e for e in events if e["type"] == "tool-end"]
    assert ends[-1]["repeat"] == {
        "kind": "same",
        "count": LOOP_EXIT,
        "what": "read a.txt",
        "period": 1,
    }


def test_a_repeating_three_call_cycle_ends_the_session_looping(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    cycle = [
        _call("read", path="a.txt"),
        _call("bash", command="echo hi"),
        _call("read", path="b.txt"),
    ]
    gateway.stub.stub.set_scripts({"cycler-1": cycle * (CYCLE_EXIT + 2)})

    code, events, stderr = run_member(gateway, tmp_path, "cycler-1", HORDE_REMIND_CALLS="0")

    assert code == 0, stderr
    exit_event = events[-1]
    assert exit_event["cause"] == "looping", exit_event
    assert exit_event["detail"] == (
        f"repeated the same 3-call cycle {CYCLE_EXIT} times: read a.txt, bash: echo hi, read b.txt"
    )
    tools = _tool_records(Path(exit_event["transcript"]))
    assert len(tools) == 3 * CYCLE_EXIT
    warned = [n for n, t in enumerate(tools, 1) if "stop sending it" in unfence(t["content"])]
    assert warned[0] == 3 * CYCLE_WARN


def test_waiting_reads_and_changing_results_are_not_loops(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    list_call = _call("horde", action="list")
    # Each `date +%N` prints something new: the same call, but news every time.
    changing = _call("bash", command="date +%N")
    gateway.stub.stub.set_scripts(
        {
            "waiter-1": [list_call] * (LOOP_EXIT + 2)
            + [changing] * (LOOP_EXIT + 2)
            + [{"content": "done"}]
        }
    )

    code, events, stderr = run_member(gateway, tmp_path, "waiter-1", HORDE_REMIND_CALLS="0")

    assert code == 0, stderr
    assert events[-1]["cause"] == "completed", events[-1]
    tools = _tool_records(Path(events[-1]["transcript"]))
    assert len(tools) == 2 * (LOOP_EXIT + 2)
    assert not any("stop sending it" in unfence(t["content"]) for t in tools)
