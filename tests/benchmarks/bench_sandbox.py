"""Benchmark: what the bubblewrap sandbox adds to a member's shell command.

    python tests/benchmarks/bench_sandbox.py [--runs 50]

Runs `true` through `run_command` in a scratch project with a `.horde/` (so the read-only
bind and the token masks are part of it), without a sandbox and inside bwrap, and
prints the median and 90th percentile wall time of each and the median difference.
With slirp4netns here, bwrap runs twice: sharing the host's network (as on a machine
without slirp4netns) and with a network namespace of its own. The rows take turns.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from horde_tui.sandbox import shell
from horde_tui.sandbox.policy import SandboxPolicy, bwrap_problem, network_problem


def timed(work: Path, rows: dict[str, SandboxPolicy], runs: int) -> dict[str, list[float]]:
    """Each row's wall times, the rows taking turns (a load that changes meanwhile weighs
    on all alike). A row named "... host network" runs without slirp4netns's network."""
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(runs):
        for name, policy in rows.items():
            shell.private_network = _host if name.endswith("host network") else _own
            start = time.perf_counter()
            result = shell.run_command("true", work, sandbox=policy)
            times[name].append(time.perf_counter() - start)
            assert result.exit_code == 0, result.output
    shell.private_network = _own
    return {name: sorted(t) for name, t in times.items()}


_own = shell.private_network


def _host(policy: SandboxPolicy, mode: str) -> bool:
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem:
        print(f"no sandbox here: {problem}")
        return 1
    own = network_problem()
    if own:
        print(f"no network namespace of its own here: {own}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run in range(20):
            (work / ".horde" / "runs" / f"r{run}").mkdir(parents=True)
            (work / ".horde" / "runs" / f"r{run}" / "gateway.token").write_text("t\n")
        policy = SandboxPolicy(mode="bwrap", readonly=(work / ".horde",))
        rows = {"no sandbox": SandboxPolicy(mode="off"), "bwrap, host network": policy}
        if own is None:
            rows["bwrap, own network"] = policy
        times = timed(work, rows, args.runs)
    for name, row in times.items():
        p90 = row[int(len(row) * 0.9) - 1]
        print(f"{name:>19}: median {statistics.median(row) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms")
    medians = [statistics.median(row) * 1000 for row in times.values()]
    print(
        f"bwrap adds {medians[1] - medians[0]:.1f} ms a command "
        "(median; 20 runs' token files masked)"
    )
    if own is None:
        print(f"its own network (slirp4netns) adds {medians[2] - medians[1]:.1f} ms more (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
