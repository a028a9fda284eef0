"""Benchmark: what sharing the provider limit through files costs a gateway per call.

    python tests/benchmarks/bench_shared_limit.py [--calls 2000] [--repeat 5]

One uncontended call through the limiter as the gateway makes it (take a slot, number
the request, report success), with the in-process `AdaptiveLimiter` and with the
`SharedLimiter` an eval's parallel runs use (`flock`ed files in a folder). Reported: the
median over `--repeat` rounds of the mean time per call. A model call takes seconds, so
the target is a small fraction of a millisecond.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from horde_tui.gateway.limiter import AdaptiveLimiter, SharedLimiter


async def per_call_us(limiter: AdaptiveLimiter, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        async with limiter.slot():
            limiter.sent()
            limiter.succeeded()
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shared-limit-") as folder:
        kinds: dict[str, Callable[[], AdaptiveLimiter]] = {
            "AdaptiveLimiter (one gateway)": AdaptiveLimiter,
            "SharedLimiter (a folder)": lambda: SharedLimiter(Path(folder)),
        }
        for name, make in kinds.items():
            rounds = [asyncio.run(per_call_us(make(), args.calls)) for _ in range(args.repeat)]
            print(f"{name}: median {statistics.median(rounds):.1f} us per call")


if __name__ == "__main__":
    main()
