"""A full disk, for real: `.horde/` on a small tmpfs that a filler file fills up.

The kernel's own ENOSPC, at whatever byte the space runs out, in the ledger append, the
projections or the event log. Every answer must say what state the write is in, no
process may crash or print a traceback, nothing acknowledged may be lost, and once space
returns a retry with the same `requestId` must land exactly once.

Mounting a tmpfs needs root (the sandbox and CI run as root); elsewhere those tests skip.
An I/O error (EIO) on the ledger's write or flush, which a tmpfs cannot produce, is
injected into this test process only (`fail_on`), around the real calls.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.protocol import run_action
from horde_tui.store.store import Decision, HordeStore

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

PAGE = 4096


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(disk: Path) -> Path:
    """Write a filler file until the kernel answers ENOSPC; return it (unlink = space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (PAGE, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


def pad(store: HordeStore, path: Path, room: int) -> None:
    """Grow `path` (ledger or events) by a raw write through the store, so that its last
    page has exactly `room` bytes left: what decides whether the next append fits."""
    for _ in range(3):
        size = path.stat().st_size
        if (PAGE - size % PAGE) % PAGE == room:
            return
        # A padding record's own length, then the text length that lands on `room`.
        if path.name == "ledger.jsonl":
            store.transact(
                "r1", "test-pad", {}, lambda _s: Decision(True, "ok", None, [pad_record(1)])
            )
            grew = path.stat().st_size - size
            size += grew
            want = (PAGE - size % PAGE - room) % PAGE or PAGE
            n = max(1, want - (grew - 1))
            store.transact(
                "r1", "test-pad", {}, lambda _s, n=n: Decision(True, "ok", None, [pad_record(n)])
            )
        else:
            store.append_event("r1", {"type": "note", "pad": "p"})
            grew = path.stat().st_size - size
            size += grew
            want = (PAGE - size % PAGE - room) % PAGE or PAGE
            store.append_event("r1", {"type": "note", "pad": "p" * max(1, want - (grew - 1))})
    raise AssertionError(f"could not pad {path.name} to {room} bytes of room")


def pad_record(n: int) -> dict:
    return {"op": "board.post", "text": "p" * n}


def post(store: HordeStore, text: str, rid: str):
    return run_action(store, {"action": "post", "text": text, "requestId": rid}, run="r1")


def board_posts(root: Path) -> list[str]:
    records = verify.strict_jsonl(root / "ledger.jsonl")
    return [r["text"] for r in records if r["op"] == "board.post" and not r["text"].startswith("p")]


def settle(root: Path, store: HordeStore, texts: dict[str, str]) -> None:
    """After space returns: retries land exactly once and `.horde/` is whole again."""
    for rid, text in texts.items():
        again = post(store, text, rid)
        assert again.ok, again.text
    assert run_action(store, {"action": "post", "text": "space is back"}, run="r1").ok
    posts = board_posts(root)
    for text in texts.values():
        assert posts.count(text) == 1, f"{text!r} is in the ledger {posts.count(text)} times"
    _, state = verify.fresh_state(root)
    verify.assert_seq_gapless(verify.strict_jsonl(root / "ledger.jsonl"))
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)
    verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")


def test_recorded_but_projections_stale_is_said_and_repaired(disk: Path) -> None:
    root = disk / ".horde"
    member = HordeStore(root, "member-1")  # a long-running writer: one process throughout
    assert post(member, "before the disk filled", "b-1").ok
    pad(member, root / "ledger.jsonl", 1500)  # the next record fits in the ledger's page
    pad(member, root / "runs" / "r1" / "events.jsonl", 2500)  # and so do its events
    filler = fill(disk)

    full = post(member, "written while the disk was full", "full-1")
    assert full.ok, full.text
    assert "recorded in ledger.jsonl" in full.text and "stale until the next write" in full.text
    assert board_posts(root).count("written while the disk was full") == 1
    assert "written while the disk was full" not in (root / "BOARD.md").read_text()
    # The same member goes on: a write that cannot fit is refused and says so.
    pad_text = "q" * 3000
    refused = post(member, pad_text, "full-2")
    assert not refused.ok and "nothing was recorded" in refused.text, refused.text
    assert pad_text not in board_posts(root)

    filler.unlink()
    replay = post(member, "written while the disk was full", "full-1")
    assert replay.ok and "replayed" in replay.text
    settle(root, member, {"full-1": "written while the disk was full", "full-2": pad_text})


def test_nothing_recorded_is_said_and_leaves_no_torn_tail(disk: Path) -> None:
    root = disk / ".horde"
    member = HordeStore(root, "member-1")
    assert post(member, "before the disk filled", "b-1").ok
    pad(member, root / "ledger.jsonl", 40)  # the next record needs a page there is not
    pad(member, root / "runs" / "r1" / "events.jsonl", 2500)
    filler = fill(disk)
    before = (root / "ledger.jsonl").read_bytes()

    full = post(member, "refused while the disk was full", "full-1")
    assert not full.ok
    assert "nothing was recorded" in full.text and "No space left on device" in full.text
    assert (root / "ledger.jsonl").read_bytes() == before  # the part that fitted was cut off
    filler.unlink()
    settle(root, member, {"full-1": "refused while the disk was full"})


def test_tool_calls_on_a_full_disk_answer_one_line_and_retries_land_once(disk: Path) -> None:
    root = disk / ".horde"
    assert post(HordeStore(root, "member-1"), "before the disk filled", "b-1").ok
    filler = fill(disk)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_MEMBER="member-1", HORDE_DIR=str(root), HORDE_RUN="r1")
    texts = {f"full-{i}": f"tool call {i} on a full disk" for i in range(1, 26)}
    states = {"recorded": 0, "not recorded": 0}
    for rid, text in texts.items():
        r = subprocess.run(
            cli_argv("tool", "post", f"text={text}", f"requestId={rid}"),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in r.stderr, r.stderr
        answer = r.stdout.strip()
        assert len(answer.splitlines()) == 1, answer
        # Whatever the state, the answer says it, and the disk agrees.
        if "nothing was recorded" in answer:
            assert r.returncode == 1 and text not in board_posts(root)
            states["not recorded"] += 1
        else:
            assert r.returncode == 0 and "recorded in ledger.jsonl" in answer, answer
            assert board_posts(root).count(text) == 1
            states["recorded"] += 1
    assert states["not recorded"] > 0, states
    filler.unlink()
    settle(root, HordeStore(root, "member-1"), texts)


# -- I/O errors a tmpfs cannot produce: injected into this test process only ---------------


def fail_on(monkeypatch: pytest.MonkeyPatch, call: str, name: str, err: int) -> list[int]:
    """Make `os.<call>` fail with `err` on descriptors of files called `name`; return a
    list that counts the failures (undo with `monkeypatch.undo()`)."""
    real = getattr(os, call)
    failures: list[int] = []

    def failing(fd: int, *args: object) -> object:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/" + name):
            failures.append(fd)
            raise OSError(err, os.strerror(err))
        return real(fd, *args)

    monkeypatch.setattr(os, call, failing)
    return failures


def test_an_eio_on_the_ledger_write_records_nothing_and_the_retry_lands_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / ".horde"
    member = HordeStore(root, "member-1")
    assert post(member, "before the error", "b-1").ok
    failures = fail_on(monkeypatch, "write", "ledger.jsonl", errno.EIO)
    failed = post(member, "during the error", "eio-1")
    assert failures and not failed.ok
    assert "Input/output error" in failed.text and "nothing was recorded" in failed.text
    assert "during the error" not in board_posts(root)
    monkeypatch.undo()
    settle(root, member, {"eio-1": "during the error"})


def test_an_eio_on_the_ledger_flush_says_the_write_is_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / ".horde"
    member = HordeStore(root, "member-1")
    assert post(member, "before the error", "b-1").ok
    failures = fail_on(monkeypatch, "fsync", "ledger.jsonl", errno.EIO)
    flushed = post(member, "during the error", "eio-1")
    assert failures and flushed.ok, flushed.text
    assert "ledger.jsonl holds this write, but flushing it to disk failed" in flushed.text
    assert board_posts(root).count("during the error") == 1
    monkeypatch.undo()
    replay = post(HordeStore(root, "member-1"), "during the error", "eio-1")
    assert replay.ok and "replayed" in replay.text
    settle(root, member, {"eio-1": "during the error"})
