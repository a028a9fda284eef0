"""The one cross-process write lock, `.horde/.lock`.

filelock gives us an OS-level lock that is released when the holder dies (even on
SIGKILL), so a crashed writer can never wedge the horde. We add a holder note so a
timeout can say *who* is holding the lock instead of just "timed out".

`HORDE_LOCK_TRACE=<file>` appends one line per release (pid, actor, how long the lock was
waited for and held), so a test or benchmark can see the hold time of a separate process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from filelock import FileLock, Timeout

from horde_tui.store.paths import HordePaths

DEFAULT_LOCK_TIMEOUT_S = 10.0


class LockTimeoutError(RuntimeError):
    """The `.horde/.lock` could not be taken in time; the message names the holder."""


def lock_timeout_s() -> float:
    """`HORDE_LOCK_TIMEOUT_S` or the default; a bad value falls back to the default."""
    try:
        return float(os.environ.get("HORDE_LOCK_TIMEOUT_S", DEFAULT_LOCK_TIMEOUT_S))
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT_S


def _trace(actor: str, waited: float, held: float) -> None:
    """One `HORDE_LOCK_TRACE` line; tracing is a debugging aid and never fails a write."""
    path = os.environ.get("HORDE_LOCK_TRACE")
    if not path:
        return
    line = (
        f"pid={os.getpid()} actor={actor} waited_ms={waited * 1000:.3f} held_ms={held * 1000:.3f}\n"
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


class HordeLock:
    """A reusable handle on `.horde/.lock` for one process."""

    def __init__(self, paths: HordePaths, actor: str) -> None:
        self._paths = paths
        self._actor = actor
        self._lock = FileLock(str(paths.lock), thread_local=False)

    @contextmanager
    def held(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the body; raise `LockTimeoutError` naming the holder."""
        wait = lock_timeout_s() if timeout is None else timeout
        asked = time.perf_counter()
        try:
            self._lock.acquire(timeout=wait, poll_interval=0.002)
        except Timeout:
            raise LockTimeoutError(self._timeout_message(wait)) from None
        got = time.perf_counter()
        try:
            self._write_holder()
            yield
        finally:
            self._lock.release()
            _trace(self._actor, got - asked, time.perf_counter() - got)

    def _write_holder(self) -> None:
        note = f"pid={os.getpid()} actor={self._actor} since={time.time():.3f}\n"
        try:
            fd = os.open(self._paths.lock_holder, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, note.encode())
            finally:
                os.close(fd)
        except OSError:
            pass  # the note is a courtesy for error messages, never a reason to fail a write

    def _timeout_message(self, wait: float) -> str:
        try:
            holder = self._paths.lock_holder.read_text().strip() or "unknown"
        except OSError:
            holder = "unknown"
        return (
            f"refused: could not take {self._paths.lock} within {wait:g}s "
            f"(held by {holder}); retry shortly, or end that process if it is stuck"
        )
