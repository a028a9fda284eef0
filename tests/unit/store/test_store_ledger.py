"""`HordeStore`: the write path as the files show it (ids, runs, projections, events, repair)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from horde_tui.protocol import run_action
from horde_tui.store.paths import LEDGER_FILES, atomic_write_text
from horde_tui.store.store import HordeStore

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify


def act(store: HordeStore, action: str, run: str = "r1", **fields):
    return run_action(store, {"action": action, **fields}, run=run)


def ok(store: HordeStore, action: str, run: str = "r1", **fields) -> str | None:
    result = act(store, action, run, **fields)
    assert result.ok, result.text
    return result.id


def ledger_lines(root: Path) -> list[bytes]:
    return (root / "ledger.jsonl").read_bytes().split(b"\n")[:-1]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".horde"


def test_gitignore_and_projections_are_created(root: Path) -> None:
    store = HordeStore(root, "member-1")
    ok(store, "idea", text="Audit src/app.py for path traversal")
    assert (root / ".gitignore").read_text().split() == ["runs/", "swarms/"]
    for name in LEDGER_FILES.values():
        assert (root / name).is_file()
    assert "#1 Audit src/app.py" in (root / "IDEAS.md").read_text()
    verify.assert_projections_fresh(root)
    verify.assert_no_leftovers(root)


def test_atomic_write_replaces_the_file_instead_of_rewriting_it(tmp_path: Path) -> None:
    path = tmp_path / "IDEAS.md"
    path.write_text("old\n")
    with open(path) as reader:  # a reader that opened the file before the write
        atomic_write_text(path, "new\n")
        assert reader.read() == "old\n"  # it still sees the whole old file
    assert path.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["IDEAS.md"]


def test_ids_keep_counting_across_runs_and_processes(root: Path) -> None:
    workdir = root.parent
    for run, n in (("r1", 1), ("r2", 2)):
        store = HordeStore(root, f"member-{n}")  # a fresh process per run
        idea = ok(store, "idea", run, text=f"Audit src/run{n}/db.py for injection")
        assert idea == f"#{n}"
        assert ok(store, "claim", run, id=idea) == idea
        finding = ok(
            store,
            "finding",
            run,
            text=f"String-built SQL in src/run{n}/db.py",
            idea=idea,
            concern="sql-injection",
            concernDef="SQL built from request strings",
        )
        assert finding == f"F{n}"
        assert ok(store, "fact", run, text=f"src/run{n}/db.py uses sqlite3") == f"T{n}"
        assert ok(store, "assert", run, text=f"src/run{n}/db.py is reachable") == f"C{n}"
        (workdir / f"data{n}").mkdir(parents=True, exist_ok=True)
        resource = ok(store, "resource", run, name=f"corpus-{n}", path=f"data{n}")
        assert resource == f"R{n}"
    _, state = verify.fresh_state(root)
    assert verify.assert_ids_gapless(state) == {
        "ideas": 2,
        "findings": 2,
        "facts": 2,
        "claims": 2,
        "resources": 2,
    }
    assert [state.findings[f].run for f in ("F1", "F2")] == ["r1", "r2"]


def test_each_run_has_a_heading_citing_its_task_by_sha256(root: Path) -> None:
    first = HordeStore(root, "member-1")
    first.ensure_run("r1", task="# Task\n\nFind the SQL injection.\n")
    ok(first, "post", "r1", text="starting r1")
    second = HordeStore(root, "member-2")
    ok(second, "idea", "r2", text="Audit src/r2.py for races")  # r2 created on first write
    board = (root / "BOARD.md").read_text()
    findings = (root / "FINDINGS.md").read_text()
    for run in ("r1", "r2"):
        sha = hashlib.sha256((root / "runs" / run / "TASK.md").read_bytes()).hexdigest()
        heading = f"## Run {run}\n\nTASK.md sha256 `{sha}`"
        assert heading in board, f"BOARD.md lacks the heading of {run}"
        assert heading in findings, f"FINDINGS.md lacks the heading of {run}"
    assert (root / "runs" / "r1" / "TASK.md").read_text().startswith("# Task\n\nFind the SQL")
    assert board.index("## Run r1") < board.index("starting r1") < board.index("## Run r2")
    verify.assert_projections_fresh(root)


def test_events_are_numbered_per_run_and_pair_intent_with_outcome(root: Path) -> None:
    a, b = HordeStore(root, "member-1"), HordeStore(root, "member-2")
    ok(a, "idea", "r1", text="Audit src/one.py")
    ok(b, "idea", "r2", text="Audit src/two.py")
    refused = act(b, "claim", "r1", id="#9")
    assert not refused.ok and "does not exist" in refused.text
    ok(a, "post", "r2", text="hello r2")
    ok(b, "claim", "r1", id="#1")
    receipts = {}
    for run in ("r1", "r2"):
        events = verify.assert_events_gapless(root / "runs" / run / "events.jsonl")
        assert [e["type"] for e in events] == ["intent", "outcome"] * (len(events) // 2)
        receipts[run] = [(e["actor"], e["action"], e["ok"]) for e in events[1::2]]
    assert receipts["r1"] == [
        ("member-1", "idea", True),
        ("member-2", "claim", False),
        ("member-2", "claim", True),
    ]
    assert receipts["r2"] == [("member-2", "idea", True), ("member-1", "post", True)]
    assert refused.event == "E4"


def test_a_repeated_request_id_returns_the_first_outcome_and_writes_nothing(root: Path) -> None:
    store = HordeStore(root, "member-1")
    first = act(store, "idea", text="Audit src/auth.py for timing leaks", requestId="q-1")
    assert first.ok and first.id == "#1"
    ledger, events = (
        (root / "ledger.jsonl").read_bytes(),
        verify.strict_jsonl(root / "runs" / "r1" / "events.jsonl"),
    )
    retry = HordeStore(root, "member-1")  # the same member after a restart
    again = act(retry, "idea", text="something else entirely", requestId="q-1")
    assert (again.ok, again.id, again.event) == (True, "#1", first.event)
    assert again.text.startswith(first.text) and "replayed" in again.text
    assert (root / "ledger.jsonl").read_bytes() == ledger
    assert verify.strict_jsonl(root / "runs" / "r1" / "events.jsonl") == events
    # The same requestId from another actor is a different request.
    other = act(HordeStore(root, "member-2"), "idea", text="Audit src/x.py", requestId="q-1")
    assert other.ok and other.id == "#2"


def test_hand_corrupted_line_is_reported_skipped_kept_and_writes_go_on(root: Path) -> None:
    writer = HordeStore(root, "member-1")
    for i in range(1, 5):
        assert ok(writer, "idea", text=f"Audit src/mod{i}.py for input checks") == f"#{i}"
    lines = ledger_lines(root)
    bad_no = next(n for n, raw in enumerate(lines, 1) if b'"id":"#2"' in raw)
    lines[bad_no - 1] = b'{"seq": 3, "op": "idea.add", "id": "#2", oops this is not json'
    (root / "ledger.jsonl").write_bytes(b"\n".join(lines) + b"\n")

    later = HordeStore(root, "member-2")  # a process started after the hand edit
    new_id = ok(later, "idea", text="Audit src/mod5.py for input checks")
    assert new_id == "#5", "a new id must not reuse one still present in the ledger"
    assert later.corrupt_lines == [bad_no]
    assert any(f"line {bad_no} " in s for s in later.state.skipped)
    for name in LEDGER_FILES.values():
        text = (root / name).read_text()
        assert "## Skipped ledger lines" in text, name
        assert f"ledger.jsonl line {bad_no} is not a valid record" in text, name
    assert b"oops this is not json" in (root / "ledger.jsonl").read_bytes()

    fresh = HordeStore(root, "member-3")
    fresh.refresh()
    assert sorted(fresh.state.ideas) == ["#1", "#3", "#4", "#5"]
    assert fresh.state.ideas["#4"].text == "Audit src/mod4.py for input checks"
    assert fresh.state.ideas["#5"].text == "Audit src/mod5.py for input checks"
    assert ok(fresh, "claim", id="#5") == "#5"
    fresh.refresh()
    assert fresh.state.ideas["#5"].owner == "member-3"


def test_a_corrupt_line_seen_by_a_running_writer_reaches_every_projection(root: Path) -> None:
    writer = HordeStore(root, "member-1")
    ok(writer, "idea", text="Audit src/a.py")
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(b"garbage appended by hand\n")
    ok(writer, "post", text="still here")
    bad_no = len(ledger_lines(root)) - 1
    for name in LEDGER_FILES.values():
        text = (root / name).read_text()
        assert f"ledger.jsonl line {bad_no} is not a valid record" in text, name


def test_an_unfoldable_record_is_noted_in_every_projection(root: Path) -> None:
    writer = HordeStore(root, "member-1")
    ok(writer, "idea", text="Audit src/a.py")
    stray = {"seq": 99, "ts": "x", "run": "r1", "actor": "x", "op": "idea.claim", "id": "#7"}
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(json.dumps(stray).encode() + b"\n")
    ok(writer, "post", text="still here")
    for name in LEDGER_FILES.values():
        assert "seq 99 skipped: idea.claim names '#7'" in (root / name).read_text(), name
    assert ok(writer, "idea", text="Audit src/b.py") == "#2"


def simulate_death_after_append(root: Path, record: dict) -> None:
    """What a writer killed between its ledger append and its projections leaves: the
    record, with `.projected` behind it."""
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")


@pytest.mark.parametrize("same_process", [False, True], ids=["new-writer", "running-writer"])
def test_projections_are_repaired_after_a_writer_died_before_projecting(
    root: Path, same_process: bool
) -> None:
    survivor = HordeStore(root, "member-1")
    ok(survivor, "idea", text="Audit src/a.py")
    _, state = verify.fresh_state(root)
    simulate_death_after_append(
        root,
        {
            "seq": state.seq + 1,
            "ts": "2026-01-01T00:00:00.000000Z",
            "run": "r1",
            "actor": "member-9",
            "op": "idea.add",
            "id": "#2",
            "text": "Audit src/lost_projection.py",
        },
    )
    assert "lost_projection" not in (root / "IDEAS.md").read_text()
    store = survivor if same_process else HordeStore(root, "member-2")
    # Even a refused write (nothing to append) repairs what the dead writer left.
    assert not act(store, "claim", id="#99").ok
    assert "#2 Audit src/lost_projection.py" in (root / "IDEAS.md").read_text()
    verify.assert_projections_fresh(root)
    verify.assert_no_leftovers(root)
    assert ok(store, "idea", text="Audit src/c.py") == "#3"


def test_stale_projection_temp_files_of_a_dead_writer_are_removed(root: Path) -> None:
    ok(HordeStore(root, "member-1"), "idea", text="Audit src/a.py")
    (root / ".IDEAS.md.999999.tmp").write_text("half a projection")
    ok(HordeStore(root, "member-2"), "post", text="after the crash")
    verify.assert_no_leftovers(root)
    verify.assert_projections_fresh(root)


def test_facts_projection_follows_the_idea_and_claim_they_depend_on(root: Path) -> None:
    m1, m2 = HordeStore(root, "member-1"), HordeStore(root, "member-2")
    idea = ok(m1, "idea", text="Audit src/cache.py for stale entries")
    ok(m1, "claim", id=idea)
    fact = act(m2, "fact", text="src/cache.py keeps entries for one hour")
    assert fact.ok and "provisional on #1" in fact.text
    assert "**provisional on #1**" in (root / "FACTS.md").read_text()
    ok(m1, "done", id=idea, result="filed nothing new; documented the expiry")
    assert "**provisional" not in (root / "FACTS.md").read_text()
    verify.assert_projections_fresh(root)

    claim = ok(m2, "assert", text="The cache expiry is configurable")
    ok(m1, "contest", id=claim, text="the expiry is a hard-coded constant")
    ok(m1, "fact", text=f"{claim} says the expiry setting is read at startup")
    assert f"**provisional on {claim}**" in (root / "FACTS.md").read_text()
    ok(m2, "retract", id=claim, text="it is a constant")
    verify.assert_projections_fresh(root)
    assert "**provisional" not in (root / "FACTS.md").read_text()


def test_a_write_leaves_no_temp_files_even_when_many_projections_change(root: Path) -> None:
    store = HordeStore(root, "member-1")
    idea = ok(store, "idea", text="Audit src/a.py")
    ok(store, "claim", id=idea)
    ok(store, "finding", text="Bug in src/a.py", concern="bugs", concernDef="plain bugs")
    names = sorted(p.name for p in root.iterdir())
    assert [n for n in names if n.endswith(".tmp")] == []
    assert os.listdir(root / "runs") == ["r1"]
