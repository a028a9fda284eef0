"""Change notifications for the app: file watching, and bursts merged into few refreshes.

`Coalescer` is the app's one throttle and `PacedWake` the one loop that runs it: the
wakes from file changes (`watching.FileWatch`) and from the hosted supervisor's events
(`tui_bridge.TuiBridge`) both go through a `PacedWake`.

Twelve members writing at once produce hundreds of file events a second; the screen needs
at most ~10 repaints a second (DESIGN, "Read path for the UI"). `Coalescer` is the pure
rate limit (clock injected, so tests need no sleeping): notes merge until a refresh is
allowed, the way toolong lets a newer message replace a pending one. `watch_dir` is the
thin `watchfiles.awatch` wrapper the app runs in a worker; tests pass `enabled=False`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from watchfiles import Change, DefaultFilter, awatch

DEFAULT_RATE = 10.0
"""Refreshes per second at most."""
DEBOUNCE_MS = 300
"""How long watchfiles gathers changes into one set (100-300 ms keeps typing-speed
updates live without waking the app for every write)."""
_NOISE = frozenset(
    {".lock", ".lock.holder", ".projecting.lock", ".projected", ".ledger.checkpoint"}
)
"""Bookkeeping files that change on every write and show nothing."""


class Coalescer:
    """Merges change notes so refreshes happen at most `rate` times a second.

    The first note after a quiet spell may refresh at once (no added latency); notes that
    arrive within `1/rate` of a refresh wait for the interval to end and then go together.
    """

    def __init__(self, rate: float = DEFAULT_RATE, clock: Callable[[], float] = time.monotonic):
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.interval = 1.0 / rate
        self._clock = clock
        self._paths: set[Path] = set()
        self._pending = False
        self._last: float | None = None
        self.notes = 0
        """Notes taken in since the last refresh (for a "coalesced N changes" debug line)."""

    @property
    def pending(self) -> bool:
        return self._pending

    def note(self, paths: Iterable[Path | str] = ()) -> None:
        """Something changed (optionally: these paths)."""
        self._pending = True
        self.notes += 1
        self._paths.update(Path(p) for p in paths)

    def delay(self) -> float | None:
        """Seconds until a refresh is allowed (0: now), or None with nothing pending."""
        if not self._pending:
            return None
        if self._last is None:
            return 0.0
        return max(0.0, self._last + self.interval - self._clock())

    def take(self, force: bool = False) -> set[Path] | None:
        """If a refresh is due (or `force`: the last one before an end), start it: return
        the paths noted (maybe empty) and reset; else None (call again after `delay()`
        seconds)."""
        if not force and self.delay() != 0.0:
            return None
        paths, self._paths = self._paths, set()
        self._pending, self.notes = False, 0
        self._last = self._clock()
        return paths


class PacedWake:
    """Call `wake(paths)` on the running asyncio loop at most `rate` times a second.

    `note` on the loop's thread (the hosted supervisor and the watcher both run there);
    the first note after a quiet spell wakes on the next loop turn, later ones merge
    into the wake the `Coalescer` allows next. `flush` wakes now (the last one before an
    end)."""

    def __init__(
        self,
        wake: Callable[[set[Path]], None],
        rate: float = DEFAULT_RATE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wake = wake
        self._changes = Coalescer(rate, clock)
        self._timer: asyncio.Handle | None = None
        self.wakes = 0
        """How many wakes were made (tests check the pacing with it)."""

    def note(self, paths: Iterable[Path | str] = ()) -> None:
        self._changes.note(paths)
        if self._timer is None:
            self._schedule()

    def _schedule(self) -> None:
        loop, delay = asyncio.get_running_loop(), self._changes.delay()
        self._timer = loop.call_later(delay, self._due) if delay else loop.call_soon(self._due)

    def _due(self) -> None:
        self._timer = None
        paths = self._changes.take()
        if paths is None:  # not due yet by the clock
            self._schedule()
            return
        self.wakes += 1
        self._wake(paths)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._changes.pending:
            paths = self._changes.take(force=True)
            assert paths is not None
            self.wakes += 1
            self._wake(paths)


class HordeFilter(DefaultFilter):
    """watchfiles' default filter, minus the lock, its holder, the projection marker and
    atomic-write temp files: they change on every write and never need a repaint."""

    def __call__(self, change: Change, path: str) -> bool:
        name = os.path.basename(path)
        if name in _NOISE or name.endswith(".tmp"):
            return False
        return super().__call__(change, path)


async def watch_dir(
    path: Path | str,
    stop_event: asyncio.Event,
    *,
    debounce_ms: int = DEBOUNCE_MS,
    enabled: bool = True,
) -> AsyncIterator[set[Path]]:
    """Yield the set of changed paths under `path` (recursively) until `stop_event`.

    Stops within about 50 ms of `stop_event.set()`. With `enabled=False` nothing is
    watched: the generator just waits for `stop_event`, so tests stay deterministic.
    """
    if not enabled:
        await stop_event.wait()
        return
    async for changes in awatch(
        path,
        watch_filter=HordeFilter(),
        debounce=debounce_ms,
        step=50,
        stop_event=stop_event,
        recursive=True,
        ignore_permission_denied=True,
    ):
        yield {Path(p) for _change, p in changes}
