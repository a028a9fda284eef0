"""Writers killed with SIGKILL mid-write: the next writer repairs, nothing acknowledged is lost.

After each kill a new writer (another process) writes once, and then the files alone must
show: ledger.jsonl parses completely, every acknowledged write is there exactly once, ids
stay gapless, every projection equals a fresh rendering, no temp file or marker is left,
and the run's events.jsonl parses with gapless E# ids.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import HELPERS

from horde_tui.protocol import run_action
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.projected import read_marks
from horde_tui.store.store import HordeStore

try:
    from helpers import killtrial, verify
except ImportError:  # tests/ made a package
    from tests.helpers import killtrial, verify

WRITER = HELPERS / "writer.py"


def start_writer(root: Path, actor: str, tag: str, acks: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, str(WRITER), str(root), actor, tag, "100000", str(acks), *extra]
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)


def kill_after_acks(proc: subprocess.Popen, acks: Path, target: int) -> None:
    """SIGKILL `proc` as soon as it has acknowledged `target` writes (bounded polling)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if acks.exists() and acks.read_bytes().count(b"\n") >= target:
            break
        time.sleep(0.001)
    assert proc.poll() is None, f"the writer exited early: {proc.communicate()[1]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=20)


def repair_and_check(root: Path, acks: list[dict[str, Any]], note: str) -> None:
    """A new writer writes once; then every invariant must hold on disk."""
    result = run_action(HordeStore(root, "repairer"), {"action": "post", "text": note}, run="r1")
    assert result.ok, result.text
    records, state = verify.fresh_state(root)  # parses every line: no torn or corrupt line
    verify.assert_seq_gapless(records)
    verify.assert_add_records_unique(records)
    verify.assert_acks_present(acks, records, state)
    verify.assert_ids_gapless(state)
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)
    verify.assert_events_gapless(root / "runs" / "r1" / "events.jsonl")


@pytest.mark.parametrize("kills", [2, pytest.param(5, marks=pytest.mark.slow)])
def test_writers_killed_at_random_moments(tmp_path: Path, kills: int) -> None:
    """Writers one after another, each SIGKILLed after 3 to 40 acknowledged writes and
    repaired by the next; the full size (5 kills) is the slow run's."""
    root = tmp_path / ".horde"
    rng = random.Random(20261129)
    acks: list[dict[str, Any]] = []
    for attempt in range(1, kills + 1):
        ack_file = tmp_path / f"acks-{attempt}.jsonl"
        proc = start_writer(root, f"member-{attempt}", f"k{attempt}", ack_file)
        kill_after_acks(proc, ack_file, rng.randint(3, 40))
        acks += verify.read_acks(ack_file)
        repair_and_check(root, acks, f"repaired after kill {attempt}")
    assert len(acks) >= kills * 3


@pytest.mark.parametrize(
    ("writers", "writes", "kills"), [(6, 4, 3), pytest.param(12, 8, 6, marks=pytest.mark.slow)]
)
def test_writers_killed_at_random_and_retried(
    tmp_path: Path, writers: int, writes: int, kills: int
) -> None:
    """The kill trial at a size for the suite (6 x 4 writes with 3 kills by default, 12 x 8
    with 6 in the slow run; full size: tests/benchmarks/bench_kill.py): writers, random
    SIGKILLs, each killed writer restarted to retry its first unacknowledged write with the
    same requestId; `killtrial.judge` asserts every acknowledged write present exactly once
    and nothing written twice."""
    figures = killtrial.run(
        tmp_path, writers=writers, writes=writes, kills=kills, seed=20261201, pace_ms=250
    )
    print(f"\nkill trial: {figures.line()}")
    assert figures.kills == kills and figures.retries == kills
    assert figures.writes == writers * writes
    assert (figures.lost, figures.doubled) == (0, 0)


def crash(root: Path, tmp_path: Path, mode: str, at: int) -> list[dict[str, Any]]:
    HordeStore(root, "parent").ensure_run("r1")  # the writer's appends are then its actions
    ack_file = tmp_path / "acks.jsonl"
    proc = start_writer(root, "member-1", "t1", ack_file, "--crash", mode, "--crash-at", str(at))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    acks = verify.read_acks(ack_file)
    assert len(acks) == at - 1
    return acks


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".horde"


@pytest.mark.parametrize("mode, at", [("torn", 3), ("torn", 5), ("torn-batch", 5)])
def test_a_torn_append_is_ignored_by_readers_and_cut_by_the_next_writer(
    root: Path, tmp_path: Path, mode: str, at: int
) -> None:
    before_kill = HordeStore(root, "reader")
    acks = crash(root, tmp_path, mode, at)
    data = (root / "ledger.jsonl").read_bytes()
    assert not data.endswith(b"\n"), "the helper did not leave a torn tail"
    # A reader without the lock folds exactly the acknowledged writes, and no corrupt line.
    tail = JsonlTail(root / "ledger.jsonl")
    seen = tail.read_new()
    assert tail.corrupt == []
    before_kill.refresh()
    assert before_kill.corrupt_lines == [] and before_kill.state.skipped == []
    created = {r["id"] for r in seen if r["op"].endswith(".add") and "id" in r}
    assert created == {a["id"] for a in acks if a["action"] in ("idea", "fact", "finding")}

    repair_and_check(root, acks, "after the torn write")
    records = verify.strict_jsonl(root / "ledger.jsonl")
    # The unacknowledged transaction is gone whole: none of its records survive.
    mine = [r for r in seen if r["actor"] == "member-1"]
    assert [{k: v for k, v in r.items() if k != "more"} for r in records[: len(seen)]] == seen
    assert [r for r in records if r["actor"] == "member-1"] == mine


def test_a_writer_killed_after_its_append_is_projected_by_the_next(
    root: Path, tmp_path: Path
) -> None:
    acks = crash(root, tmp_path, "after-append", 2)  # the claim of #1 is on disk, unprojected
    assert read_marks(root / ".projected").get("ideas", 0) < verify.fresh_state(root)[1].seq
    assert "[ ] #1" in (root / "IDEAS.md").read_text()
    repair_and_check(root, acks, "after the kill")
    assert "[~] #1" in (root / "IDEAS.md").read_text()


def test_a_writer_killed_mid_projection_leaves_no_temp_file(root: Path, tmp_path: Path) -> None:
    acks = crash(root, tmp_path, "mid-projection", 1)
    assert list(root.glob(".*.md.*.tmp")), "the helper did not leave a temp file"
    repair_and_check(root, acks, "after the kill")


def test_a_projection_temp_file_of_a_killed_writer_goes_at_the_next_write(root: Path) -> None:
    """A writer SIGKILLed between writing a projection's temp file and renaming it leaves
    `.IDEAS.md.<pid>.<hex>.tmp`; a long-lived writer (the supervisor, a member)
    that already made its first write clears it at its next one, not never."""
    store = HordeStore(root, "member-1")
    assert run_action(store, {"action": "idea", "text": "Audit src/a.py"}, run="r1").ok
    left = root / ".IDEAS.md.999999.0badf00d.tmp"
    left.write_text("# half a projection\n")
    assert run_action(store, {"action": "idea", "text": "Audit src/b.py"}, run="r1").ok
    assert not left.exists()
