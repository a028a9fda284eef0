"""A live member's activity state (`store.activity`): one derivation for the member
table, the member detail and the supervisor's stall rule.

The supervisor folds its members' status lines into a `MemberState`; the screens fold
transcripts into the same fields (`view.members`). These tests hand-make both and check
each of the seven states, the loop guard's counts, what the supervisor will do, and the
row text the table shows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from horde_tui.common.prompts import LOOPING_BRIEF, reset_brief
from horde_tui.store import activity as act
from horde_tui.store.activity import (
    Activity,
    Backoff,
    RepeatGuard,
    StallClock,
    activity,
    held_back,
    next_step,
    progress_since,
    write_backoff,
)
from horde_tui.store.members import MemberState
from horde_tui.store.standing import standing
from horde_tui.view.members import MemberFold

T0 = 1_000_000.0


def member(*lines: dict[str, Any]) -> MemberState:
    """A running member that emitted `lines` (status lines, `ts` relative to T0)."""
    state = MemberState("member-1", "member")
    state.apply("member-spawn", {"attempt": 1}, T0)
    for line in lines:
        state.absorb({**line, "ts": T0 + line.get("ts", 0)})
    return state


def line(kind: str, at: float, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "ts": at, **fields}


USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.0}


def test_each_state_from_status_lines() -> None:
    answered = [line("turn-start", 1), line("usage", 3, **USAGE)]
    waiting = member(
        *answered,
        line("tool-start", 3, tool="read", summary="read a.py"),
        line("tool-end", 4, tool="read"),
        line("turn-start", 4),
    )
    assert activity(waiting, T0 + 10) == Activity(act.WAITING, T0 + 4)

    limited = member(line("turn-start", 1))
    limited.backoff = Backoff(T0 + 2, T0 + 14, 429)
    assert activity(limited, T0 + 4) == Activity(act.RATE_LIMITED, T0 + 2, "429, retry in 10s")

    tool = member(*answered, line("tool-start", 5, tool="bash", summary="bash: pytest -q"))
    assert activity(tool, T0 + 45) == Activity(act.TOOL, T0 + 5, "pytest -q")

    tool.approval = "pytest -q"
    assert activity(tool, T0 + 45) == Activity(
        act.BLOCKED, T0 + 5, "waiting for approval: bash: pytest -q"
    )

    lock = member(*answered, line("tool-start", 5, tool="horde", summary="horde claim #3"))
    assert activity(lock, T0 + 5.5).state == act.TOOL  # a horde call takes milliseconds
    assert activity(lock, T0 + 5 + act.LOCK_WAIT_S) == Activity(
        act.BLOCKED, T0 + 5, "on the ledger lock: horde claim #3"
    )

    between = member(*answered, line("tool-start", 5, tool="read"), line("tool-end", 6))
    assert activity(between, T0 + 7) == Activity(act.WORKING, T0 + 6)
    assert activity(between, T0 + 6 + act.IDLE_AFTER_S) == Activity(act.IDLE, T0 + 6)

    repeat = {"kind": "same", "count": act.LOOP_WARN, "what": "bash: ls", "period": 1}
    looping = member(
        *answered,
        line("tool-start", 5, tool="bash"),
        line("tool-end", 6, repeat=repeat),
        line("turn-start", 6),
    )
    assert activity(looping, T0 + 9) == Activity(
        act.LOOPING,
        T0 + 6,
        f"sent the same call {act.LOOP_WARN} times in a row, same result: bash: ls",
    )
    assert activity(member(), T0) is not None
    paused = member()
    paused.apply("pause", {}, T0 + 1)
    assert activity(paused, T0 + 2) is None  # its status says it


def test_a_repeat_under_the_warning_is_not_looping_and_a_new_call_clears_it() -> None:
    state = member()
    low = {"kind": "same", "count": act.LOOP_WARN - 1, "what": "bash: ls", "period": 1}
    state.absorb(line("tool-end", T0 + 1, repeat=low))
    assert activity(state, T0 + 2).state != act.LOOPING
    high = {**low, "count": act.LOOP_WARN}
    state.absorb(line("tool-end", T0 + 3, repeat=high))
    assert activity(state, T0 + 4).state == act.LOOPING
    state.absorb(line("tool-end", T0 + 5))
    assert state.repeat is None and activity(state, T0 + 6).state == act.WORKING


def test_a_stale_backoff_note_of_an_earlier_call_is_ignored() -> None:
    state = member(line("turn-start", 50))
    state.backoff = Backoff(T0 + 2, T0 + 5, 429)  # the gateway died before clearing it
    assert activity(state, T0 + 51).state == act.WAITING


def test_the_repeat_guard_counts_same_calls_cycles_and_refusals() -> None:
    guard = RepeatGuard()
    counts = [guard.see("bash ls", "bash: ls", "a.py", False, False).count for _ in range(4)]
    assert counts == [1, 2, 3, 4]
    # A changed result is news: the run starts again.
    assert guard.see("bash ls", "bash: ls", "a.py b.py", False, False).count == 1
    # A ledger read repeated is a wait, never a loop, and it breaks a run.
    assert [guard.see("horde list", "horde list", "x", False, True).count for _ in range(9)] == [
        1
    ] * 9
    assert guard.see("bash ls", "bash: ls", "a.py b.py", False, False).count == 1

    cycle = RepeatGuard()
    seen = [
        cycle.see(call, call, "same", False, False)
        for _ in range(act.CYCLE_EXIT)
        for call in ("read a", "bash ls", "horde idea")
    ]
    last = seen[-1]
    assert (last.kind, last.count, last.period) == ("cycle", act.CYCLE_EXIT, 3)
    assert last.what == "read a, bash ls, horde idea"
    assert seen[2].kind == "same"  # one pass through three calls is no cycle

    refused = RepeatGuard()
    for n in range(1, 4):
        refused.see("horde claim #1", "horde claim #1", "refused: held", True, False)
        other = refused.see(f"read {n}", "read", str(n), False, False)
        assert other.count == 1
    assert refused.refused == {"horde claim #1": 3}  # refusals count however far apart


def test_only_a_ledger_write_is_progress_and_what_the_supervisor_does_next() -> None:
    """The reference's stall rule: model calls and commands are not progress; the clock
    runs from the last ledger write (or the session's first answer, if later)."""
    stall = 60.0
    busy = member(
        line("turn-start", 1),
        line("usage", 3, **USAGE),
        line("tool-start", 3, tool="bash", summary="bash: ls"),
        line("tool-end", 4, tool="bash"),
        line("turn-start", 40),
    )
    now = T0 + 43
    assert activity(busy, now).state == act.WAITING
    assert not held_back(busy, activity(busy, now))
    assert progress_since(busy) == T0 + 3  # its first answer: no write yet
    assert progress_since(busy, last_write=T0 + 30) == T0 + 30
    assert next_step(busy, activity(busy, now), now, stall, T0 + 30) == (
        "reset as no-ledger-progress in 47s unless it writes the ledger"
    )
    assert progress_since(member(line("turn-start", 1))) is None  # no answer yet

    limited = member(line("turn-start", 1), line("usage", 2, **USAGE), line("turn-start", 3))
    limited.backoff = Backoff(T0 + 3, T0 + 500, 429)
    assert held_back(limited, activity(limited, T0 + 400))
    assert next_step(limited, activity(limited, T0 + 400), T0 + 400, stall) == (
        "nothing: waiting on the gateway's back-off (not counted as a stall)"
    )

    repeat = {"kind": "same", "count": act.LOOP_WARN + 1, "what": "bash: ls", "period": 1}
    looping = member(line("tool-end", 2, repeat=repeat))
    assert not held_back(looping, activity(looping, T0 + 3))
    assert next_step(looping, activity(looping, T0 + 3), T0 + 3, stall) == (
        f"reset for looping if it repeats {act.LOOP_EXIT - act.LOOP_WARN - 1} more times"
    )

    blocked = member(line("tool-start", 2, tool="bash", summary="bash: rm x"))
    blocked.approval = "rm x"
    assert held_back(blocked, activity(blocked, T0 + 4000))
    assert next_step(blocked, activity(blocked, T0 + 4000), T0 + 4000, stall) == (
        "nothing: a person decides (not counted as a stall)"
    )
    on_lock = member(line("tool-start", 2, tool="horde", summary="horde claim #1"))
    assert activity(on_lock, T0 + 10).state == act.BLOCKED
    assert not held_back(on_lock, activity(on_lock, T0 + 10))  # the lock is not outside


def test_the_stall_clock_pauses_while_held_back_and_starts_again_at_a_write() -> None:
    clock = StallClock()
    assert clock.quiet_s(None, False, T0) == 0.0  # no answer yet: no clock
    assert clock.quiet_s(T0, False, T0 + 10) == 10
    assert clock.quiet_s(T0, True, T0 + 20) == 20  # held from here on ...
    assert clock.quiet_s(T0, True, T0 + 500) == 20  # ... and the time held is not counted
    assert clock.quiet_s(T0, False, T0 + 530) == 50  # it goes on from where it paused:
    assert clock.quiet_s(T0, True, T0 + 531) == 51  # short holds now and then do not
    assert clock.quiet_s(T0, False, T0 + 540) == 60  # start it again
    assert clock.quiet_s(T0 + 545, False, T0 + 550) == 5  # a ledger write: from zero


def test_the_row_text_says_the_state_and_for_how_long() -> None:
    assert Activity(act.RATE_LIMITED, T0, "429, retry in 3s").text(T0 + 12) == (
        "rate-limited 12s (429, retry in 3s)"
    )
    assert Activity(act.TOOL, T0, "pytest -q").text(T0 + 40) == "running a tool 40s: pytest -q"
    assert Activity(act.WAITING, T0).text(T0 + 125) == "waiting on model 2m05s"
    assert Activity(act.IDLE, T0).text(T0 + 3700) == "idle 1h01m"


def _transcript(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


@pytest.mark.parametrize(
    ("tail", "state", "since", "detail"),
    [
        # The last answer called a tool with no result yet: running it since the answer.
        (
            [
                {
                    "ts": T0 + 5,
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("bash", {"command": "pytest -q"})],
                }
            ],
            act.TOOL,
            T0 + 5,
            "pytest -q",
        ),
        # Its result is in: the next model call is in flight since.
        (
            [
                {
                    "ts": T0 + 5,
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("read", {"path": "a.py"})],
                },
                {
                    "ts": T0 + 6,
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "read",
                    "content": "x",
                },
            ],
            act.WAITING,
            T0 + 6,
            "",
        ),
        # A result the guard counted as a repeat past its warning: looping.
        (
            [
                {
                    "ts": T0 + 5,
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call("bash", {"command": "ls"})],
                },
                {
                    "ts": T0 + 6,
                    "role": "tool",
                    "tool_call_id": "c1",
                    "name": "bash",
                    "content": "x",
                    "repeat": {
                        "kind": "same",
                        "count": act.LOOP_WARN,
                        "what": "bash: ls",
                        "period": 1,
                    },
                },
            ],
            act.LOOPING,
            T0 + 6,
            f"sent the same call {act.LOOP_WARN} times in a row, same result: bash: ls",
        ),
    ],
)
def test_the_screens_derive_the_same_states_from_transcripts(
    tmp_path: Path, tail: list[dict[str, Any]], state: str, since: float, detail: str
) -> None:
    run_dir = tmp_path / "run"
    head = [
        {"ts": T0, "role": "system", "content": "s"},
        {"ts": T0, "role": "user", "content": "u"},
    ]
    _transcript(run_dir / "sessions" / "member-1" / "20260101T000000-aaaaaa.jsonl", head + tail)
    fold = MemberFold(run_dir, {"members": [{"name": "member-1", "role": "member"}]})
    fold.apply({"type": "lifecycle", "kind": "member-spawn", "member": "member-1", "ts": T0})
    fold.refresh_transcripts()
    shown = fold.members(run_live=True)[0]
    assert activity(shown, T0 + 7) == Activity(state, since, detail)


