"""The gateway's adaptive concurrency limit (AIMD), driven directly with asyncio.

Twelve members share one limiter per provider, so these tests pin the properties a run
depends on: the cap holds, it grows on success and halves once per window of 429s,
waiters are admitted in arrival order, and a member that gives up waiting never keeps a
slot.
"""

from __future__ import annotations

import asyncio

import pytest

from horde_tui.gateway.limiter import AdaptiveLimiter, LimiterPool


async def settle() -> None:
    """Let every ready task run until it blocks again (no wall-clock sleeps)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def holder(
    limiter: AdaptiveLimiter, name: str, release: asyncio.Event, admitted: list[str]
) -> None:
    async with limiter.slot():
        admitted.append(name)
        await release.wait()


async def test_never_more_than_int_limit_in_flight() -> None:
    limiter = AdaptiveLimiter(initial=3.7)
    gates = [asyncio.Event() for _ in range(10)]
    admitted: list[str] = []
    tasks = [asyncio.create_task(holder(limiter, str(i), gates[i], admitted)) for i in range(10)]
    await settle()
    assert admitted == ["0", "1", "2"]
    assert limiter.in_flight == 3
    # Release one at a time: each release admits exactly one waiter.
    for i in range(7):
        gates[i].set()
        await settle()
        assert limiter.in_flight == 3
        assert len(admitted) == 4 + i
    for gate in gates:
        gate.set()
    await asyncio.gather(*tasks)
    assert limiter.in_flight == 0
    assert limiter.peak_in_flight == 3


async def test_additive_increase_on_success_is_one_per_window() -> None:
    limiter = AdaptiveLimiter(initial=4.0, maximum=32.0)
    limiter.succeeded()
    assert limiter.limit == pytest.approx(4.25)
    # About one window of successes raises the capacity by one.
    while limiter.limit < 5.0:
        limiter.succeeded()
    assert 5.0 <= limiter.limit < 5.25
    for _ in range(10_000):
        limiter.succeeded()
    assert limiter.limit == 32.0


async def test_success_admits_a_waiter_when_the_capacity_grows() -> None:
    limiter = AdaptiveLimiter(initial=1.9)
    release = asyncio.Event()
    admitted: list[str] = []
    tasks = [asyncio.create_task(holder(limiter, n, release, admitted)) for n in "ab"]
    await settle()
    assert admitted == ["a"]
    limiter.succeeded()  # 1.9 + 1/1.9 > 2
    await settle()
    assert admitted == ["a", "b"]
    release.set()
    await asyncio.gather(*tasks)


async def test_sequential_429s_halve_down_to_the_minimum() -> None:
    """Each request sent after the previous cut is a new signal: one halving each."""
    limiter = AdaptiveLimiter(initial=16.0, minimum=1.0)
    assert limiter.rate_limited(limiter.sent()) is True
    assert limiter.limit == 8.0
    assert limiter.rate_limited(limiter.sent()) is True
    assert limiter.limit == 4.0
    for _ in range(10):
        limiter.rate_limited(limiter.sent())
    assert limiter.limit == 1.0
    assert limiter.decreases == 12
    # At the minimum one call still goes through: the capacity never reaches zero.
    async with limiter.slot():
        assert limiter.in_flight == 1


async def test_twelve_simultaneous_429s_halve_the_limit_once() -> None:
    limiter = AdaptiveLimiter(initial=12.0, maximum=32.0)
    requests = [limiter.sent() for _ in range(12)]
    cuts = [limiter.rate_limited(n) for n in requests]
    assert cuts == [True] + [False] * 11
    assert limiter.limit == 6.0 and limiter.decreases == 1
    # Their retries go out after the cut: they test the lowered limit, and a burst of
    # 429s among them is the next window's one decrease.
    retries = [limiter.sent() for _ in range(12)]
    assert [limiter.rate_limited(n) for n in retries] == [True] + [False] * 11
    assert limiter.limit == 3.0 and limiter.decreases == 2


async def test_a_late_429_from_before_the_cut_is_ignored_but_a_new_request_counts() -> None:
    """The order replies arrive in does not matter, only when each request was sent."""
    limiter = AdaptiveLimiter(initial=8.0)
    early, late = limiter.sent(), limiter.sent()
    assert limiter.rate_limited(late) is True
    assert limiter.limit == 4.0
    after_cut = limiter.sent()
    assert limiter.rate_limited(early) is False, "sent before the cut: same window"
    assert limiter.limit == 4.0
    assert limiter.rate_limited(after_cut) is True
    assert limiter.limit == 2.0
    assert limiter.snapshot()["decreases"] == 2


async def test_a_lowered_limit_holds_back_new_calls_until_enough_finish() -> None:
    limiter = AdaptiveLimiter(initial=4.0)
    gates = [asyncio.Event() for _ in range(5)]
    admitted: list[str] = []
    tasks = [asyncio.create_task(holder(limiter, str(i), gates[i], admitted)) for i in range(5)]
    await settle()
    assert admitted == ["0", "1", "2", "3"]
    assert limiter.rate_limited(limiter.sent())  # 4 -> 2 while four are in flight
    gates[0].set()
    gates[1].set()
    await settle()
    assert admitted == ["0", "1", "2", "3"], "in flight (2) is not below the new limit (2)"
    gates[2].set()
    await settle()
    assert admitted == ["0", "1", "2", "3", "4"]
    for gate in gates:
        gate.set()
    await asyncio.gather(*tasks)


async def test_waiters_are_admitted_in_arrival_order() -> None:
    limiter = AdaptiveLimiter(initial=1.0)
    first = asyncio.Event()
    admitted: list[str] = []
    running = asyncio.create_task(holder(limiter, "first", first, admitted))
    await settle()
    release = asyncio.Event()
    names = [f"w{i}" for i in range(8)]
    waiters = []
    for name in names:
        waiters.append(asyncio.create_task(holder(limiter, name, release, admitted)))
        await settle()  # fixes the arrival order
    release.set()
    first.set()
    await asyncio.gather(running, *waiters)
    assert admitted == ["first", *names]


async def test_a_newcomer_does_not_overtake_queued_waiters() -> None:
    """A slot freed while others wait goes to the queue's head, not to a fresh caller."""
    limiter = AdaptiveLimiter(initial=1.0)
    gate = asyncio.Event()
    admitted: list[str] = []
    running = asyncio.create_task(holder(limiter, "running", gate, admitted))
    await settle()
    queued = asyncio.create_task(holder(limiter, "queued", asyncio.Event(), admitted))
    await settle()
    gate.set()
    # The newcomer starts in the same loop turn as the release, before `queued` resumes.
    newcomer = asyncio.create_task(holder(limiter, "newcomer", asyncio.Event(), admitted))
    await settle()
    assert admitted == ["running", "queued"]
    for task in (queued, newcomer):
        task.cancel()
    await asyncio.gather(running, queued, newcomer, return_exceptions=True)
    assert limiter.in_flight == 0


