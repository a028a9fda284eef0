"""A write renders the markdown projections and flushes `ledger.jsonl` and
`events.jsonl` after releasing the write lock, before it answers (issue 11 item 8).

Under the lock a write only appends to the page cache; the two fsyncs and the
projections' renames, most of a write's time on a real disk, come after the release. A
waiting writer takes the lock meanwhile, the journal commits the overlapping flushes of
several writers together, and a writer that renders late finds its projections already
rendered by a later one. A receipt still means "on disk and in the markdown": a record
another writer acts on was appended before that writer's own, so its flush covers both.

The lock is real (`flock` on `.horde/.lock`, probed from a second open file) and so are
the files; only `os.fsync` is wrapped, to watch when it is called.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from horde_tui.protocol import run_action
from horde_tui.store import durable
from horde_tui.store import store as store_module
from horde_tui.store.projected import read_marks
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


def test_projections_are_rendered_after_the_release_under_their_own_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / ".horde"
    store = HordeStore(root, "member-1")
    store.ensure_run("r1", "# Task\n\nfind the bug\n")
    assert run_action(store, {"action": "post", "text": "first"}, run="r1").ok
    seen: list[tuple[str, bool, bool]] = []
    real = store_module.atomic_write_text

    def watched(path: Path, text: str, *, fsync: bool = True) -> None:
        projection_lock = root / ".projecting.lock"
        held = _lock_is_held(root)
        fd = os.open(projection_lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            rendering_locked = False
        except BlockingIOError:
            rendering_locked = True
        finally:
            os.close(fd)
        seen.append((path.name, held, rendering_locked))
        real(path, text, fsync=fsync)

    monkeypatch.setattr(store_module, "atomic_write_text", watched)
    assert run_action(store, {"action": "post", "text": "second"}, run="r1").ok
    assert seen == [("BOARD.md", False, True)], seen
    assert "second" in (root / "BOARD.md").read_text()


def test_a_writer_that_renders_late_finds_its_projection_done_by_a_later_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer A appends and releases; before A renders, B writes and renders (its fold
    holds A's post too). A then renders nothing, and BOARD.md shows both posts."""
    root = tmp_path / ".horde"
    a, b = HordeStore(root, "member-1"), HordeStore(root, "member-2")
    a.ensure_run("r1", "# Task\n\nfind the bug\n")
    assert run_action(b, {"action": "post", "text": "b warms up"}, run="r1").ok
    writes: list[str] = []
    real_write = store_module.atomic_write_text

    def counted(path: Path, text: str, *, fsync: bool = True) -> None:
        writes.append(path.name)
        real_write(path, text, fsync=fsync)

    monkeypatch.setattr(store_module, "atomic_write_text", counted)
    real_project = HordeStore._project

    def b_overtakes(self: HordeStore) -> str:
        if self is a:
            assert run_action(b, {"action": "post", "text": "b overtakes"}, run="r1").ok
            assert writes == ["BOARD.md"]  # B's render, with A's post in it
            writes.clear()
        return real_project(self)

    monkeypatch.setattr(HordeStore, "_project", b_overtakes)
    assert run_action(a, {"action": "post", "text": "a was first"}, run="r1").ok
    assert writes == [], f"A rendered again what B had rendered: {writes}"
    board = (root / "BOARD.md").read_text()
    assert "a was first" in board and "b overtakes" in board
    assert read_marks(root / ".projected")["board"] == b.state.seq


def test_a_writer_whose_append_another_flush_covered_fsyncs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watched_fsyncs: list[tuple[str, bool]]
) -> None:
    """Writer A appends and releases; before A flushes, B writes and flushes: B's fsyncs
    began after A's bytes landed, so they made A's durable too and A skips its own (one
    journal commit for both, not two). A's receipt still comes after its bytes are on
    disk; B's flush was it."""
    root = tmp_path / ".horde"
    a, b = HordeStore(root, "member-1"), HordeStore(root, "member-2")
    a.ensure_run("r1", "# Task\n\nfind the bug\n")
    assert run_action(b, {"action": "post", "text": "b warms up"}, run="r1").ok
    real_flush = HordeStore._flush
    seen: dict[str, list[str]] = {}

    def b_overtakes(self: HordeStore, *, strict: bool = False) -> str:
        if self is a and "b" not in seen:
            watched_fsyncs.clear()
            assert run_action(b, {"action": "post", "text": "b overtakes"}, run="r1").ok
            seen["b"] = [name for name, _ in watched_fsyncs]
            watched_fsyncs.clear()
        return real_flush(self, strict=strict)

    monkeypatch.setattr(HordeStore, "_flush", b_overtakes)
    receipt = run_action(a, {"action": "post", "text": "a was first"}, run="r1")
    assert receipt.ok, receipt.text
    assert {"ledger.jsonl", "events.jsonl"} <= set(seen["b"]), seen
    assert [n for n, _ in watched_fsyncs if n.endswith(".jsonl")] == [], watched_fsyncs


def test_a_cut_file_is_flushed_again_below_the_old_mark(
    tmp_path: Path, watched_fsyncs: list[tuple[str, bool]]
) -> None:
    """A torn tail's cut reuses offsets an earlier flush covered: the next append there
    is not taken for durable."""
    root = tmp_path / ".horde"
    store = HordeStore(root, "member-1")
    store.ensure_run("r1", "# Task\n\nfind the bug\n")
    assert run_action(store, {"action": "post", "text": "durable"}, run="r1").ok
    with open(root / "ledger.jsonl", "ab") as f:  # a writer died mid-append, then was flushed
        f.write(b'{"seq": 99, "op": "post.add", "text": "' + b"x" * 4000)  # longer than a post
    durable.sync_through(root / "ledger.jsonl", (root / "ledger.jsonl").stat().st_size)
    watched_fsyncs.clear()
    assert run_action(store, {"action": "post", "text": "after the cut"}, run="r1").ok
    # One fsync seals the cut, the other flushes the new post appended below the old mark.
    assert [n for n, _ in watched_fsyncs].count("ledger.jsonl") == 2, watched_fsyncs


def test_a_write_creates_only_new_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Opening with `O_CREAT` takes the directory's lock for writing even when the file
    is there, so twelve writers queued on `.horde/`'s behind each other's renames for
    every lock file, mark and append: once the horde's files exist, a write opens them
    without it, and creates only its projections' temp files."""
    root = tmp_path / ".horde"
    store = HordeStore(root, "member-1")
    assert run_action(store, {"action": "idea", "text": "Audit src/a.py"}, run="r1").ok
    created: list[str] = []
    real = os.open

    def watched(path: str | os.PathLike[str], flags: int, *args: int, **kw: int) -> int:
        if flags & os.O_CREAT:
            created.append(Path(path).name)
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", watched)
    assert run_action(store, {"action": "idea", "text": "Audit src/b.py"}, run="r1").ok
    assert created and all(name.endswith(".tmp") for name in created), created
