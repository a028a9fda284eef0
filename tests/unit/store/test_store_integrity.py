"""Integrity of `.horde/` (issue 11): retries across crashes, torn tails, corrupt lines.

Real processes for the crashes (a writer killed right after its ledger append, then a
`horde-tui tool` retry), real files edited the way a person or an `echo -n` round trip
would, and the files alone judged afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.paths import HELPERS

from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

WRITER = HELPERS / "writer.py"


def act(store: HordeStore, action: str, run: str = "r1", **fields):
    return run_action(store, {"action": action, **fields}, run=run)


def ok(store: HordeStore, action: str, run: str = "r1", **fields) -> str | None:
    result = act(store, action, run, **fields)
    assert result.ok, result.text
    return result.id


def tool(root: Path, member: str, *args: str, run: str = "r1") -> subprocess.CompletedProcess:
    """`horde-tui tool ...` as a separate process, as a script or a person would call it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_MEMBER=member, HORDE_DIR=str(root), HORDE_RUN=run)
    return subprocess.run(
        cli_argv("tool", *args),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def killed_after_append(root: Path, tmp_path: Path, at: int) -> list[dict]:
    """Run the writer helper until it dies right after its `at`-th ledger append."""
    HordeStore(root, "parent").ensure_run("r1")
    acks = tmp_path / "acks.jsonl"
    cmd = [sys.executable, str(WRITER), str(root), "member-1", "t1", "100", str(acks)]
    proc = subprocess.run(
        [*cmd, "--crash", "after-append", "--crash-at", str(at)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode < 0, proc.stderr
    return verify.read_acks(acks)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".horde"


# -- 1. requestId survives a crash between the ledger append and the outcome event ----------


def test_a_retry_after_a_kill_past_the_ledger_append_is_replayed_not_written_again(
    root: Path, tmp_path: Path
) -> None:
    acks = killed_after_append(root, tmp_path, at=3)  # idea, claim, then the post dies
    assert [a["action"] for a in acks] == ["idea", "claim"]
    text = "t1 progress 0: reading src/t1/file_0.py"
    posts = [r for r in verify.strict_jsonl(root / "ledger.jsonl") if r["op"] == "board.post"]
    assert [p["text"] for p in posts] == [text], "the helper did not die after the append"
    events = verify.strict_jsonl(root / "runs" / "r1" / "events.jsonl")
    assert not [e for e in events if e["type"] == "outcome" and e["requestId"] == "t1-2"]

    retry = tool(root, "member-1", "post", f"text={text}", "requestId=t1-2")
    assert retry.returncode == 0, retry.stderr
    assert retry.stdout.strip() == "ok: posted to BOARD.md (replayed: same requestId)"
    posts = [r for r in verify.strict_jsonl(root / "ledger.jsonl") if r["op"] == "board.post"]
    assert len(posts) == 1, "the retry wrote the post a second time"
    # The same request from another member, or in another run, is another request.
    other = tool(root, "member-2", "post", f"text={text}", "requestId=t1-2")
    assert other.stdout.strip() == "ok: posted to BOARD.md"
    elsewhere = tool(root, "member-1", "post", f"text={text}", "requestId=t1-2", run="r2")
    assert elsewhere.stdout.strip() == "ok: posted to BOARD.md"
    _, state = verify.fresh_state(root)
    assert len(state.posts) == 3
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)


def test_a_replayed_create_answers_the_same_id_and_text(root: Path, tmp_path: Path) -> None:
    killed_after_append(root, tmp_path, at=1)  # the first idea is on disk, never answered
    idea_text = "Audit src/t1/file_0.py for unchecked request input (t1 unit 0)"
    retry = act(HordeStore(root, "member-1"), "idea", text=idea_text, requestId="t1-0")
    assert (retry.ok, retry.id) == (True, "#1")
    assert retry.text == "ok #1 added (open); claim it to work it (replayed: same requestId)"
    # The retry's answer is what the first write would have said: compare with a fresh one.
    fresh = act(HordeStore(root, "member-9"), "idea", text="Audit src/other.py for races")
    assert fresh.text == "ok #2 added (open); claim it to work it"
    records = verify.strict_jsonl(root / "ledger.jsonl")
    assert [r["id"] for r in records if r["op"] == "idea.add"] == ["#1", "#2"]
    # The request id is in the same durable append as the change it made.
    first = next(r for r in records if r["op"] == "idea.add")
    assert first["requestId"] == "t1-0"


# -- 2. a complete last record without its newline is kept; a torn tail is cut, not silently --


def test_a_complete_last_record_without_its_newline_is_kept(root: Path) -> None:
    store = HordeStore(root, "member-1")
    ok(store, "fact", text="src/app.py reads PORT from the environment")
    ok(store, "fact", text="src/app.py logs to stderr only")
    ledger = root / "ledger.jsonl"
    os.truncate(ledger, ledger.stat().st_size - 1)  # what `echo -n` or an editor leaves

    assert act(HordeStore(root, "member-2"), "post", text="x").ok
    records = verify.strict_jsonl(ledger)  # every line whole, newline restored
    assert [r["id"] for r in records if r["op"] == "fact.add"] == ["T1", "T2"]
    assert "T2 src/app.py logs to stderr only" in (root / "FACTS.md").read_text()
    verify.assert_seq_gapless(records)
    verify.assert_projections_fresh(root)
    assert not (root / "ledger.jsonl.torn").exists(), "nothing was cut"


def test_a_torn_ledger_tail_is_cut_kept_aside_and_reported(root: Path) -> None:
    store = HordeStore(root, "member-1")
    ok(store, "fact", text="src/app.py reads PORT from the environment")
    torn = b'{"seq":3,"ts":"2026-01-01T00:00:00Z","run":"r1","actor":"member-7","op":"fa'
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(torn)

    assert act(HordeStore(root, "member-2"), "post", text="after the tear").ok
    verify.strict_jsonl(root / "ledger.jsonl")
    kept = (root / "ledger.jsonl.torn").read_bytes()
    assert torn in kept
    reports = [
        e
        for e in verify.strict_jsonl(root / "runs" / "r1" / "events.jsonl")
        if e["type"] == "torn-tail"
    ]
    assert len(reports) == 1
    assert reports[0]["file"] == "ledger.jsonl" and reports[0]["bytes"] == len(torn)
    assert "ledger.jsonl.torn" in reports[0]["text"] and f"{len(torn)} bytes" in reports[0]["text"]
    # Reported once: later writes find nothing to cut and say nothing more.
    assert act(HordeStore(root, "member-3"), "post", text="later").ok
    events = verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")
    assert len([e for e in events if e["type"] == "torn-tail"]) == 1


def test_an_unfinished_multi_record_append_is_cut_kept_aside_and_reported(root: Path) -> None:
    store = HordeStore(root, "member-1")
    ok(store, "post", text="before")
    more = (
        json.dumps(
            {
                "seq": 3,
                "ts": "x",
                "run": "r1",
                "actor": "m",
                "op": "board.post",
                "text": "never finished",
                "more": True,
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(more)
    assert act(HordeStore(root, "member-2"), "post", text="after").ok
    assert b"never finished" not in (root / "ledger.jsonl").read_bytes()
    assert more in (root / "ledger.jsonl.torn").read_bytes()
    events = verify.strict_jsonl(root / "runs" / "r1" / "events.jsonl")
    (report,) = [e for e in events if e["type"] == "torn-tail"]
    assert report["bytes"] == len(more) and report["lines"] == 1


def test_events_keep_a_complete_last_event_and_report_a_torn_one(root: Path) -> None:
    store = HordeStore(root, "member-1")
    ok(store, "post", text="one")
    path = root / "runs" / "r1" / "events.jsonl"
    os.truncate(path, path.stat().st_size - 1)
    ok(HordeStore(root, "member-2"), "post", text="two")
    events = verify.assert_events_gapless(path)  # E ids not reused after the kept event
    assert [e["type"] for e in events] == ["intent", "outcome"] * 2
    with open(path, "ab") as fh:
        fh.write(b'{"ts":"x","actor":"member-3","type":"inte')
    ok(HordeStore(root, "member-3"), "post", text="three")
    events = verify.assert_events_gapless(path)
    (report,) = [e for e in events if e["type"] == "torn-tail"]
    assert report["file"] == "events.jsonl"
    assert b'"type":"inte' in (path.parent / "events.jsonl.torn").read_bytes()


# -- 3. ids and seq of a corrupt line are never handed out again ------------------------------


def test_the_id_and_seq_of_a_corrupt_middle_line_are_never_reused(root: Path) -> None:
    store = HordeStore(root, "member-1")
    for i in (1, 2, 3):
        assert ok(store, "idea", text=f"Audit src/mod{i}.py for input checks") == f"#{i}"
    ok(store, "post", text="after the ideas")
    path = root / "ledger.jsonl"
    lines = path.read_bytes().split(b"\n")
    n = next(i for i, raw in enumerate(lines) if b'"id":"#3"' in raw)
    bad_seq = json.loads(lines[n])["seq"]
    fixed = lines[n]
    lines[n] = lines[n].replace(b'"op":"idea.add"', b'"op":"idea.add" oops')
    path.write_bytes(b"\n".join(lines))

    later = HordeStore(root, "member-2")
    assert ok(later, "idea", text="Audit src/mod4.py for input checks") == "#4"
    records = [
        json.loads(raw) for raw in path.read_bytes().split(b"\n") if b"oops" not in raw and raw
    ]
    assert all(r["seq"] != bad_seq for r in records), "the corrupt line's seq was reused"

    # A person fixes the line: every record is visible, no id or seq is there twice.
    path.write_bytes(path.read_bytes().replace(lines[n], fixed))
    fresh = HordeStore(root, "member-3")
    fresh.refresh()
    assert sorted(fresh.state.ideas) == ["#1", "#2", "#3", "#4"]
    seqs = [r["seq"] for r in verify.strict_jsonl(path)]
    assert len(seqs) == len(set(seqs))


def test_the_event_id_of_a_corrupt_event_line_is_never_reused(root: Path) -> None:
    store = HordeStore(root, "member-1")
    for text in ("one", "two", "three"):
        ok(store, "post", text=text)
    path = root / "runs" / "r1" / "events.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[-2] = lines[-2].replace(b'"type"', b'oops "type"')  # the last event, E6
    path.write_bytes(b"\n".join(lines))
    ok(HordeStore(root, "member-2"), "post", text="four")
    ids = [
        json.loads(raw)["id"]
        for raw in path.read_bytes().split(b"\n")
        if raw and b"oops" not in raw
    ]
    assert "E6" not in ids and ids[-2:] == ["E7", "E8"]
