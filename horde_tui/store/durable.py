"""Group commit: one fsync makes every append made before it durable, for all writers.

A write appends under `.lock` without fsync and flushes after the release (so the lock
is not held across a disk flush). Twelve writers used to flush one after another, each
forcing its own journal commit for bytes the previous flush had already covered. Here
flushes of one file queue on a small lock file beside it, `.<name>.synced`, which also
records how far the file was when the last fsync began: a writer whose append ends
before that point is already on disk and skips its fsync; the next one to flush covers
everyone who appended meanwhile.

The record names the file's device and inode, so a replaced file never matches. A cut
of the file (a torn tail, a failed append) removes the record (`forget_synced`): bytes
appended later at offsets it covered are not on disk. A lost record only costs an fsync.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from horde_tui.store.lock import flocked_fd

SYNC_WAIT_S = 2.0
"""How long a flush queues behind others before it fsyncs without them (a flush only
waits for fsyncs, so this is reached only on a stalled disk)."""
MARK_WIDTH = 64
"""Bytes of the record: `device inode size`, padded, so a shorter one overwrites a
longer one whole."""


@functools.lru_cache(maxsize=64)
def mark_path(path: Path) -> Path:
    """Cached: every write flushes the same two or three files, and building a path
    costs more than the flush's other Python work."""
    return path.with_name(f".{path.name}.synced")


def sync_through(path: Path, end: int) -> bool:
    """Make the first `end` bytes of `path` durable; False when an fsync another writer
    began after they were written already did (no fsync needed)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        st = os.fstat(fd)
        with flocked_fd(mark_path(path), SYNC_WAIT_S) as mark:
            if mark is not None and _synced(mark, st) >= end:
                return False
            size = os.fstat(fd).st_size
            os.fsync(fd)
            if mark is not None:
                record = f"{st.st_dev} {st.st_ino} {size}".ljust(MARK_WIDTH)
                os.pwrite(mark, record.encode(), 0)
            return True
    finally:
        os.close(fd)


def forget_synced(path: Path) -> None:
    """After a cut of `path`: the record may cover offsets new appends will reuse."""
    try:
        mark_path(path).unlink()
    except FileNotFoundError:
        pass


def _synced(mark: int, st: os.stat_result) -> int:
    """How far `path` (as `st` names it) was durable at the last fsync; -1 unknown."""
    try:
        dev, ino, size = (int(x) for x in os.pread(mark, MARK_WIDTH, 0).split())
    except (OSError, ValueError):
        return -1
    return size if (dev, ino) == (st.st_dev, st.st_ino) else -1
