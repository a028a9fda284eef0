"""Benchmark: the concurrency-and-kill trial at full size, with its figures.

12 writer processes (tests/helpers/writer.py) on one `.horde/`, random SIGKILLs (every
other one aimed at a writer caught holding `.lock`), each killed writer restarted to
retry its first unacknowledged write with the same `requestId`. Afterwards the files
alone are judged (tests/helpers/killtrial.py): every acknowledged write present exactly
once, nothing written twice, ids, seq and E# gapless, projections equal to a fresh fold.

    python tests/benchmarks/bench_kill.py                   # 12 x 200 writes, 100 kills
    python tests/benchmarks/bench_kill.py --writes 50 --kills 30 --seeds 1

Prints one line of figures per seed (writes, kills, retries, replayed, torn cuts, lost,
doubled, seconds) and the totals; exits 1 if any write was lost or doubled.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers import killtrial


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=12)
    ap.add_argument("--writes", type=int, default=200, help="writes per writer")
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3, help="trials, seeds 1..N")
    args = ap.parse_args()
    total = killtrial.Figures(writers=args.writers)
    failed = False
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory(prefix="bench-kill-") as work:
            try:
                fig = killtrial.run(
                    Path(work),
                    writers=args.writers,
                    writes=args.writes,
                    kills=args.kills,
                    seed=seed,
                    timeout_s=3600,
                )
            except AssertionError as exc:
                print(f"seed {seed}: FAILED: {exc}", flush=True)
                failed = True
                continue
        print(f"seed {seed}: {fig.line()}", flush=True)
        for name in ("writes", "kills", "retries", "replayed", "torn_cuts", "lost", "doubled"):
            setattr(total, name, getattr(total, name) + getattr(fig, name))
        total.seconds += fig.seconds
    print(f"total: {total.line()}")
    return 1 if failed or total.lost or total.doubled else 0


if __name__ == "__main__":
    sys.exit(main())