def test_the_screens_see_the_gateways_backoff(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    records = [{"ts": T0, "role": "user", "content": "u"}]
    _transcript(run_dir / "sessions" / "member-1" / "20260101T000000-aaaaaa.jsonl", records)
    write_backoff(run_dir, "member-1", Backoff(T0 + 1, T0 + 9, 429))
    fold = MemberFold(run_dir, {"members": [{"name": "member-1", "role": "member"}]})
    fold.apply({"type": "lifecycle", "kind": "member-spawn", "member": "member-1", "ts": T0})
    fold.refresh_transcripts()
    shown = fold.members(run_live=True)[0]
    assert activity(shown, T0 + 3) == Activity(act.RATE_LIMITED, T0 + 1, "429, retry in 6s")


def test_the_reset_brief_carries_the_members_own_ledger_state(horde: Any) -> None:
    """`store.standing` as the supervisor reads it before a reset releases the claims:
    the idea held, the finding with its review state, the open threads either way."""
    (horde.workdir / "app.py").write_text("PASSWORD = 'x'\n")
    idea = horde.claimed("member-1", "Check app.py for a hard-coded password")
    filed = horde(
        "member-1",
        "finding",
        idea=idea,
        concern="secrets",
        concernDef="secrets in code",
        text="app.py hard-codes the password",
        evidence="app.py:1",
        support="tested",
        importance="high",
        confidence="high",
    )
    assert filed.ok, filed.text
    horde.claimed("member-2", "Check login() for timing attacks")  # not member-1's
    assert horde("member-2", "message", to="member-1", kind="question", text="Which line?").ok
    assert horde("member-1", "message", to="member-2", kind="blocker", text="Need the DB").ok

    held = standing(horde.state(), "member-1", "r1")
    brief = reset_brief("stalled", "silent for 30m00s", held.render())

    assert brief.startswith("Your previous session was reset (stalled): silent for 30m00s.")
    assert f"- {idea}: Check app.py for a hard-coded password" in brief
    assert "timing" not in brief
    assert "- F1 r1 (idea #1, high): app.py hard-codes the password [review: open" in brief
    assert "- Q1 question from member-2: Which line? (answer: `respond id=Q1`)" in brief
    assert "- Q2 blocker you sent member-2: Need the DB (awaiting their answer)" in brief
    assert standing(horde.state(), "member-3", "r1").render() == ""
    looping = reset_brief("looping", "sent the same call 8 times in a row", "")
    assert LOOPING_BRIEF.split(":")[0] in looping and "You held no idea" in looping


def test_a_narrow_column_gets_the_short_words() -> None:
    assert Activity(act.TOOL, T0, "pytest -q").text(T0 + 40, short=True) == "tool 40s: pytest -q"
    assert Activity(act.WAITING, T0).text(T0 + 3, short=True) == "model 3s"
    limited = Activity(act.RATE_LIMITED, T0, "429, retry in 3s")
    assert limited.text(T0 + 12, short=True) == "limited 12s (429, retry in 3s)"
