"""`horde-tui replay` on a real run: the shared headless three-member run stopped clean
from another shell (real supervisor, gateway and members on the stub model). `last`
finds it; at every event the replay's ledger equals a fresh fold of the ledger cut at
the seq `fork` would cut at, and its members a fresh fold of the events before it."""

from __future__ import annotations

import pytest
from support.cli import StoppedClean

from horde_tui.app.replay import run_to_replay
from horde_tui.commands.fork import _lines, ledger_seq_at
from horde_tui.store.jsonl import JsonlTail
from horde_tui.view.members import MemberFold
from horde_tui.view.replay import Replay, fold_upto, tables
from horde_tui.view.run import read_info

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # a whole real run: `pytest -m slow`


def test_replay_of_a_real_run_at_every_event(stopped_clean: StoppedClean) -> None:
    run_dir = stopped_clean.run_dir
    horde_dir = run_dir.parent.parent
    assert run_to_replay(horde_dir, "last") == run_dir
    events = JsonlTail(run_dir / "events.jsonl").read_new()
    lines = _lines(horde_dir / "ledger.jsonl")
    records = [r for r, _ in lines]
    replay = Replay(run_dir)
    fold = MemberFold(run_dir, read_info(run_dir)[1])
    try:
        assert replay.total == len(events) and replay.events.run_end is not None
        for at in range(1, len(events) + 1):  # forward, member fold alongside
            fold.apply(events[at - 1])
            replay.seek(at)
            assert replay.member_fold.fold.states == fold.states, at
        for at in range(len(events), 0, -1):  # and back, every ledger cut
            replay.seek(at)
            replay.sync_ledger()
            seq = ledger_seq_at(events, int(str(events[at - 1]["id"])[1:]), lines)
            assert tables(replay.ledger.state) == tables(fold_upto(records, seq)), at
        assert any(replay.events.flags[i] & 1 for i in range(len(events)))  # it wrote
    finally:
        replay.close()
