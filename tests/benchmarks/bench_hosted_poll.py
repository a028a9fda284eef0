"""Benchmark: what one wake of a hosted run's screen costs now that it reads the run's
files (`HostedSource.poll`: lifecycle events, transcripts, run state) instead of the
supervisor's memory.

    .venv/bin/python tests/benchmarks/bench_hosted_poll.py

The six-member scene of the app tests (`support.app.play_six`, written to disk the
way the real run writes it), then 300 rounds of: a poll with nothing new, one more
answer of member-1 (transcript line, heartbeat, status lines), a poll that reads it.
Reported: the median of each kind of poll. The bridge wakes the screen at most ~10
times a second, so a poll's median times 10 is the screen's reading cost per second.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.app import FakeSupervisor, play_six

from horde_tui.view.source import HostedSource

ROUNDS = 300


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fake = FakeSupervisor(Path(tmp))
        source = HostedSource(fake)
        play_six(fake)
        source.poll()
        idle: list[float] = []
        grown: list[float] = []
        for i in range(ROUNDS):
            start = time.perf_counter()
            source.poll()
            idle.append(time.perf_counter() - start)
            fake.tool("member-1", 150 + i, "bash", "bash: ls")
            start = time.perf_counter()
            source.poll()
            grown.append(time.perf_counter() - start)
        source.close()
    print(
        f"hosted poll, nothing new: median {statistics.median(idle) * 1e6:.0f} us; "
        f"after one answer: median {statistics.median(grown) * 1e6:.0f} us ({ROUNDS} rounds)"
    )


if __name__ == "__main__":
    main()
