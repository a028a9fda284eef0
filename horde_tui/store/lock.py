"""The one cross-process write lock, `.horde/.lock`.

An `flock` on `.horde/.lock`: the kernel releases it when the holder dies (even on
SIGKILL), so a crashed writer can never wedge the horde, and a waiter sleeps in the
kernel until the holder lets go, so the lock passes on at once. (Polling for it every
2 ms handed it over late and to whoever polled first: twelve writers managed a third of
one writer's throughput, with waits near a second.)

`flock` has no timeout, and interrupting it with a timer signal only works in the main
thread, so a contended wait blocks in a helper thread while the caller waits on an event
with the timeout. A wait that gives up is abandoned: the helper closes its own descriptor
the moment it gets the lock, so a timed-out caller never holds it behind its back.

We add a holder note so a timeout can say *who* is holding the lock instead of just
"timed out". `HORDE_LOCK_TRACE=<file>` appends one line per release (pid, actor, how long
the lock was waited for and held), so a test or benchmark can see the hold time of a
separate process.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from horde_tui.common import procfs
from horde_tui.store import identity
from horde_tui.store.paths import HordePaths, open_or_create

DEFAULT_LOCK_TIMEOUT_S = 10.0
WAITING_WORK_EVERY_S = 0.03
"""How often a waiter runs its `while_waiting` work (catching up on what the holder
appends), so that little is left to do once it holds the lock. Each run wakes a thread,
and twelve waiters on two cores pay for every wake (30 ms cost less CPU per write than
10 ms in an ad hoc count of the writers' CPU time; `bench_store.py` does not measure
CPU)."""
HOLDER_WIDTH = 160
"""Bytes of the holder note: every note is padded to this, so a shorter one overwrites a
longer one whole."""


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


class _Waiter:
    """A thread that blocks in `flock` for whoever waits, kept for the next wait.

    Starting a thread for every contended wait cost ~100 us of CPU and a scheduling
    round before the wait could begin, and twelve writers wait up to three times a
    write (`.lock`, `.projecting.lock`, a flush's mark). A waiter still blocked in an
    abandoned wait is busy, so the next wait takes another (or starts one).
    """

    _idle: ClassVar[list[_Waiter]] = []
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_BlockingWait] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="horde-lock-wait", daemon=True).start()

    @classmethod
    def take(cls) -> _Waiter:
        with cls._guard:
            if cls._idle:
                return cls._idle.pop()
        return cls()

    @classmethod
    def forget_all(cls) -> None:
        """In a forked child: the waiters' threads were not copied into it."""
        cls._idle = []
        cls._guard = threading.Lock()

    def wait_on(self, job: _BlockingWait) -> None:
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            self._jobs.get()._run()
            with _Waiter._guard:
                _Waiter._idle.append(self)


os.register_at_fork(after_in_child=_Waiter.forget_all)


class _BlockingWait:
    """One blocking `flock` on `fd` in a helper thread, which the caller may abandon.

    The descriptor belongs to the caller once the lock is taken in time, else to the
    helper, which closes it (dropping the lock if it got it late).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._done = threading.Event()
        self._guard = threading.Lock()
        self._abandoned = False
        self._error: OSError | None = None
        _Waiter.take().wait_on(self)

    def _run(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # sleeps in the kernel; the GIL is released
        except OSError as exc:
            self._error = exc
        with self._guard:
            if self._abandoned:
                os.close(self._fd)
            self._done.set()

    def taken(self, timeout: float, while_waiting: Callable[[], None] | None) -> bool:
        """Wait up to `timeout`, running `while_waiting` every few ms meanwhile; True if
        the lock is now held through `fd`."""
        deadline = time.monotonic() + timeout
        try:
            if while_waiting is None:
                self._done.wait(timeout)
            else:
                while not self._done.wait(min(WAITING_WORK_EVERY_S, deadline - time.monotonic())):
                    if time.monotonic() >= deadline:
                        break
                    while_waiting()
        except BaseException:  # e.g. KeyboardInterrupt: never keep a lock nobody will release
            if self._abandon():
                os.close(self._fd)
            raise
        if not self._abandon():
            return False
        if self._error is not None:
            os.close(self._fd)
            raise self._error
        return True

    def _abandon(self) -> bool:
        """Give the descriptor to the helper unless it is done; True if it is done."""
        with self._guard:
            if self._done.is_set():
                return True
            self._abandoned = True
            return False


def _acquire(
    path: str, timeout: float, while_waiting: Callable[[], None] | None = None
) -> int | None:
    """A descriptor of `path` holding its exclusive `flock`, or None after `timeout`.

    Every attempt opens its own descriptor: `flock` belongs to the open file, so an
    abandoned wait still blocked on its descriptor cannot lend the lock to a later one.
    """
    fd = open_or_create(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        pass
    except BaseException:
        os.close(fd)
        raise
    if timeout <= 0:
        os.close(fd)
        return None
    return fd if _BlockingWait(fd).taken(timeout, while_waiting) else None


_held = 0
"""Horde locks (`.lock`, `.projecting.lock`) this process holds now."""
_after_release: list[Callable[[], None]] = []


def when_unlocked(action: Callable[[], None]) -> None:
    """Run `action` now, or, while this process holds a horde lock, once it lets go.

    For a pause (SIGTSTP): a member stopped inside a write would keep `.lock` for as long
    as it stays paused, and every other writer would be refused on the lock timeout
    meanwhile. Safe in a signal handler: it takes no lock.
    """
    if _held:
        _after_release.append(action)
    else:
        action()


def _entered() -> None:
    global _held
    _held += 1


def _left() -> None:
    """After a release: run what waited for this process to hold no lock."""
    global _held
    _held -= 1
    while not _held and _after_release:
        _after_release.pop(0)()


@contextmanager
def flocked(path: Path, timeout: float) -> Iterator[bool]:
    """Hold `path`'s exclusive `flock` for the body if it can be had within `timeout`
    (yields True), else run the body without it (yields False)."""
    with flocked_fd(path, timeout) as fd:
        yield fd is not None


@contextmanager
def flocked_fd(path: Path, timeout: float) -> Iterator[int | None]:
    """`flocked`, yielding the locked descriptor (None: not had in time), for a lock file
    that also holds a little state read and written under it."""
    fd = _acquire(str(path), timeout)
    if fd is None:
        yield None
        return
    _entered()
    try:
        yield fd
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
            _left()


class HordeLock:
    """A reusable handle on `.horde/.lock` for one process (re-entrant in one thread)."""

    def __init__(self, paths: HordePaths, actor: str) -> None:
        self._paths = paths
        self._actor = actor
        self._owner: int | None = None
        """The thread holding the lock through this handle, if any."""

    @contextmanager
    def held(
        self, timeout: float | None = None, while_waiting: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Hold the lock for the body; raise `LockTimeoutError` naming the holder.

        A contended wait runs `while_waiting` every few ms: work that needs no lock and
        would otherwise be done under it (the holder's appends, folded as they land).
        """
        if self._owner == threading.get_ident():
            yield  # already held by this thread through this handle
            return
        wait = lock_timeout_s() if timeout is None else timeout
        asked = time.perf_counter()
        fd = _acquire(str(self._paths.lock), wait, while_waiting)
        if fd is None:
            raise LockTimeoutError(self._timeout_message(wait))
        got = time.perf_counter()
        self._owner = threading.get_ident()
        _entered()
        try:
            self._write_holder()
            yield
        finally:
            self._owner = None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)  # also for a forked child sharing the file
            finally:
                os.close(fd)
                _trace(self._actor, got - asked, time.perf_counter() - got)
                _left()

    def _write_holder(self) -> None:
        """Overwrite the note in place, padded to a fixed width: truncating the file
        instead (`O_TRUNC`) makes ext4 flush it on close (its replace-by-truncate
        safeguard), inside every hold."""
        note = f"pid={os.getpid()} actor={self._actor} since={time.time():.3f}"
        data = note.encode()[: HOLDER_WIDTH - 1].ljust(HOLDER_WIDTH - 1) + b"\n"
        try:
            fd = open_or_create(self._paths.lock_holder, os.O_WRONLY)
            try:
                os.pwrite(fd, data, 0)
            finally:
                os.close(fd)
        except OSError:
            pass  # the note is a courtesy for error messages, never a reason to fail a write

    def _timeout_message(self, wait: float) -> str:
        try:
            note = self._paths.lock_holder.read_text().strip()
        except OSError:
            note = ""
        holder = _holder(str(self._paths.lock), note)
        return (
            f"refused: could not take {self._paths.lock} within {wait:g}s "
            f"(held by {holder}); retry shortly, or end that process if it is stuck"
        )


def _holder(path: str, note: str) -> str:
    """Who holds `path` now, for a refusal: the note when its pid is the holder the kernel
    names (`/proc/locks`), else that process and the member it runs under (or claims to
    be: a script holding the lock without the sandbox). A stale note names a writer long
    gone, so it is only the answer when the kernel cannot say."""
    pids = procfs.flock_holders(path)
    if not pids:
        return note or "unknown"
    pid = pids[0]
    if note.startswith(f"pid={pid} "):
        return note
    via = identity.member_above(pid)
    claim = procfs.environ(pid).get("HORDE_MEMBER", "")
    actor = via.member if via is not None else (f"{claim[:64]} (claimed)" if claim else "unknown")
    return f"pid={pid} actor={actor} ({procfs.command_name(pid) or 'gone'})"
