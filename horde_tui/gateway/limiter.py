"""One adaptive concurrency limit per provider, shared by every member of a run.

Twelve members hitting one provider at once trip its rate limit; a fixed cap is either
too low for a fast provider or too high for a slow one. So the limit adapts like TCP's
congestion window: each success adds `1/limit` (about +1 per window of calls), each 429
halves it. Waiters queue in order, so no member starves.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class AdaptiveLimiter:
    """Additive-increase, multiplicative-decrease concurrency limit."""

    def __init__(self, initial: float = 4.0, minimum: float = 1.0, maximum: float = 32.0) -> None:
        self.limit = max(minimum, min(initial, maximum))
        self.minimum = minimum
        self.maximum = maximum
        self.in_flight = 0
        self.peak_in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def _capacity(self) -> int:
        return max(1, int(self.limit))

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

    def rate_limited(self) -> None:
        self.limit = max(self.minimum, self.limit / 2.0)

    def snapshot(self) -> dict[str, float | int]:
        """The limit as `/v1/usage` reports it, so a run (or a test) can see it adapt."""
        return {
            "limit": round(self.limit, 3),
            "in_flight": self.in_flight,
            "peak_in_flight": self.peak_in_flight,
            "waiting": len(self._waiters),
        }


class LimiterPool:
    """One `AdaptiveLimiter` per provider key (e.g. `openai@https://api...`)."""

    def __init__(self, initial: float = 4.0, maximum: float = 32.0) -> None:
        self._initial = initial
        self._maximum = maximum
        self._limiters: dict[str, AdaptiveLimiter] = {}

    def for_provider(self, key: str) -> AdaptiveLimiter:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = AdaptiveLimiter(self._initial, maximum=self._maximum)
        return limiter

    def snapshot(self) -> dict[str, dict[str, float | int]]:
        return {key: limiter.snapshot() for key, limiter in sorted(self._limiters.items())}
