"""`HordeStore`: the one write path to `.horde/`, used by every process.

A write is a transaction under `.horde/.lock`:

0. (before taking the lock) fold what was appended to `ledger.jsonl` and the run's
   `events.jsonl` since this process last looked: a fresh process starts from the
   checkpoint of the fold (`checkpoint`), so the lock is never held for a whole fold;
1. settle a torn tail left by a crashed writer (cut, kept aside in `<file>.torn` and
   reported as a `torn-tail` event in the run), then read only the bytes appended to
   `ledger.jsonl` and the run's `events.jsonl` since this process last looked;
2. answer a repeated `requestId` from the same actor with the first outcome;
3. ask the action's decision function (pure, over the folded state) what to write;
4. record the intent event, append the ledger records with one `write`, fold them;
5. record the outcome event and release;
6. (after the release) bring the markdown projections up to date under
   `.projecting.lock` (`projected`: only those still behind this fold), fsync
   `ledger.jsonl` and `events.jsonl`, then answer; then save a new checkpoint if one is
   due.

The acknowledgement point is step 6: once the caller has a receipt, the records are on
disk and in the markdown. Rendering and flushing after the release lets the next writer
work meanwhile: the journal commits overlapping flushes of several writers together,
and a writer that renders late finds its projections already rendered by a later one.
Flushing late is safe because a record another writer read (and acted on) was appended
before that writer's own, so the other writer's flush covers it too. A crash anywhere earlier loses only the
unacknowledged write (a killed process's appends are in the page cache; only a power
loss before step 6 loses them). The ledger records carry the `requestId` and the
receipt, in the same append as the change, so a retry after a crash between steps 4
and 5 is answered from the ledger instead of written again.

A full disk or an I/O error never raises out of `transact`: the receipt says what state
the write is in (nothing recorded, or recorded with stale projections that the next
write rewrites), and a retry with the same `requestId` is correct in both.
"""

from __future__ import annotations

import datetime as _dt
import gc
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store import checkpoint, identity
from horde_tui.store.durable import sync_through
from horde_tui.store.events import ERROR_OUTCOME, EventLog
from horde_tui.store.jsonl import (
    TORN,
    AppendError,
    JsonlTail,
    TailRepair,
    append_bytes,
    encode_records,
    repair_torn_tail,
)
from horde_tui.store.ledgers import answers
from horde_tui.store.lock import HordeLock, flocked, lock_timeout_s
from horde_tui.store.paths import LEDGER_FILES, HordePaths, atomic_write_text
from horde_tui.store.projected import read_marks, write_marks
from horde_tui.store.state import OP_KIND, RENDERERS, LedgerState

FREEZE_EVERY_LINES = 200


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ActionRefused(Exception):
    """An action broke a rule; the message is the one line the actor will read."""


@dataclass
class Decision:
    """What an action wants written, and the receipt to return."""

    ok: bool
    text: str
    id: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = ""
    """Short outcome label for the event log (`created`, `duplicate`, `refused`, ...)."""


@dataclass
class Receipt:
    """What the caller gets back: the same shape whether fresh or a replayed retry."""

    ok: bool
    id: str | None
    text: str
    event: str | None = None
    replayed: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "id": self.id, "text": self.text}


Decide = Callable[[LedgerState], Decision]


