"""A fresh process folds `ledger.jsonl` outside the lock, from a checkpoint of the fold.

The checkpoint (`.horde/.ledger.checkpoint`) is a cache, never trusted over the ledger:
whatever is wrong with it (garbage, cut short, from another horde, from other code, for
a ledger since edited or replaced), a store ignores it and folds from scratch, and every
result equals a fresh fold. Cold `horde-tui tool` processes are real subprocesses here,
and the lock hold they report (`HORDE_LOCK_TRACE`) is measured inside them.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.cli import cli_argv
from support.paths import BENCHMARKS

from horde_tui.protocol import run_action
from horde_tui.store import checkpoint
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.paths import LEDGER_FILES, HordePaths
from horde_tui.store.state import PREFIXES, LedgerState
from horde_tui.store.store import Decision, HordeStore

try:
    from helpers import verify
except ImportError:  # tests/ made a package
    from tests.helpers import verify

BENCH = BENCHMARKS / "bench_store.py"
RUN = "bench"


@functools.cache
def _bench() -> ModuleType:
    """`bench_store.prefill` writes a big ledger directly (the benchmark's own scene)."""
    spec = importlib.util.spec_from_file_location("bench_store", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prefill(root: Path, entries: int) -> None:
    _bench().prefill(root, entries)


def cold_write(root: Path, trace: Path, text: str) -> float:
    """One `horde-tui tool post` in a fresh process; return its lock hold in ms."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_DIR=str(root), HORDE_RUN=RUN, HORDE_MEMBER="member-9", HORDE_LOCK_TRACE=str(trace)
    )
    proc = subprocess.Popen(
        cli_argv("tool", "post", f"text={text}"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.startswith("ok"), out
    assert trace.exists(), "the tool process wrote no lock trace"
    mine = [ln for ln in trace.read_text().splitlines() if ln.startswith(f"pid={proc.pid} ")]
    assert len(mine) == 1, mine
    return float(_bench().held_ms(mine[0]))


def fresh_fold(root: Path) -> LedgerState:
    """A fold of the whole ledger in this process, with no checkpoint involved."""
    state = LedgerState()
    state.apply_all(JsonlTail(root / "ledger.jsonl").read_new())
    return state


def vouched_checkpoint(root: Path) -> None:
    """A checkpoint saved by a writer, whose projections were checked under the lock."""
    store = HordeStore(root, "parent")
    assert run_action(store, {"action": "post", "text": "checkpoint here"}, run=RUN).ok
    assert store.save_checkpoint()


def assert_same_fold(got: LedgerState, want: LedgerState) -> None:
    assert got == want, "the folded state differs from a fresh fold"
    for kind in LEDGER_FILES:
        assert got.render(kind) == want.render(kind), f"{kind} renders differently"
    for kind in PREFIXES:
        assert got.next_id(kind) == want.next_id(kind)


def test_a_cold_tool_write_holds_the_lock_briefly(tmp_path: Path) -> None:
    """The fold of 3,000 entries happens before the lock, from a checkpoint or not."""
    root = tmp_path / ".horde"
    prefill(root, 3000)
    HordePaths(root).checkpoint.unlink(missing_ok=True)
    trace = tmp_path / "trace"
    no_checkpoint = cold_write(root, trace, "first cold write, no checkpoint")
    HordeStore(root, "parent").save_checkpoint()
    assert HordePaths(root).checkpoint.exists()
    from_checkpoint = cold_write(root, trace, "second cold write, from the checkpoint")
    # Folding 3,000 entries and re-rendering seven projections under the lock took
    # hundreds of ms; catching up on one record takes a few. Generous for a loaded box.
    assert no_checkpoint < 150, f"a cold write held the lock {no_checkpoint:.0f} ms"
    assert from_checkpoint < 150, f"a cold write held the lock {from_checkpoint:.0f} ms"
    _, state = verify.fresh_state(root)
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)


def test_a_fresh_store_folds_only_what_follows_the_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    prefill(root, 400)
    writer = HordeStore(root, "member-1")
    assert run_action(writer, {"action": "idea", "text": "Audit src/a.py"}, run=RUN).ok
    assert writer.save_checkpoint()
    saved = writer._ledger.line_count
    for n in range(3):
        assert run_action(writer, {"action": "fact", "text": f"src/f{n}.py reads env"}, run=RUN).ok
    cold = HordeStore(root, "member-2")
    cold.refresh()
    assert cold.checkpoint_lines == saved
    assert_same_fold(cold.state, fresh_fold(root))
    assert run_action(cold, {"action": "idea", "text": "Audit src/b.py"}, run=RUN).id == "#102"
    _, state = verify.fresh_state(root)
    verify.assert_projections_fresh(root, state)


def _garbage(root: Path, tmp: Path) -> None:
    HordePaths(root).checkpoint.write_bytes(os.urandom(5000))


def _cut_short(root: Path, tmp: Path) -> None:
    path = HordePaths(root).checkpoint
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _payload_flipped(root: Path, tmp: Path) -> None:
    path = HordePaths(root).checkpoint
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))


def _header(root: Path, edit: Callable[[dict[str, object]], None]) -> None:
    path = HordePaths(root).checkpoint
    magic, header, payload = path.read_bytes().split(b"\n", 2)
    fields = json.loads(header)
    edit(fields)
    path.write_bytes(magic + b"\n" + json.dumps(fields).encode() + b"\n" + payload)


def _other_format(root: Path, tmp: Path) -> None:
    _header(root, lambda h: h.update(format=999))


def _other_code(root: Path, tmp: Path) -> None:
    _header(root, lambda h: h.update(code="0" * 64))


def _from_another_horde(root: Path, tmp: Path) -> None:
    other = tmp / "other" / ".horde"
    prefill(other, 450)
    vouched_checkpoint(other)
    shutil.copy(HordePaths(other).checkpoint, HordePaths(root).checkpoint)


def _ledger_replaced(root: Path, tmp: Path) -> None:
    """The same bytes in a new file: not provably the ledger the checkpoint folded."""
    ledger = root / "ledger.jsonl"
    copy = root / "ledger.copy"
    shutil.copy(ledger, copy)
    os.replace(copy, ledger)


def _ledger_edited_in_place(root: Path, tmp: Path) -> None:
    """A hand edit of the last record the checkpoint folded (same file, same length)."""
    ledger = root / "ledger.jsonl"
    offset = json.loads(HordePaths(root).checkpoint.read_bytes().split(b"\n", 2)[1])["offset"]
    data = ledger.read_bytes()
    start = data.rindex(b"in src/", 0, offset)
    with open(ledger, "r+b") as fh:
        fh.seek(start)
        fh.write(b"in lib/")


def _ledger_cut(root: Path, tmp: Path) -> None:
    ledger = root / "ledger.jsonl"
    data = ledger.read_bytes()
    keep = data.rindex(b"\n", 0, len(data) // 2) + 1
    with open(ledger, "r+b") as fh:
        fh.truncate(keep)


def _not_a_state(root: Path, tmp: Path) -> None:
    store = HordeStore(root, "parent")
    store.refresh()
    folded_from = checkpoint.ledger_file(store.paths)
    fake: Any = {"seq": 1}
    assert checkpoint.save(
        store.paths, fake, store._ledger, folded_from=folded_from, projected=True
    )


DAMAGE = [
    _garbage,
    _cut_short,
    _payload_flipped,
    _other_format,
    _other_code,
    _from_another_horde,
    _ledger_replaced,
    _ledger_edited_in_place,
    _ledger_cut,
    _not_a_state,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__.strip("_") for d in DAMAGE])
def test_a_bad_checkpoint_is_ignored_and_the_ledger_folded_afresh(
    tmp_path: Path, damage: Callable[[Path, Path], None]
) -> None:
    root = tmp_path / ".horde"
    prefill(root, 400)
    vouched_checkpoint(root)
    damage(root, tmp_path)
    cold = HordeStore(root, "member-1")
    cold.refresh()
    assert cold.checkpoint_lines == 0, "a bad checkpoint was used"
    assert_same_fold(cold.state, fresh_fold(root))
    result = run_action(cold, {"action": "fact", "text": "src/z.py reads env"}, run=RUN)
    assert result.ok, result.text
    want = fresh_fold(root)
    assert_same_fold(cold.state, want)
    for kind, name in LEDGER_FILES.items():
        assert (root / name).read_text() == want.render(kind)
    # The next checkpoint replaces the bad one and is used.
    assert cold.save_checkpoint()
    again = HordeStore(root, "member-2")
    again.refresh()
    assert again.checkpoint_lines == cold._ledger.line_count
    assert_same_fold(again.state, want)


def test_a_cold_writer_does_not_re_render_projections_the_checkpoint_vouches_for(
    tmp_path: Path,
) -> None:
    """Only BOARD.md changes for a post; a crashed writer's unrendered change is still
    rendered (its mark in `.projected` is behind)."""
    root = tmp_path / ".horde"
    prefill(root, 400)
    vouched_checkpoint(root)
    inodes = {name: (root / name).stat().st_ino for name in LEDGER_FILES.values()}
    cold = HordeStore(root, "member-1")
    assert run_action(cold, {"action": "post", "text": "hello"}, run=RUN).ok
    rewritten = {n for n, ino in inodes.items() if (root / n).stat().st_ino != ino}
    assert rewritten == {"BOARD.md"}

    # A writer that died between its append and its projections.
    seq = cold.state.seq + 1
    record = {"seq": seq, "ts": "2026-01-01T00:00:00Z", "run": RUN, "actor": "member-3"}
    record |= {"op": "idea.claim", "id": "#1"}
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(json.dumps(record).encode() + b"\n")
    again = HordeStore(root, "member-2")
    assert run_action(again, {"action": "post", "text": "after the crash"}, run=RUN).ok
    _, state = verify.fresh_state(root)
    verify.assert_projections_fresh(root, state)
    verify.assert_no_leftovers(root)
    assert "[~] #1" in (root / "IDEAS.md").read_text()


def test_a_corrupt_line_after_the_checkpoint_is_listed_as_by_a_fresh_fold(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".horde"
    prefill(root, 400)
    vouched_checkpoint(root)
    with open(root / "ledger.jsonl", "ab") as fh:
        fh.write(b"{not json\n")
    cold = HordeStore(root, "member-1")
    assert run_action(cold, {"action": "post", "text": "hello"}, run=RUN).ok
    assert cold.checkpoint_lines > 0
    assert len(cold.state.skipped) == 1 and cold.corrupt_lines == [cold.checkpoint_lines + 1]
    for kind, name in LEDGER_FILES.items():
        assert "## Skipped ledger lines" in (root / name).read_text(), name
        assert (root / name).read_text() == cold.state.render(kind)


def test_a_checkpoint_is_rewritten_only_after_enough_new_lines(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    prefill(root, 400)
    store = HordeStore(root, "member-1")
    assert store.save_checkpoint()
    path = HordePaths(root).checkpoint
    first = path.stat().st_mtime_ns, path.stat().st_ino
    assert run_action(store, {"action": "post", "text": "one more"}, run=RUN).ok
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == first, "rewritten on every write"

    posts = [{"op": "board.post", "text": f"post {n}"} for n in range(checkpoint.EVERY_LINES)]
    receipt = store.transact(RUN, "test-inject", {}, lambda _s: Decision(True, "ok", None, posts))
    assert receipt.ok
    assert (path.stat().st_mtime_ns, path.stat().st_ino) != first, "never rewritten"
    cold = HordeStore(root, "member-2")
    cold.refresh()
    assert cold.checkpoint_lines == store._ledger.line_count
    assert_same_fold(cold.state, fresh_fold(root))


def test_projections_vouched_for_before_a_reboot_are_compared_again(tmp_path: Path) -> None:
    """A power loss can lose a projection's rename (and the marker), not the fsynced
    ledger: after a reboot the first write of a fresh process compares them all again."""
    root = tmp_path / ".horde"
    prefill(root, 400)
    vouched_checkpoint(root)
    _header(root, lambda h: h.update(boot="another-boot"))
    stale = (root / "IDEAS.md").read_text()
    (root / "IDEAS.md").write_text(stale.replace("#1", "#one"))
    cold = HordeStore(root, "member-1")
    assert run_action(cold, {"action": "post", "text": "after the reboot"}, run=RUN).ok
    assert cold.checkpoint_lines > 0
    _, state = verify.fresh_state(root)
    verify.assert_projections_fresh(root, state)


def test_no_checkpoint_is_saved_for_a_ledger_replaced_since_it_was_folded(
    tmp_path: Path,
) -> None:
    """A fold of the old file must not be saved as the checkpoint of the new one."""
    root = tmp_path / ".horde"
    prefill(root, 400)
    store = HordeStore(root, "member-1")
    store.refresh()
    ledger = root / "ledger.jsonl"
    data = ledger.read_bytes()
    replacement = root / "ledger.new"
    replacement.write_bytes(data.replace(b"in src/", b"in lib/"))
    os.replace(replacement, ledger)
    assert not store.save_checkpoint()
    assert not HordePaths(root).checkpoint.exists()
    cold = HordeStore(root, "member-2")
    cold.refresh()
    assert cold.checkpoint_lines == 0
    assert_same_fold(cold.state, fresh_fold(root))
