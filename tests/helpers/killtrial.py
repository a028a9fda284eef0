"""The concurrency-and-kill trial: many writer processes, random SIGKILLs, retries.

`run(...)` starts WRITERS `writer.py` processes on one `.horde/` and SIGKILLs one at
random moments: every other kill picks a random live writer (wherever it is), the others
a writer caught holding `.lock` (inside a transaction, where a kill can fall between
the ledger append and the acknowledgement). It
restarts each killed writer with `--resume`: it sends its first unacknowledged write
again with the same `requestId`, which the killed one may already have written. When
every writer has acknowledged all its writes, the files alone are judged (`judge`):
every acknowledged write present exactly once, nothing written twice, ids and seq and
E# gapless, projections equal to a fresh fold, no leftovers.

Used at a small size by tests/unit/store/test_store_killed_writers.py and at full size by
tests/benchmarks/bench_kill.py, which prints the figures.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

WRITER = Path(__file__).parent / "writer.py"


@dataclass
class Figures:
    """What one trial did and found."""

    writers: int = 0
    writes: int = 0
    """Acknowledged writes (every writer's ACKS file)."""
    kills: int = 0
    retries: int = 0
    """Restarted writers that sent their first unacknowledged write again."""
    replayed: int = 0
    """Retries the killed writer had already written: answered from the first write."""
    torn_cuts: int = 0
    """Torn ledger or event tails the next writer cut (`torn-tail` events)."""
    lost: int = 0
    doubled: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"writers={self.writers} writes={self.writes} kills={self.kills} "
            f"retries={self.retries} replayed={self.replayed} torn_cuts={self.torn_cuts} "
            f"lost={self.lost} doubled={self.doubled} seconds={self.seconds:.1f}"
        )


def _start(
    root: Path, n: int, writes: int, acks: Path, resume: bool, pace_ms: int = 0
) -> subprocess.Popen:
    cmd = [sys.executable, str(WRITER), str(root), f"member-{n}", f"k{n}", str(writes), str(acks)]
    cmd += ["--pace-ms", str(pace_ms)]
    env = {**os.environ, "HORDE_LOCK_TIMEOUT_S": "60"}
    return subprocess.Popen(
        [*cmd, *(["--resume"] if resume else [])],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(
    work: Path,
    *,
    writers: int = 12,
    writes: int = 30,
    kills: int = 12,
    seed: int = 20261201,
    gap_s: tuple[float, float] = (0.02, 0.25),
    timeout_s: float = 300.0,
    pace_ms: int = 0,
) -> Figures:
    """Run the trial in `work` and judge it; return the figures (asserts on a failure).

    `pace_ms` spaces each writer's writes, so a small trial's writers are still writing
    when the kills come: unpaced, on an idle machine, 12 writers finish 8 writes each
    before the first kill is due."""
    rng = random.Random(seed)
    root = work / ".horde"
    HordeStore(root, "parent").ensure_run("r1")
    figures = Figures(writers=writers)
    acks = {n: work / f"acks-{n}.jsonl" for n in range(1, writers + 1)}
    procs = {n: _start(root, n, writes, acks[n], False, pace_ms) for n in acks}
    at_start = dict.fromkeys(acks, 0)
    started = time.monotonic()
    deadline = started + timeout_s
    try:
        while procs and time.monotonic() < deadline:
            time.sleep(rng.uniform(*gap_s))
            for n, proc in list(procs.items()):
                if proc.poll() is not None:
                    out, err = proc.communicate()
                    assert proc.returncode == 0, f"member-{n} exited {proc.returncode}: {err}"
                    _count_resume(figures, out)
                    del procs[n]
            # Only writers past their start-up (one write acknowledged since): a kill
            # while Python imports tests nothing.
            ready = sorted(n for n in procs if _acked(acks[n]) > at_start[n])
            if figures.kills < kills and ready:
                n = rng.choice(ready)
                if figures.kills % 2 == 0:
                    n = _in_transaction(root, {m: procs[m] for m in ready}) or n
                proc = procs[n]
                os.kill(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate(timeout=30)
                _count_resume(figures, out)
                if proc.returncode == -signal.SIGKILL:
                    figures.kills += 1
                    figures.retries += 1
                    at_start[n] = _acked(acks[n])
                    procs[n] = _start(root, n, writes, acks[n], True, pace_ms)
                else:
                    assert proc.returncode == 0, f"member-{n} exited {proc.returncode}"
                    del procs[n]
        assert not procs, f"writers still running after {timeout_s:.0f}s: {sorted(procs)}"
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=30)
    figures.seconds = time.monotonic() - started
    judge(root, [acks[n] for n in sorted(acks)], writes, figures)
    return figures


def _acked(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _in_transaction(root: Path, procs: dict[int, subprocess.Popen]) -> int | None:
    """Wait (up to 0.5 s) for one of `procs` to hold `.lock`; return it, or None.

    A non-blocking flock probe says the lock is held; the holder note says by whom.
    """
    deadline = time.monotonic() + 0.5
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    m = re.search(r"pid=(\d+)", (root / ".lock.holder").read_text())
                except OSError:
                    m = None
                pid = int(m.group(1)) if m else -1
                n = next((n for n, proc in procs.items() if proc.pid == pid), None)
                if n is not None:
                    return n
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
            time.sleep(0.0005)
    finally:
        os.close(fd)
    return None


def _count_resume(figures: Figures, out: str) -> None:
    for line in out.splitlines():
        if line.startswith("resumed ") and line.endswith(" replayed"):
            figures.replayed += 1


def judge(root: Path, ack_files: list[Path], writes: int, figures: Figures) -> None:
    """Every acknowledged write exactly once, nothing doubled, everything consistent."""
    all_acks: list[dict[str, Any]] = []
    for path in ack_files:
        mine = verify.read_acks(path)
        assert len(mine) == writes, f"{path.name}: {len(mine)} of {writes} writes acknowledged"
        all_acks += mine
    figures.writes = len(all_acks)
    # A new writer first: it settles what the last kill left (torn tail, stale projections).
    final = run_action(HordeStore(root, "judge"), {"action": "post", "text": "judged"}, run="r1")
    assert final.ok, final.text
    records, state = verify.fresh_state(root)
    texts = Counter(
        (r["op"], r["text"])
        for r in records
        if r["op"] in ("idea.add", "fact.add", "finding.add", "board.post")
    )
    figures.doubled = sum(n - 1 for n in texts.values() if n > 1)
    by_key = {(a["action"], a["key"]) for a in all_acks if a["action"] != "claim"}
    op = {"idea": "idea.add", "fact": "fact.add", "finding": "finding.add", "post": "board.post"}
    figures.lost = sum(
        1 for action, key in by_key if action in op and (op[action], key) not in texts
    )
    events = verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")
    figures.torn_cuts = sum(1 for e in events if e.get("type") == "torn-tail")
    assert figures.doubled == 0, f"{figures.doubled} writes are in the ledger twice"
    assert figures.lost == 0, f"{figures.lost} acknowledged writes are missing"
    verify.assert_seq_gapless(records)
    verify.assert_add_records_unique(records)
    verify.assert_acks_present(all_acks, records, state)
    verify.assert_ids_gapless(state)
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)