class HordeStore:
    """One process's handle on a `.horde/` directory, acting as `actor`."""

    def __init__(self, root: Path, actor: str) -> None:
        self.paths = HordePaths(Path(root))
        self.actor = actor
        self.state = LedgerState()
        self._lock = HordeLock(self.paths, actor)
        self._ledger = JsonlTail(self.paths.ledger)
        self._reported_corrupt = 0
        self._events: dict[str, EventLog] = {}
        self._projections_checked = False
        """The projections on disk were seen to match this process's fold (its first write
        compares them), or the checkpoint it started from vouches for them."""
        self._skips_projected = 0
        """How many `state.skipped` lines the last full re-projection listed."""
        self._repairs: list[TailRepair] = []
        """Cuts of the ledger's torn tail not yet reported in a run's events."""
        self._checkpoint_tried = False
        self.checkpoint_lines = 0
        """Ledger lines the fold started from: the checkpoint's, or 0 (folded from scratch)."""
        self._checkpoint_seen = 0
        """Ledger lines of the newest checkpoint this process knows of."""
        self._frozen_at: int | None = None
        """Ledger lines folded at the last `gc.freeze` (None: not yet)."""
        self._appended = False
        """This write appended records (a failed render is then worth a note)."""
        self._unflushed: dict[Path, int] = {}
        """Files appended to under the lock, to make durable after the release (`_flush`),
        with how many of their bytes must be."""
        self._ledger_file: tuple[int, int] | None = None
        """(device, inode) of the ledger file this fold read: only a fold of the file that
        is there now may be saved as its checkpoint."""

    # -- reading ---------------------------------------------------------------

    def refresh(self) -> set[str]:
        """Fold what was appended since the last look; return the kinds that changed.

        Safe without the lock: a torn tail (a writer mid-append) is left unread. The
        first call starts from the checkpoint if there is a good one.
        """
        kinds: set[str] = set()
        if not self._checkpoint_tried:
            self._checkpoint_tried = True
            if self._load_checkpoint():
                kinds = {kind for kind in OP_KIND.values() if kind}
        kinds |= self.state.apply_all(self._ledger.read_new())
        if self._ledger_file is None and self._ledger.offset > 0:
            self._ledger_file = checkpoint.ledger_file(self.paths)
        while self._reported_corrupt < len(self._ledger.corrupt):
            bad = self._ledger.corrupt[self._reported_corrupt]
            self._reported_corrupt += 1
            self.state.reserve(bad.seq, bad.ids)
            self.state.skipped.append(
                f"ledger.jsonl line {bad.line_no} is not a valid record ({bad.error}); "
                "it was skipped and left in the file for a person to fix"
            )
            kinds.update(LEDGER_FILES)
        return kinds

    def _load_checkpoint(self) -> bool:
        """Start from the checkpoint of the fold, if it is good for this ledger."""
        saved = checkpoint.load(self.paths)
        if saved is None:
            return False
        self.state = saved.state
        self._ledger.offset, self._ledger.line_count = saved.offset, saved.line_count
        self._ledger.corrupt = saved.corrupt
        self._reported_corrupt = len(saved.corrupt)  # saved after `refresh` reported them
        self.checkpoint_lines = self._checkpoint_seen = saved.line_count
        self._ledger_file = saved.ledger_file
        if saved.projected:
            self._projections_checked = True
            self._skips_projected = len(saved.state.skipped)
        return True

    def save_checkpoint(self) -> bool:
        """Fold what was appended, then save the fold as the checkpoint; False if another
        process is saving one or it could not be written."""
        self.refresh()
        vouched = self._projections_checked and len(self.state.skipped) == self._skips_projected
        if not checkpoint.save(
            self.paths, self.state, self._ledger, folded_from=self._ledger_file, projected=vouched
        ):
            return False
        self._checkpoint_seen = self._ledger.line_count
        return True

    def _checkpoint_if_due(self) -> None:
        """Save a checkpoint once the fold is `EVERY_LINES` past the newest one (after a
        write, outside the lock). One try per `EVERY_LINES`, by whoever gets there first."""
        if self._ledger.line_count - self._checkpoint_seen < checkpoint.EVERY_LINES:
            return
        self._checkpoint_seen = max(self._checkpoint_seen, checkpoint.saved_lines(self.paths))
        if self._ledger.line_count - self._checkpoint_seen < checkpoint.EVERY_LINES:
            return
        self._checkpoint_seen = self._ledger.line_count
        self.save_checkpoint()

    @property
    def corrupt_lines(self) -> list[int]:
        return [c.line_no for c in self._ledger.corrupt]

    def events(self, run: str) -> EventLog:
        log = self._events.get(run)
        if log is None:
            log = self._events[run] = EventLog(self.paths.events(run), self.actor)
        log.catch_up()
        return log

    def run_exists(self, run: str) -> bool:
        return self.paths.task(run).exists()

    def stop_clean_requested(self, run: str) -> bool:
        return self.paths.stop_clean_sentinel(run).exists()

    # -- writing -----------------------------------------------------------------

    def ensure_run(self, run: str, task: str | None = None) -> None:
        """Create the run's directory, TASK.md and `## Run` heading once (idempotent)."""
        if self.run_exists(run) and run in self.state.runs:
            return
        self.paths.ensure()
        with self._around_the_lock(None):
            with self._lock.held():
                self._catch_up_locked()
                self._create_run_locked(run, task)
                if self._repairs:
                    self._settle_events(run)
            self._project()
            self._flush()

    def _create_run_locked(self, run: str, task: str | None) -> None:
        run_dir = self.paths.run_dir(run)
        task_path = self.paths.task(run)
        if not task_path.exists():
            run_dir.mkdir(parents=True, exist_ok=True)
            text = (
                task
                if task is not None
                else (
                    f"# Task\n\nManual run `{run}`: entries written with `horde-tui tool` "
                    "outside a supervised run.\n"
                )
            )
            atomic_write_text(task_path, text)
        if run not in self.state.runs:
            sha = hashlib.sha256(task_path.read_bytes()).hexdigest()
            self._append_records([{"op": "run.start", "task_sha256": sha}], run)

    def transact(
        self,
        run: str,
        action: str,
        params: dict[str, Any],
        decide: Decide,
        request_id: str | None = None,
        indexes: Sequence[str] = (),
    ) -> Receipt:
        """Run one write action as a transaction (see the module docstring); `indexes`
        are the match indexes `decide` asks, readied before the lock (`INDEXES`)."""
        try:
            self.paths.ensure()
        except OSError as exc:
            return Receipt(False, None, not_recorded(exc))
        with self._around_the_lock(run, indexes):
            with self._lock.held(while_waiting=self._follow(run, indexes)):
                receipt = self._transact_locked(run, action, params, decide, request_id)
            # Rendered and flushed after the release (module docstring), before the answer.
            receipt.text += self._project() + self._flush()
            return receipt

    def _transact_locked(
        self,
        run: str,
        action: str,
        params: dict[str, Any],
        decide: Decide,
        request_id: str | None,
    ) -> Receipt:
        """Steps 1 to 5 of a write (see the module docstring), under the lock."""
        try:
            self._catch_up_locked()
            if not self.run_exists(run) or run not in self.state.runs:
                self._create_run_locked(run, None)
            log = self._settle_events(run)
        except OSError as exc:
            return Receipt(False, None, not_recorded(exc))
        if request_id:
            # A replay acknowledges what its first writer may have died before flushing.
            self._unflushed |= {self.paths.ledger: self._ledger.offset, log.path: log.end}
            prior = log.outcomes.get((self.actor, request_id))
            if prior is not None:
                return Receipt(
                    bool(prior.get("ok")),
                    prior.get("entry"),
                    str(prior.get("text", "")),
                    prior.get("id"),
                    replayed=True,
                )
            done = self.state.requests.get((run, self.actor, request_id))
            if done is not None:  # written, but its writer died before the outcome
                return Receipt(
                    bool(done.get("ok", True)),
                    done.get("id"),
                    str(done.get("text", "")),
                    replayed=True,
                )
        try:
            decision = decide(self.state)
        except ActionRefused as exc:
            decision = Decision(False, str(exc), outcome="refused")
        base = {"ts": utc_now(), "actor": self.actor, "action": action}
        if request_id:
            base["requestId"] = request_id
        try:
            log.append([{**base, "type": "intent", "params": params}], fsync=False)
        except OSError as exc:
            return Receipt(False, None, not_recorded(exc, ledger=False))
        text = decision.text
        if decision.records:
            records = [dict(r) for r in decision.records]
            if request_id:
                for rec in records:
                    rec["requestId"] = request_id
                records[-1]["receipt"] = {
                    "ok": decision.ok,
                    "id": decision.id,
                    "text": decision.text,
                }
            try:
                self._append_records(records, run)
            except OSError as exc:
                decision = Decision(False, not_recorded(exc), outcome=ERROR_OUTCOME)
                text = decision.text
        outcome = {
            **base,
            "ts": utc_now(),
            "type": "outcome",
            "ok": decision.ok,
            "outcome": decision.outcome or ("ok" if decision.ok else "refused"),
            "entry": decision.id,
            "text": text,
            "seq": self.state.seq,  # the ledger as this answer left it (replay, fork)
        }
        try:
            (event_id,) = log.append([outcome], fsync=False)
            self._unflushed[log.path] = log.end
        except OSError as exc:
            # The ledger carries the requestId: a retry is still answered correctly.
            event_id = None
            text += f" (the outcome could not be logged in events.jsonl: {why(exc)})"
        return Receipt(decision.ok, decision.id, text, event_id)

    def append_event(self, run: str, event: dict[str, Any]) -> str:
        """Append one lifecycle event (e.g. from the parent) under the lock; return its E#.

        Raises `OSError` on a full disk; the event is then not in the file.
        """
        self.paths.ensure()
        with self._lock.held():
            log = self._settle_events(run)
            event = {"ts": utc_now(), "actor": self.actor, **event}
            (event_id,) = log.append([event], fsync=False)
            self._unflushed[log.path] = log.end
        self._flush(strict=True)
        return event_id

    # -- internals -----------------------------------------------------------------

    @contextmanager
    def _around_the_lock(self, run: str | None, indexes: Sequence[str] = ()) -> Iterator[None]:
        """The work of a write that needs no lock, done before and after it.

        Before: fold what was appended to the ledger (a fresh process starts from the
        checkpoint) and to the run's events, and render the projections a first write
        compares; under the lock only the few bytes appended since are left. After the
        release: save a checkpoint if one is due.
        """
        self._fold_unlocked(run, indexes)
        if not self._projections_checked:
            for kind in RENDERERS:
                self.state.render(kind)
        self._freeze_heap()
        yield
        self._checkpoint_if_due()

    def _freeze_heap(self) -> None:
        """Hand the fold to the collector's permanent generation (`gc.freeze`) on this
        process's first write and every `FREEZE_EVERY_LINES` lines folded since.

        The fold is a large heap that lives as long as the process; each full collection
        walked all of it, and twelve writers each folding every record set one off every
        few writes: 27 of them took 3.8 s of CPU in a 4.3 s run of `bench_store.py`'s
        12-writer case at 10,000 entries. Frozen objects are never collected, so only
        garbage with cycles that is alive at that moment is kept (rare, and bounded by the
        ledger's growth).
        """
        if self._frozen_at is not None and (
            self._ledger.line_count - self._frozen_at < FREEZE_EVERY_LINES
        ):
            return
        self._frozen_at = self._ledger.line_count
        gc.freeze()

    def _fold_unlocked(self, run: str | None, indexes: Sequence[str] = ()) -> None:
        """Fold what was appended to the ledger and the run's events, and key the match
        indexes `indexes` names (and those asked before): work that needs no lock."""
        self.refresh()
        self.state.warm_indexes(indexes)
        if run is not None:
            self.events(run)

    def _follow(self, run: str, indexes: Sequence[str]) -> Callable[[], None]:
        """What a writer waiting for the lock does meanwhile: `_fold_unlocked` as the
        holders append, so its own turn under the lock is short (with twelve writers, each
        would otherwise fold eleven writes while holding it)."""

        def catch_up() -> None:
            try:
                self._fold_unlocked(run, indexes)
            except OSError:
                pass  # the catch-up under the lock reads again, and reports

        return catch_up

    def _catch_up_locked(self) -> None:
        self._note_repair(repair_torn_tail(self.paths.ledger))
        self.refresh()
        # Records other writers appended are projected by them (or by whoever renders
        # after them: `projected`). Compare every projection with the fold (rewriting
        # those that differ) only when this process met ledger lines it had to skip
        # (every projection lists them, and the writers that projected the surrounding
        # records may never have read them: a line added by hand), or on this process's
        # first write, unless the checkpoint it started from vouches for the projections.
        if not self._projections_checked or len(self.state.skipped) != self._skips_projected:
            with flocked(self.paths.projection_lock, lock_timeout_s()) as held:
                if not held:
                    return  # compared at a later write; this one's render is noted
                self._clear_dead_temps()
                self._write_projections(set(LEDGER_FILES), only_changed=True)
                marks = read_marks(self.paths.projected)
                write_marks(
                    self.paths.projected, marks | dict.fromkeys(LEDGER_FILES, self.state.seq)
                )
                self._skips_projected = len(self.state.skipped)
            self._projections_checked = True

    def _settle_events(self, run: str) -> EventLog:
        """The run's event log, its torn tail settled and every cut not yet reported
        logged (under the lock, before anything is appended)."""
        log = self.events(run)
        self._note_repair(log.repair())
        self._report_repairs(log)
        return log

    def _note_repair(self, repair: TailRepair) -> None:
        if repair.cut:
            self._repairs.append(repair)

    def _report_repairs(self, log: EventLog) -> None:
        """Log each cut of a torn tail once, as a `torn-tail` event of this run (after
        `log.repair()`): the event log is what a person reading `.horde/` after a crash
        looks at, and it is kept. One that cannot be logged yet is tried again."""
        while self._repairs:
            repair = self._repairs[0]
            event = {
                "ts": utc_now(),
                "actor": self.actor,
                "type": "torn-tail",
                "file": repair.path.name,
                "bytes": repair.cut,
                "lines": repair.lines,
                "kept": repair.kept.name if repair.kept else None,
                "text": repair.describe(),
            }
            log.append([event])
            self._repairs.pop(0)

    def _append_records(self, records: list[dict[str, Any]], run: str) -> None:
        """Append and fold `records` (flushed and projected after the release).

        Raises `OSError` when the records are not in the ledger (a failed append is cut
        off again).
        """
        ts = utc_now()
        writer = identity.writer(self.paths.root, run)  # who really wrote, as seen from here
        stamped = []
        for i, rec in enumerate(records, start=1):
            stamped.append(
                {"seq": self.state.seq + i, "ts": ts, "run": run, "actor": self.actor, **rec}
                | {"writer": writer}
            )
        data = encode_records(stamped)
        append_bytes(self.paths.ledger, data, fsync=False)
        self._ledger.offset += len(data)
        self._unflushed[self.paths.ledger] = self._ledger.offset
        self._ledger.line_count += len(stamped)
        self.state.apply_all(stamped)
        self._appended = True

    def _project(self) -> str:
        """Bring the projections up to date with this fold (after the write lock's
        release, under `.projecting.lock`): those whose mark in `.projected` is older
        than the last change this fold knows of. A note for the receipt ('' if none).

        Every write does this, a refused one too: a writer that died before rendering
        left marks behind, and the next one to look renders what it missed.
        """
        appended, self._appended = self._appended, False
        try:
            with flocked(self.paths.projection_lock, lock_timeout_s()) as held:
                if not held:
                    why_not = f"{self.paths.projection_lock.name} stayed busy"
                else:
                    self._render_stale()
                    return ""
        except OSError as exc:
            why_not = f"they could not be rewritten: {why(exc)}"
        if not appended:
            return ""  # nothing of this write is missing from them
        return (
            f" (recorded in ledger.jsonl, but the markdown ledgers were not rewritten "
            f"({why_not}); they stay stale until the next write rewrites them)"
        )

    def _render_stale(self) -> None:
        """Under `.projecting.lock`: render the projections behind the newest fold."""
        self.refresh()  # the newest fold: whoever else waits here then finds nothing left
        marks = read_marks(self.paths.projected)
        stale = {k for k, seq in self.state.last_change.items() if marks.get(k, 0) < seq}
        if not stale:
            return
        self._clear_dead_temps()
        self._write_projections(stale)
        write_marks(self.paths.projected, marks | dict.fromkeys(stale, self.state.seq))

    def _clear_dead_temps(self) -> None:
        """Under `.projecting.lock`, before rendering: projection temp files are only
        written under it, so any present now are a writer's that died mid-render (a
        SIGKILL between write and rename). Every render clears them, not only each
        process's first write: the supervisor writes for hours."""
        for tmp in self.paths.root.glob(".*.md.*.tmp"):
            tmp.unlink(missing_ok=True)

    def _flush(self, *, strict: bool = False) -> str:
        """Make durable what this process appended under the lock it just released (one
        fsync may cover several writers': `durable`); a note for the receipt ('' if none)
        when a flush fails, or (`strict`) raise."""
        note = ""
        while self._unflushed:
            path = next(iter(self._unflushed))
            end = self._unflushed.pop(path)
            try:
                sync_through(path, end)
            except OSError as exc:
                if strict:
                    raise
                note += (
                    f" (warning: {path.name} holds this write, but flushing it to disk failed: "
                    f"{why(exc)}; a power loss could still lose it)"
                )
        return note

    def _write_projections(self, kinds: set[str], *, only_changed: bool = False) -> None:
        """Regenerate the projections of `kinds`; with `only_changed`, leave the files that
        already read right alone (a check of them all costs reads, not fsyncs)."""
        if "answers" in kinds or "findings" in kinds:
            # A withdrawal or an amended citation can change another run's ANSWER.md.
            for run_id in self.state.proposals:
                self._write_answer(run_id, only_changed)
        # The markdown ledgers are renamed into place but not synced: they are a view of
        # the synced ledger, and a power loss (the one thing that can undo a rename once
        # made) means a reboot, after which every process's first write compares them
        # with its fold (a checkpoint vouches for them only in the boot that saved it).
        # The two syncs were most of a write's lock hold on a loaded machine.
        for kind in sorted(kinds):
            if kind != "answers":
                self._put(self.paths.projection(kind), self.state.render(kind), only_changed)

    def _write_answer(self, run: str, only_changed: bool) -> None:
        text = answers.render(self.state, run)
        if not text:
            return
        run_dir = self.paths.run_dir(run)
        self._put(run_dir / "ANSWER.md", text, only_changed, fsync=True)
        prop = answers.current(self.state, run)
        if prop is not None:
            archive = run_dir / "answers"
            archive.mkdir(exist_ok=True)
            self._put(
                archive / f"round-{prop.round}-{prop.status}.md", text, only_changed, fsync=True
            )

    def _put(
        self,
        path: Path,
        text: str,
        only_changed: bool,
        *,
        fsync: bool = False,
    ) -> bool:
        """Write one projection file; False when `only_changed` found it already right."""
        if only_changed:
            try:
                if path.read_bytes() == text.encode("utf-8"):
                    return False
            except OSError:
                pass
        atomic_write_text(path, text, fsync=fsync)
        return True


def why(exc: OSError) -> str:
    """The error, naming the file when it has one: "Is a directory" alone sends
    nobody to `.horde/ledger.jsonl`."""
    if exc.strerror and exc.filename:
        return f"{exc.strerror}: {exc.filename}"
    return exc.strerror or str(exc)


def not_recorded(exc: OSError, *, ledger: bool = True) -> str:
    """The one line for a write that a full disk or an I/O error stopped (`ledger`: in
    or after the ledger append, where a partial append may be left)."""
    if ledger and isinstance(exc, AppendError) and exc.state == TORN:
        return (
            f"refused: the write to ledger.jsonl failed ({why(exc)}) and its partial bytes "
            "could not be removed; the next write settles whether it was recorded: retry "
            "with the same requestId, which is answered from the ledger if it was"
        )
    return (
        f"refused: the write failed ({why(exc)}); nothing was recorded; free disk space or "
        "fix the error, then retry (the same requestId is safe)"
    )
