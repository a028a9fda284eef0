"""A write flushes `ledger.jsonl` and `events.jsonl` after releasing the lock, before
it answers (issue 11 item 8).

Under the lock a write only appends to the page cache; the two fsyncs, most of a
write's time on a real disk, come after the release. A waiting writer takes the lock
while the first one's flush is in flight, and the journal commits the overlapping
flushes of several writers together, so twelve writers are no longer serialised on
twelve times two fsyncs. A receipt still means "on disk": a record another writer acts
on was appended before that writer's own, so its flush covers both.

The lock is real (`flock` on `.horde/.lock`, probed from a second open file) and so are
the files; only `os.fsync` is wrapped, to watch when it is called.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore


def _lock_is_held(root: Path) -> bool:
    """True when some open file holds `.horde/.lock` (flock belongs to the open file,
    so a second descriptor in this process is refused like another process would be)."""
    fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops our probe's lock, if it got one
    return False


@pytest.fixture
def watched_fsyncs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, bool]]:
    """Every `os.fsync` of a file under `.horde/`: (file name, lock held at the time)."""
    root = tmp_path / ".horde"
    calls: list[tuple[str, bool]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if target.startswith(str(root)):
            calls.append((Path(target).name, _lock_is_held(root)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_ledger_and_events_are_flushed_after_the_release(
    tmp_path: Path, watched_fsyncs: list[tuple[str, bool]]
) -> None:
    store = HordeStore(tmp_path / ".horde", "member-1")
    store.ensure_run("r1", "# Task\n\nfind the bug\n")
    watched_fsyncs.clear()
    receipt = run_action(store, {"action": "post", "text": "flush me after the lock"}, run="r1")
    assert receipt.ok, receipt.text
    flushed = {name for name, _ in watched_fsyncs}
    assert {"ledger.jsonl", "events.jsonl"} <= flushed, watched_fsyncs
    under_lock = [name for name, held in watched_fsyncs if held]
    assert under_lock == [], f"fsynced while holding .horde/.lock: {under_lock}"


def test_the_receipt_comes_after_the_flush(
    tmp_path: Path, watched_fsyncs: list[tuple[str, bool]]
) -> None:
    """Acknowledged means on disk: both flushes are done when `run_action` returns, for
    a refused write too (its outcome event is what a retry is answered from)."""
    store = HordeStore(tmp_path / ".horde", "member-1")
    store.ensure_run("r1", "# Task\n\nfind the bug\n")
    watched_fsyncs.clear()
    ok = run_action(store, {"action": "idea", "text": "check the parser in src/p.py"}, run="r1")
    assert ok.ok, ok.text
    assert [n for n, _ in watched_fsyncs].count("ledger.jsonl") == 1
    assert [n for n, _ in watched_fsyncs].count("events.jsonl") == 1
    watched_fsyncs.clear()
    refused = run_action(store, {"action": "claim", "id": "#99"}, run="r1")
    assert not refused.ok
    assert [n for n, _ in watched_fsyncs] == ["events.jsonl"], watched_fsyncs
