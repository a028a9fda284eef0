"""`horde-tui replay RUN`: the run as it was after event E#, with a moving cursor.

The scene is written through the real `horde` tool (`support.replay_scene`: ideas,
claims, findings with reviews of each verdict, a question answered and resolved, a
refused call, lifecycle events), so every outcome event carries the ledger seq it left.
Snapshots are made every few records here, so the property test goes back and forth
across many of them and through the copy-on-write of entries they share.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.app import RUN_ID
from support.replay_scene import ended_scene

import horde_tui.view.replay as replay_mod
from horde_tui.commands.fork import _lines, ledger_seq_at
from horde_tui.store.graph import GraphBuilder
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.state import LedgerState
from horde_tui.view.ledgers import KINDS, LedgerView
from horde_tui.view.members import MemberFold
from horde_tui.view.replay import Replay, ReplayLedgerView, ReplayRefused, fold_upto, tables
from horde_tui.view.run import read_info
from horde_tui.view.swimlane import layout


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished scene's run directory."""
    return ended_scene(tmp_path_factory.mktemp("replay")) / "runs" / RUN_ID


@pytest.fixture(scope="module")
def small_snapshots() -> Any:
    """Snapshots every 4 ledger records (every 2 where the cursor went back), 2 member
    events and 4 graph events."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_mod, "LEDGER_EVERY", 4)
        mp.setattr(replay_mod, "FINE", 2)
        mp.setattr(replay_mod, "MEMBER_EVERY", 2)
        mp.setattr(replay_mod, "GRAPH_EVERY", 4)
        yield


def fresh_members(run_dir: Path, events: list[dict[str, Any]]) -> dict[str, Any]:
    fold = MemberFold(run_dir, read_info(run_dir)[1])
    for ev in events:
        fold.apply(ev)
    return fold.states


def fresh_view(horde_dir: Path, state: LedgerState) -> LedgerView:
    """The tabs' rows over a fold made elsewhere (not the ledger file's)."""
    view = LedgerView(horde_dir, RUN_ID)
    view.store.state = state
    view.take_changes(set(KINDS), -1)
    return view


def rows_of(view: LedgerView) -> dict[str, list[tuple[str, ...]]]:
    return {kind: [r.cells() for r in view.rows(kind)] for kind in KINDS}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_replay_at_any_event_equals_a_fresh_fold(
    scene: Path, small_snapshots: None, data: st.DataObject
) -> None:
    horde_dir = scene.parent.parent
    events = JsonlTail(scene / "events.jsonl").read_new()
    lines = _lines(horde_dir / "ledger.jsonl")
    records = [r for r, _ in lines]
    replay = Replay(scene)
    shown = ReplayLedgerView(replay, RUN_ID)  # what the tabs read
    try:
        # A walk: jumps to random cut points and short steps either way, as keys go.
        moves = st.one_of(st.integers(1, len(events)), st.integers(-6, 6).map(lambda d: (d,)))
        at = len(events)
        for move in data.draw(st.lists(moves, min_size=1, max_size=16)):
            at = max(1, min(len(events), at + move[0])) if isinstance(move, tuple) else move
            replay.seek(at)
            replay.sync_ledger()
            number = int(str(events[at - 1]["id"])[1:])
            seq = ledger_seq_at(events, number, lines)
            assert replay.cursor().seq == seq
            fresh = fold_upto(records, seq)
            assert tables(replay.ledger.state) == tables(fresh), at
            shown.refresh()
            assert rows_of(shown) == rows_of(fresh_view(horde_dir, fresh)), at
            assert replay.member_fold.fold.states == fresh_members(scene, events[:at]), at
    finally:
        replay.close()


def test_stepping_back_and_forth_equals_a_fresh_fold(scene: Path, small_snapshots: None) -> None:
    """A zig-zag over every event (back a few, on past writes, back again): what the
    keys do, and what shares entries between the live fold and the snapshots. The
    swimlane too: the one of the events up to the cursor."""
    events = JsonlTail(scene / "events.jsonl").read_new()
    lines = _lines(scene.parent.parent / "ledger.jsonl")
    records = [r for r, _ in lines]
    replay = Replay(scene)
    lanes = [(m.name, m.role) for m in replay.member_fold.fold.members(True)]
    n = len(events)
    try:
        for top in range(n, 0, -3):
            for at in (top, top - 3, top + 2, top - 2, top + 4, top - 1):
                at = max(1, min(n, at))
                replay.seek(at)
                replay.sync_ledger()
                seq = ledger_seq_at(events, at, lines)
                assert tables(replay.ledger.state) == tables(fold_upto(records, seq)), at
                fresh = GraphBuilder(lanes)
                fresh.feed(events[:at])
                assert replay.graph_layout() == layout(fresh.graph_so_far()), at
    finally:
        replay.close()


def test_the_jumps_land_on_the_next_and_previous_such_event(scene: Path) -> None:
    events = JsonlTail(scene / "events.jsonl").read_new()
    replay = Replay(scene)
    try:
        assert replay.at == len(events)  # opens at the end
        assert not replay.step("event", 1)  # nowhere to go
        replay.seek(1)
        lines = _lines(scene.parent.parent / "ledger.jsonl")
        seqs = [0] + [ledger_seq_at(events, n, lines) for n in range(1, len(events) + 1)]
        writes = [n for n in range(1, len(events) + 1) if seqs[n] > seqs[n - 1]]
        assert len(writes) > 10
        findings = [
            n
            for n, e in enumerate(events, 1)
            if e.get("type") == "outcome" and e.get("ok") and e.get("action") == "finding"
        ]
        refusals = [n for n, e in enumerate(events, 1) if e.get("ok") is False]
        assert len(findings) == 3 and refusals
        for how, where in (("write", writes), ("finding", findings), ("refusal", refusals)):
            replay.seek(1)
            seen = []
            while replay.step(how, 1):
                seen.append(replay.at)
            assert seen == [n for n in where if n > 1], how
            back = []
            while replay.step(how, -1):
                back.append(replay.at)
            assert back == list(reversed(where[:-1])), how
        replay.seek(5)
        assert replay.step("event", -1) and replay.at == 4
        assert replay.step("event", 1) and replay.at == 5
        replay.seek(len(events))  # a minute back, and on again (`test_app_replay` checks where)
        assert replay.step("minute", -1) and replay.at < len(events)
        assert replay.step("minute", 1) and replay.at > 5
    finally:
        replay.close()


def test_seek_event_refuses_an_event_the_run_lacks(scene: Path) -> None:
    replay = Replay(scene)
    try:
        with pytest.raises(ReplayRefused, match=r"has no event E9999; its events are E1 to E"):
            replay.seek_event(9999)
        replay.seek_event(3)
        assert replay.cursor().number == 3 and replay.at == 3
    finally:
        replay.close()


def test_the_member_table_counts_the_calls_made_by_the_cursor(tmp_path: Path) -> None:
    """Turns, tokens and cost at the cursor come from the gateway's `usage.jsonl` (one
    line a call, with its time): the transcripts are not cut at a moment, the usage is."""
    import json

    run_dir = ended_scene(tmp_path) / "runs" / RUN_ID
    probe = Replay(run_dir)
    times = list(probe.events.times)
    probe.close()
    mid = len(times) // 2
    calls = [
        ("member-1", times[0], 100, 10, 0.01),
        ("member-2", times[mid], 50, 5, None),  # unpriced: its cost is unknown from then
        ("member-1", times[-1], 200, 20, 0.02),
    ]
    (run_dir / "usage.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "ts": ts,
                    "member": m,
                    "prompt_tokens": p,
                    "completion_tokens": c,
                    "cost_usd": cost,
                }
            )
            + "\n"
            for m, ts, p, c, cost in calls
        )
        + "not json\n"
    )
    replay = Replay(run_dir)
    try:

        def figures(at: int) -> dict[str, tuple[int, int, float | None]]:
            replay.seek(at)
            return {
                s.name: (s.turns, s.prompt_tokens + s.completion_tokens, s.cost_usd)
                for s in replay.members()
            }

        first = bisect.bisect_right(times, times[0])
        assert figures(first)["member-1"] == (1, 110, pytest.approx(0.01))
        assert figures(first)["member-2"] == (0, 0, 0.0)
        later = bisect.bisect_right(times, times[mid])
        assert figures(later)["member-2"] == (1, 55, None)
        assert figures(later)["member-1"] == (1, 110, pytest.approx(0.01))
        assert figures(replay.total)["member-1"] == (2, 330, pytest.approx(0.03))
    finally:
        replay.close()
