"""One provider limit for the gateways of parallel runs (`SharedLimiter`, a folder of
locked files): together they never hold more calls than the limit, a 429 that one of
them sees lowers the limit for all, and a gateway that is killed keeps no slot.

Two limiters on one folder are two gateways' views of it (each `flock` is its own open
file, so they exclude each other within a process as between processes); the kill is a
real process killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from horde_tui.gateway.limiter import SLOT_POLL_S, AdaptiveLimiter, LimiterPool, SharedLimiter


async def until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Poll `predicate` from the loop (the limiters poll their slots in real time)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return False


async def test_two_gateways_together_never_hold_more_than_the_shared_limit(
    tmp_path: Path,
) -> None:
    a, b = (SharedLimiter(tmp_path, initial=2.0, maximum=2.0) for _ in range(2))
    gates = {f"{n}{i}": asyncio.Event() for n in "ab" for i in range(3)}
    admitted: list[str] = []
    together: list[int] = []

    async def call(limiter: AdaptiveLimiter, name: str) -> None:
        async with limiter.slot():
            admitted.append(name)
            together.append(a.in_flight + b.in_flight)
            await gates[name].wait()

    tasks = [asyncio.create_task(call(a if n[0] == "a" else b, n)) for n in gates]
    assert await until(lambda: len(admitted) == 2)
    await asyncio.sleep(SLOT_POLL_S * 4)  # every waiter has looked again: still two
    assert len(admitted) == 2 and a.in_flight + b.in_flight == 2
    for n in range(3, 7):  # each call that ends lets exactly one more in
        gates[admitted[n - 3]].set()
        assert await until(lambda n=n: len(admitted) == n)
    for gate in gates.values():
        gate.set()
    await asyncio.gather(*tasks)
    assert max(together) == 2 and sorted(admitted) == sorted(gates)
    assert a.in_flight == b.in_flight == 0


def test_a_429_one_gateway_sees_lowers_the_limit_the_other_uses(tmp_path: Path) -> None:
    a = SharedLimiter(tmp_path, initial=8.0)
    b = SharedLimiter(tmp_path, initial=8.0)
    early = b.sent()  # in flight from b when a's 429 cuts the limit
    assert a.rate_limited(a.sent()) is True
    assert b.snapshot()["limit"] == 4.0
    assert b.rate_limited(early) is False  # NewReno's recover point is shared too
    assert b.rate_limited(b.sent()) is True
    assert a.snapshot()["limit"] == 2.0 and a.snapshot()["decreases"] == 2
    a.succeeded()
    assert b.snapshot()["limit"] == 2.5


def test_a_gateway_joining_later_starts_from_the_limit_learnt_so_far(tmp_path: Path) -> None:
    first = SharedLimiter(tmp_path, initial=4.0)
    first.rate_limited(first.sent())
    assert SharedLimiter(tmp_path, initial=4.0).snapshot()["limit"] == 2.0


HOLDER = """\
import asyncio, sys, time
from pathlib import Path
from horde_tui.gateway.limiter import SharedLimiter

async def main():
    async with SharedLimiter(Path(sys.argv[1]), initial=1.0, maximum=1.0).slot():
        print("held", flush=True)
        time.sleep(60)

asyncio.run(main())
"""


async def test_a_killed_gateway_keeps_no_slot(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        mine = SharedLimiter(tmp_path, initial=1.0, maximum=1.0)

        async def one_call() -> bool:
            async with mine.slot():
                return True

        with pytest.raises(TimeoutError):  # the only slot is the live process's
            await asyncio.wait_for(one_call(), SLOT_POLL_S * 8)
        proc.kill()
        proc.wait(10)
        assert await asyncio.wait_for(one_call(), 5)
        assert mine.in_flight == 0 and mine.snapshot()["waiting"] == 0
    finally:
        proc.kill()
        proc.wait(10)


def test_a_pool_with_a_folder_shares_each_provider_in_its_own_sub_folder(tmp_path: Path) -> None:
    one, two = LimiterPool(maximum=3, shared=tmp_path), LimiterPool(maximum=3, shared=tmp_path)
    openai = one.for_provider("openai@")
    assert isinstance(openai, SharedLimiter) and openai.maximum == 3
    openai.rate_limited(openai.sent())
    assert two.for_provider("openai@").snapshot()["limit"] == 1.5
    assert two.for_provider("anthropic@").snapshot()["limit"] == 3.0
    assert type(LimiterPool().for_provider("openai@")) is AdaptiveLimiter