async def test_a_cancelled_waiter_leaves_the_queue_without_a_slot() -> None:
    limiter = AdaptiveLimiter(initial=1.0)
    gate = asyncio.Event()
    admitted: list[str] = []
    running = asyncio.create_task(holder(limiter, "running", gate, admitted))
    await settle()
    quitter = asyncio.create_task(holder(limiter, "quitter", asyncio.Event(), admitted))
    after_gate = asyncio.Event()
    after = asyncio.create_task(holder(limiter, "after", after_gate, admitted))
    await settle()
    quitter.cancel()
    await settle()
    assert quitter.cancelled()
    assert limiter.in_flight == 1
    gate.set()
    await settle()
    assert admitted == ["running", "after"]
    after_gate.set()
    await asyncio.gather(running, after)
    assert limiter.in_flight == 0
    async with limiter.slot():  # the slot is free again
        assert limiter.in_flight == 1


async def test_a_waiter_cancelled_after_being_handed_a_slot_passes_it_on() -> None:
    """The race: the slot is granted, then the waiter is cancelled before it resumes."""
    limiter = AdaptiveLimiter(initial=1.0)
    held = limiter.slot()
    await held.__aenter__()
    admitted: list[str] = []
    quitter = asyncio.create_task(holder(limiter, "quitter", asyncio.Event(), admitted))
    await settle()
    next_gate = asyncio.Event()
    successor = asyncio.create_task(holder(limiter, "next", next_gate, admitted))
    await settle()
    # Releasing does not suspend: the slot is handed to `quitter`, which has not resumed.
    await held.__aexit__(None, None, None)
    assert limiter.in_flight == 1 and admitted == []
    quitter.cancel()
    await settle()
    assert quitter.cancelled()
    assert admitted == ["next"]
    assert limiter.in_flight == 1
    next_gate.set()
    await successor
    assert limiter.in_flight == 0


async def test_an_error_in_the_body_releases_the_slot() -> None:
    limiter = AdaptiveLimiter(initial=1.0)
    with pytest.raises(RuntimeError):
        async with limiter.slot():
            raise RuntimeError("provider call failed")
    assert limiter.in_flight == 0


def test_pool_gives_one_limiter_per_provider_key() -> None:
    pool = LimiterPool(initial=2.0, maximum=8.0)
    openai = pool.for_provider("openai@https://api.example")
    assert pool.for_provider("openai@https://api.example") is openai
    other = pool.for_provider("openai@http://127.0.0.1:9/v1")
    assert other is not openai
    openai.rate_limited(openai.sent())
    assert other.limit == 2.0 and openai.limit == 1.0
    # Request numbers are per provider: the other's first request is a signal of its own.
    assert other.rate_limited(other.sent()) and other.limit == 1.0
    assert (openai.maximum, other.maximum) == (8.0, 8.0)
