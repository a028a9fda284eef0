"""One adaptive concurrency limit per provider, shared by every member of a run.

Twelve members hitting one provider at once trip its rate limit; a fixed cap is either
too low for a fast provider or too high for a slow one. So the limit adapts like TCP's
congestion window: each success adds `1/limit` (about +1 per window of calls), and a
window with 429s in it halves the limit once. Waiters queue in order, so no member starves.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


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
