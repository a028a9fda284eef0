"""One adaptive concurrency limit per provider, shared by every member of a run.

Twelve members hitting one provider at once trip its rate limit; a fixed cap is either
too low for a fast provider or too high for a slow one. So the limit adapts like TCP's
congestion window: each success adds `1/limit` (about +1 per window of calls), and a
window with 429s in it halves the limit once. Waiters queue in order, so no member starves.
Gateways of runs started apart can share one limit through files (`SharedLimiter`);
an eval's runs need not: they share one gateway (`--shared`), hence its limiters.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

SHARED_LIMIT_ENV = "HORDE_SHARED_LIMIT_DIR"
"""A folder through which the gateways of several runs keep one limit per provider
(`SharedLimiter`), for runs started apart (`horde-tui eval` shares one gateway instead)."""
SLOT_POLL_S = 0.025
"""How often a call waiting for a shared slot looks again."""


class AdaptiveLimiter:
    """Additive-increase, multiplicative-decrease concurrency limit, one decrease per window.

    Twelve calls in flight when a provider starts refusing all get their 429 at about the
    same moment. They report one congestion event, not twelve: halving once per 429 would
    take a limit of 12 to the floor in four replies, and climbing back to 12 takes about
    70 successful calls. So decreases follow TCP NewReno's rule (RFC 6582, the `recover` point): every
    provider request is numbered when it is sent (`sent()`); a decrease remembers the
    last number sent so far, and a 429 for a request numbered at or below it is ignored,
    since that request was already in flight when the limit was cut and says nothing
    about the lowered limit. A request sent after the cut, including a retry of a
    refused call, is a new signal, so a provider that keeps refusing still takes the
    limit to its floor, one halving per round trip.
    """

    def __init__(self, initial: float = 4.0, minimum: float = 1.0, maximum: float = 32.0) -> None:
        self.limit = max(minimum, min(initial, maximum))
        self.minimum = minimum
        self.maximum = maximum
        self.in_flight = 0
        self.peak_in_flight = 0
        self.decreases = 0
        self._sent = 0
        self._recover = 0
        """The last request number sent when the limit was last cut (NewReno's `recover`)."""
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _capacity(self) -> int:
        return max(1, int(self.limit))

    def would_wait(self) -> bool:
        """Whether a call asking for a slot now would queue (its member is then held
        back by the provider's limit, which the gateway notes for the member's readers)."""
        return self.in_flight >= self._capacity() or bool(self._waiters)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one concurrent call for the body."""
        if self.in_flight >= self._capacity() or self._waiters:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    # We were handed a slot but are leaving: pass it on.
                    self.in_flight -= 1
                    self._wake()
                raise
        else:
            self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            yield
        finally:
            self.in_flight -= 1
            self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self._capacity():
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)

    def succeeded(self) -> None:
        self.limit = min(self.maximum, self.limit + 1.0 / self.limit)
        self._wake()

    def sent(self) -> int:
        """Number a provider request as it goes out; pass the number to `rate_limited`."""
        self._sent += 1
        return self._sent

    def rate_limited(self, request: int) -> bool:
        """A 429 for request number `request`; True when it cut the limit (see the class)."""
        if request <= self._recover:
            return False
        self.limit = max(self.minimum, self.limit / 2.0)
        self._recover = self._sent
        self.decreases += 1
        return True

    def snapshot(self) -> dict[str, float | int]:
        """The limit as `/v1/usage` reports it, so a run (or a test) can see it adapt."""
        return {
            "limit": round(self.limit, 3),
            "in_flight": self.in_flight,
            "peak_in_flight": self.peak_in_flight,
            "waiting": len(self._waiters),
            "decreases": self.decreases,
        }


class SharedLimiter(AdaptiveLimiter):
    """The same limit, kept in a folder that the gateways of several runs open.

    Several runs may run at once, each with its own gateway (usage, cost and budget
    stay the run's), against one provider whose rate limit counts them all; a limit per
    gateway would let P runs put P times the calls in flight, each learning of 429s alone.
    So their limiters keep one state: the limit and NewReno's request numbers live in
    `limit.json`, read and rewritten under `flock` (held for microseconds, so taken
    blocking), and each call in flight holds the lock of one of the files `slot-0` ...
    `slot-{limit-1}`. A slot's lock is tried without blocking and retried every
    `SLOT_POLL_S` from the event loop, so waiting never blocks the gateway; the kernel
    drops a lock when its process dies, so a killed gateway keeps no slot. Within one
    gateway callers take turns in order (an `asyncio.Lock`), so no member starves;
    between gateways, the first to look after a slot is freed takes it.
    """

    def __init__(
        self, folder: Path, initial: float = 4.0, minimum: float = 1.0, maximum: float = 32.0
    ) -> None:
        super().__init__(initial, minimum, maximum)
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._turn = asyncio.Lock()
        self._waiting = 0
        with self._shared(write=True):
            pass  # the first gateway writes the initial state; later ones read it

    @contextmanager
    def _shared(self, write: bool = False) -> Iterator[None]:
        """Load the shared state into this limiter for the body, under the state's lock
        (shared to read, exclusive to `write` it back after the body)."""
        fd = os.open(self.folder / "limit.json", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
            try:
                state = json.loads(os.pread(fd, 4096, 0))
                self.limit = max(self.minimum, min(float(state["limit"]), self.maximum))
                self._sent, self._recover = int(state["sent"]), int(state["recover"])
                self.decreases = int(state["decreases"])
            except (ValueError, KeyError, TypeError):
                pass  # a new file (or one a killed writer cut short): this limiter's state
            yield
            if write:
                state = {"limit": self.limit, "sent": self._sent, "recover": self._recover}
                data = json.dumps({**state, "decreases": self.decreases}).encode()
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)  # closing drops the lock

    async def _take(self) -> int:
        """A locked slot file below the shared limit (its descriptor), once one is free."""
        while True:
            with self._shared():
                capacity = self._capacity()
            for n in range(capacity):
                fd = os.open(
                    self.folder / f"slot-{n}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
                )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd
            await asyncio.sleep(SLOT_POLL_S)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one concurrent call, counted against every gateway sharing the folder."""
        self._waiting += 1
        try:
            async with self._turn:
                fd = await self._take()
        finally:
            self._waiting -= 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            yield
        finally:
            self.in_flight -= 1
            os.close(fd)  # frees the slot

    def would_wait(self) -> bool:
        """Only this gateway's queue is known without taking a slot file's lock."""
        return self._waiting > 0

    def succeeded(self) -> None:
        with self._shared(write=True):
            super().succeeded()

    def sent(self) -> int:
        with self._shared(write=True):
            return super().sent()

    def rate_limited(self, request: int) -> bool:
        with self._shared(write=True):
            return super().rate_limited(request)

    def snapshot(self) -> dict[str, float | int]:
        """The shared limit and cuts; the calls in flight and waiting are this gateway's."""
        with self._shared():
            return {**super().snapshot(), "waiting": self._waiting}


class LimiterPool:
    """One `AdaptiveLimiter` per provider key (e.g. `openai@https://api...`); with a
    `shared` folder, one `SharedLimiter` per provider, in a sub-folder named by the key."""

    def __init__(
        self, initial: float = 4.0, maximum: float = 32.0, shared: Path | None = None
    ) -> None:
        self._initial = initial
        self._maximum = maximum
        self._shared = shared
        self._limiters: dict[str, AdaptiveLimiter] = {}

    def for_provider(self, key: str) -> AdaptiveLimiter:
        limiter = self._limiters.get(key)
        if limiter is None:
            if self._shared is None:
                limiter = AdaptiveLimiter(self._initial, maximum=self._maximum)
            else:
                folder = self._shared / hashlib.sha256(key.encode()).hexdigest()[:16]
                limiter = SharedLimiter(folder, self._initial, maximum=self._maximum)
            self._limiters[key] = limiter
        return limiter

    def snapshot(self) -> dict[str, dict[str, float | int]]:
        return {key: limiter.snapshot() for key, limiter in sorted(self._limiters.items())}
