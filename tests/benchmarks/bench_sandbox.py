"""Benchmark: what the bubblewrap sandbox adds to a member's shell command.

    python tests/benchmarks/bench_sandbox.py [--runs 50]

Runs `true` through `run_command` in a scratch project with a `.horde/` (so the read-only
bind and the token masks are part of it), without a sandbox and inside bwrap, and
prints the median and 90th percentile wall time of each and the median difference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from horde_tui.sandbox.policy import SandboxPolicy, bwrap_problem
from horde_tui.sandbox.shell import run_command


def timed(work: Path, policy: SandboxPolicy, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = run_command("true", work, sandbox=policy)
        times.append(time.perf_counter() - start)
        assert result.exit_code == 0, result.output
    return sorted(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem:
        print(f"no sandbox here: {problem}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run in range(20):
            (work / ".horde" / "runs" / f"r{run}").mkdir(parents=True)
            (work / ".horde" / "runs" / f"r{run}" / "gateway.token").write_text("t\n")
        readonly = (work / ".horde",)
        bare = timed(work, SandboxPolicy(mode="off"), args.runs)
        boxed = timed(work, SandboxPolicy(mode="bwrap", readonly=readonly), args.runs)
    for name, times in (("no sandbox", bare), ("bwrap", boxed)):
        p90 = times[int(len(times) * 0.9) - 1]
        print(
            f"{name:>10}: median {statistics.median(times) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms"
        )
    diff = (statistics.median(boxed) - statistics.median(bare)) * 1000
    print(f"bwrap adds {diff:.1f} ms a command (median; 20 runs' token files masked)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
