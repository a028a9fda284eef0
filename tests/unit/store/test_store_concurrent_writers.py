"""Real writer processes, mixed writes each, on one `.horde/` through the real lock: 12 x 200
in the slow run, 6 x 32 by default.

Afterwards the files alone must show: every acknowledged write exactly once, ids of each
kind unique and gapless, every projection equal to a fresh rendering of ledger.jsonl,
and the run's E# event ids unique and gapless.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import HELPERS

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

WRITER = HELPERS / "writer.py"


@pytest.mark.parametrize(
    ("processes", "writes"), [(6, 32), pytest.param(12, 200, marks=pytest.mark.slow)]
)
def test_processes_writing_at_once(tmp_path: Path, processes: int, writes: int) -> None:
    """Each writer's units of six (idea, claim, post, fact, finding, done) then an idea and
    its claim: `writes` is 6 * units + 2."""
    units, rest = divmod(writes, 6)
    assert rest == 2
    root = tmp_path / ".horde"
    env = {**os.environ, "HORDE_LOCK_TIMEOUT_S": "30"}
    procs = []
    started = time.monotonic()
    for n in range(1, processes + 1):
        acks = tmp_path / f"acks-{n}.jsonl"
        cmd = [
            sys.executable,
            str(WRITER),
            str(root),
            f"member-{n}",
            f"p{n}",
            str(writes),
            str(acks),
        ]
        procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    elapsed = time.monotonic() - started

    acks = []
    for n in range(1, processes + 1):
        mine = verify.read_acks(tmp_path / f"acks-{n}.jsonl")
        assert len(mine) == writes, f"member-{n} acknowledged {len(mine)} writes"
        acks += mine

    records, state = verify.fresh_state(root)
    verify.assert_seq_gapless(records)
    verify.assert_add_records_unique(records)
    verify.assert_acks_present(acks, records, state)
    counts = verify.assert_ids_gapless(state)
    assert counts["ideas"] == processes * (units + 1)
    assert counts["findings"] == counts["facts"] == processes * units
    assert len(state.posts) == processes * units
    created = {a["id"] for a in acks if a["action"] in ("idea", "fact", "finding")}
    assert len(created) == processes * (3 * units + 1), "two acknowledgements share an id"

    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)

    # The writers really ran at the same time: the ledger interleaves them (at least one
    # switch per 24 writes, 100 at full size).
    actors = [r["actor"] for r in records if r["actor"].startswith("member-")]
    switches = sum(1 for x, y in itertools.pairwise(actors) if x != y)
    least = processes * writes // 24
    assert switches >= least, f"only {switches} switches between writers: no real contention"

    events = verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")
    assert len(events) == 2 * processes * writes
    # Each transaction's intent and outcome are adjacent: nothing slipped in between.
    for intent, outcome in zip(events[::2], events[1::2], strict=True):
        assert (intent["type"], outcome["type"]) == ("intent", "outcome")
        assert intent["requestId"] == outcome["requestId"] and intent["actor"] == outcome["actor"]
        assert outcome["ok"]
    print(f"\n{processes} x {writes} writes in {elapsed:.1f}s")
