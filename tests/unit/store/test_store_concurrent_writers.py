"""12 real writer processes, 200 mixed writes each, on one `.horde/` through the real lock.

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

from support.paths import HELPERS

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

WRITER = HELPERS / "writer.py"
PROCESSES = 12
WRITES = 200


def test_twelve_processes_two_hundred_writes_each(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    env = {**os.environ, "HORDE_LOCK_TIMEOUT_S": "30"}
    procs = []
    started = time.monotonic()
    for n in range(1, PROCESSES + 1):
        acks = tmp_path / f"acks-{n}.jsonl"
        cmd = [
            sys.executable,
            str(WRITER),
            str(root),
            f"member-{n}",
            f"p{n}",
            str(WRITES),
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
    for n in range(1, PROCESSES + 1):
        mine = verify.read_acks(tmp_path / f"acks-{n}.jsonl")
        assert len(mine) == WRITES, f"member-{n} acknowledged {len(mine)} writes"
        acks += mine

    records, state = verify.fresh_state(root)
    verify.assert_seq_gapless(records)
    verify.assert_add_records_unique(records)
    verify.assert_acks_present(acks, records, state)
    counts = verify.assert_ids_gapless(state)
    # 200 writes = 33 full units of six + an idea and its claim.
    assert counts["ideas"] == PROCESSES * 34
    assert counts["findings"] == counts["facts"] == PROCESSES * 33
    assert len(state.posts) == PROCESSES * 33
    created = {a["id"] for a in acks if a["action"] in ("idea", "fact", "finding")}
    assert len(created) == PROCESSES * (34 + 33 + 33), "two acknowledgements share an id"

    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)

    # The writers really ran at the same time: the ledger interleaves them.
    actors = [r["actor"] for r in records if r["actor"].startswith("member-")]
    switches = sum(1 for x, y in itertools.pairwise(actors) if x != y)
    assert switches >= 100, f"only {switches} switches between writers: no real contention"

    events = verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")
    assert len(events) == 2 * PROCESSES * WRITES
    # Each transaction's intent and outcome are adjacent: nothing slipped in between.
    for intent, outcome in zip(events[::2], events[1::2], strict=True):
        assert (intent["type"], outcome["type"]) == ("intent", "outcome")
        assert intent["requestId"] == outcome["requestId"] and intent["actor"] == outcome["actor"]
        assert outcome["ok"]
    print(f"\n12 x 200 writes in {elapsed:.1f}s")
