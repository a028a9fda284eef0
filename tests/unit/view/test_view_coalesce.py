"""`Coalescer` (with an injected clock) and `watch_dir` (real watchfiles, a temp dir)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from horde_tui.view.coalesce import Coalescer, HordeFilter, PacedWake, watch_dir


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_becomes_at_most_rate_refreshes_per_second():
    clock = Clock()
    c = Coalescer(rate=10, clock=clock)
    assert (c.delay(), c.take()) == (None, None)  # nothing pending

    c.note(["a"])
    assert c.delay() == 0.0  # the first change after a quiet spell goes at once
    assert c.take() == {Path("a")}

    refreshes = []
    for step in range(100):  # one change every 10 ms for one second
        clock.now = 100.0 + step * 0.01
        c.note([f"f{step % 3}"])
        taken = c.take()
        if taken is not None:
            refreshes.append((round(clock.now - 100.0, 2), sorted(str(p) for p in taken)))
    assert [t for t, _ in refreshes] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert refreshes[0][1] == ["f0", "f1", "f2"]  # ten notes merged into one refresh


def test_delay_says_when_to_come_back_and_notes_are_counted():
    clock = Clock()
    c = Coalescer(rate=4, clock=clock)
    c.note()
    assert c.take() == set()
    clock.now += 0.1
    c.note(["x"])
    c.note(["x"])
    assert c.pending and c.notes == 2
    assert c.delay() == pytest.approx(0.15)
    assert c.take() is None
    clock.now += 0.15
    assert c.take() == {Path("x")}
    assert (c.pending, c.notes, c.delay()) == (False, 0, None)


def test_a_forced_take_goes_now_and_paces_the_next():
    """The last wake before an end goes at once, and still counts as a refresh."""
    clock = Clock()
    c = Coalescer(rate=10, clock=clock)
    c.note(["a"])
    assert c.take() == {Path("a")}
    clock.now += 0.02
    c.note(["b"])
    assert c.take() is None
    assert c.take(force=True) == {Path("b")}
    c.note(["c"])
    assert c.delay() == pytest.approx(0.1)


def test_rate_must_be_positive():
    with pytest.raises(ValueError):
        Coalescer(rate=0)


async def test_paced_wake_calls_at_once_then_at_most_rate_times_a_second():
    """The one throttle both the file watcher and the hosted supervisor's bridge wake the
    app through: the first note after a quiet spell wakes on the next loop turn, a burst
    within one interval is one wake with every path, and `flush` wakes now."""
    clock = Clock()
    woken: list[set[Path]] = []
    pace = PacedWake(woken.append, rate=10, clock=clock)
    pace.note(["a"])
    await asyncio.sleep(0)
    assert woken == [{Path("a")}] and pace.wakes == 1
    for name in ("b", "c", "b"):
        pace.note([name])
    await asyncio.sleep(0.02)
    assert len(woken) == 1, "within the interval: the burst waits"
    clock.now += 0.1
    await asyncio.sleep(0.15)  # the timer fires once the interval is over (real time)
    assert woken[1:] == [{Path("b"), Path("c")}] and pace.wakes == 2
    pace.note(["d"])
    pace.flush()
    assert woken[-1] == {Path("d")} and pace.wakes == 3
    await asyncio.sleep(0.15)
    assert pace.wakes == 3, "a flushed wake does not fire again"
    pace.flush()
    assert pace.wakes == 3, "nothing noted: no wake"


def test_the_filter_drops_lock_and_temp_files():
    from watchfiles import Change

    f = HordeFilter()
    assert f(Change.modified, "/w/.horde/ledger.jsonl")
    assert not f(Change.modified, "/w/.horde/.lock")
    assert not f(Change.modified, "/w/.horde/.lock.holder")
    assert not f(Change.added, "/w/.horde/.IDEAS.md.123.tmp")
    assert not f(Change.modified, "/w/.horde/.ledger.checkpoint")
    assert not f(Change.modified, "/w/.horde/.projected")
    assert not f(Change.modified, "/w/.horde/.projecting.lock")
    assert not f(Change.added, "/w/.horde/.ledger.checkpoint.tmp")


async def test_watch_dir_sees_a_write_and_stops_promptly(tmp_path):
    stop = asyncio.Event()
    seen: list[set[Path]] = []

    async def consume() -> None:
        async for changes in watch_dir(tmp_path, stop, debounce_ms=100):
            seen.append(changes)

    task = asyncio.create_task(consume())
    target = tmp_path / "runs" / "r1" / "events.jsonl"
    target.parent.mkdir(parents=True)
    deadline = time.monotonic() + 10
    while not any(target in s for s in seen) and time.monotonic() < deadline:
        # write until the watcher (started in a thread) has seen one
        target.write_text(f"{time.monotonic()}\n")
        await asyncio.sleep(0.15)
    assert any(target in s for s in seen)

    started = time.monotonic()
    stop.set()
    await asyncio.wait_for(task, 2)
    assert time.monotonic() - started < 1.0


async def test_a_disabled_watch_yields_nothing_and_ends_with_the_stop_event(tmp_path):
    stop = asyncio.Event()
    seen = []

    async def consume() -> None:
        async for changes in watch_dir(tmp_path, stop, enabled=False):
            seen.append(changes)

    task = asyncio.create_task(consume())
    (tmp_path / "f").write_text("x")
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 1)
    assert seen == []
