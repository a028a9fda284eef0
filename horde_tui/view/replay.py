"""`Replay`: a finished run as it was after event E#, with a cursor that moves.

`horde-tui replay RUN` shows the member table, the ledgers, the threads and the graph as
they stood after one event of the run's `events.jsonl`. Everything comes from two
append-only files: the event log (who did what, when) and the project's `ledger.jsonl`
(every change to the ledgers). Each tool answer's event records the ledger `seq` it
left (`store.transact`), so "the ledger after E#" is the ledger folded up to that seq;
events older than that record are placed by time, as `fork.ledger_seq_at` does.

Moving the cursor must repaint in under 50 ms on a 200,000-event run (issue 19), so:

- `EventIndex` reads the event log once: a `LineIndex` of line offsets, and per event
  its ledger seq, its time and a few flag bits (wrote the ledger, filed a finding, was
  refused, concerns a member), with a sorted list of positions per flag for the jumps.
- `LedgerTimeline` folds the ledger into a `ReplayState` and keeps a snapshot every
  `LEDGER_EVERY` records. A snapshot is shallow copies of the state's containers that
  share the entries with the live fold; the fold calls `touch`/`stamp` before it
  changes an entry (the store's own contract, `store.ledgers`), and `ReplayState` then
  gives every snapshot holding that entry a copy of it as it was (copy on write). So a
  snapshot costs a copy of the tables' slots, not of the entries, and moving back is a
  restore of the nearest one plus a fold of at most `LEDGER_EVERY` records.
- `MemberTimeline` and `GraphTimeline` do the same for the member fold
  (`view.members.MemberFold`) and the swimlane (`store.graph.GraphBuilder`), both small,
  with deep copies.

A replay state leaves out what only a writer needs: the match indexes (duplicate
detection) and the projections' dirty marks. The tables are a fresh fold's.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from horde_tui.store import usage
from horde_tui.store.graph import GraphBuilder
from horde_tui.store.jsonl import JsonlTail, parse_record
from horde_tui.store.linefile import BATCH, LineIndex
from horde_tui.store.members import MemberState
from horde_tui.store.paths import HordePaths
from horde_tui.store.state import ALSO_CHANGES, OP_KIND, RENDERERS, LedgerState
from horde_tui.store.textmatch import MatchIndex, TextKey
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor.forecast import finding_yield
from horde_tui.view.ledgers import LedgerView, _finding, _idea
from horde_tui.view.members import MemberFold
from horde_tui.view.rows import LedgerRow
from horde_tui.view.run import RunInfo, read_info
from horde_tui.view.swimlane import SwimlaneLayout, layout

WRITE, FINDING, REFUSAL, MEMBER = 1, 2, 4, 8
"""Flag bits of an event: it changed the ledger, it filed a finding, it was refused, the
member fold takes it (a lifecycle event, or an external member's call)."""
JUMPS = {"write": WRITE, "finding": FINDING, "refusal": REFUSAL}
LEDGER_EVERY = 512
"""Ledger records between snapshots: a move back folds at most this many (~6 ms)."""
FINE = 32
"""Ledger records between the snapshots kept where the cursor went back (see `seek`);
a divisor of `LEDGER_EVERY`."""
MEMBER_EVERY = 256
"""Member-fold events between snapshots."""
GRAPH_EVERY = 512
"""Events between swimlane snapshots (the graph keeps at most `MAX_NODES` nodes)."""
YIELD_PART = 128
"""Findings the cost line's count takes per hold of the tabs' lock (`YieldTally`)."""
MINUTE = 60.0


class ReplayRefused(Exception):
    """One line: which run cannot be replayed, and why."""


# -- the event log, indexed once ----------------------------------------------------------


def event_number(ident: Any, fallback: int) -> int:
    """`E12` -> 12; an event without a readable id keeps its line number."""
    text = str(ident or "")
    digits = text[1:] if text[:1] == "E" else text
    return int(digits) if digits.isdigit() else fallback


class EventIndex:
    """Per event of one `events.jsonl`: its E# number, time, ledger seq and flags."""

    def __init__(self, path: Path, records: list[dict[str, Any]]) -> None:
        self.lines = LineIndex(path)
        self.lines.refresh()
        self.numbers = array("Q")
        self.times = array("d")
        """Epoch seconds of each event (the previous one's when unreadable)."""
        self.latest = array("d")
        """The latest time up to each event: non-decreasing, for the minute jumps."""
        self.seqs = array("Q")
        """The ledger seq after each event."""
        self.flags = array("B")
        self.by_flag: dict[int, array[int]] = {bit: array("Q") for bit in JUMPS.values()}
        self.members = array("Q")
        """Positions of the events the member fold takes, in order."""
        self.run_end: int | None = None
        """Position of the run's `run-end` event, if it has one."""
        self._index(_TimeCut(records))

    def __len__(self) -> int:
        return len(self.numbers)

    def _index(self, by_time: _TimeCut) -> None:
        externals: set[str] = set()
        seq, stamp, latest, answered = 0, 0.0, 0.0, False
        total = len(self.lines)
        for first in range(0, total, BATCH):
            raws = self.lines.raw_lines(first, min(total, first + BATCH))
            for offset, raw in enumerate(raws):
                pos = first + offset
                ev = _intent(raw) or parse_record(raw)[0] or {}
                kind = ev.get("type")
                when = epoch(ev.get("ts"))
                stamp = when if when is not None else stamp
                latest = max(latest, stamp)
                flags = 0
                if kind == "outcome" and isinstance(ev.get("seq"), int):
                    answered = True
                    seq = max(seq, int(ev["seq"]))
                elif not answered:
                    seq = max(seq, by_time.seq(str(ev.get("ts", ""))))
                if seq > (self.seqs[-1] if self.seqs else 0):
                    flags |= WRITE
                if kind == "outcome":
                    if ev.get("ok") is False:
                        flags |= REFUSAL
                    elif ev.get("action") == "finding":
                        flags |= FINDING
                    if str(ev.get("actor", "")) in externals:
                        flags |= MEMBER
                elif kind == "lifecycle":
                    flags |= MEMBER
                    if ev.get("kind") == "member-join" and ev.get("member"):
                        externals.add(str(ev["member"]))
                    elif ev.get("kind") == "run-end" and self.run_end is None:
                        self.run_end = pos
                self.numbers.append(event_number(ev.get("id"), pos + 1))
                self.times.append(stamp)
                self.latest.append(latest)
                self.seqs.append(seq)
                self.flags.append(flags)
                for bit, positions in self.by_flag.items():
                    if flags & bit:
                        positions.append(pos)
                if flags & MEMBER:
                    self.members.append(pos)

    def record(self, pos: int) -> dict[str, Any]:
        return self.lines.record(pos) or {}

    def position_of(self, number: int) -> int | None:
        """The position of event E`number`, or None if the run has none."""
        pos = bisect_left(self.numbers, number)  # numbered in order; else a search
        if pos < len(self.numbers) and self.numbers[pos] == number:
            return pos
        try:
            return self.numbers.index(number)
        except ValueError:
            return None

    def close(self) -> None:
        self.lines.close()


_TYPE, _INTENT, _TS = b'"type":', b'"type":"intent"', b'{"ts":"'


def _intent(raw: bytes) -> dict[str, Any] | None:
    """An intent line's time without parsing it (half the log, and the index needs only
    that of it): the store writes `ts` first and `type` before the params, so the first
    `"type":` is the record's own (a quote inside a string is escaped)."""
    at = raw.find(_TYPE)
    if at < 0 or raw.find(_INTENT, at, at + len(_INTENT)) != at or not raw.startswith(_TS):
        return None
    end = raw.find(b'"', len(_TS))
    return {"ts": raw[len(_TS) : end].decode(), "type": "intent"} if end > 0 else None


class _TimeCut:
    """The ledger seq of the records stamped no later than a time (`fork`'s rule for
    events older than the `seq` in outcome events)."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        pairs = sorted((str(r.get("ts", "")), int(r["seq"])) for r in records)
        self.stamps = [ts for ts, _ in pairs]
        self.best = list(_running_max(seq for _, seq in pairs))

    def seq(self, ts: str) -> int:
        n = bisect_right(self.stamps, ts)
        return self.best[n - 1] if n else 0


def _running_max(values: Iterator[int]) -> Iterator[int]:
    best = 0
    for value in values:
        best = max(best, value)
        yield best


def ledger_records(horde_dir: Path) -> list[dict[str, Any]]:
    """Every whole record of the project's ledger, in file order."""
    records = JsonlTail(HordePaths(horde_dir).ledger).read_new()
    return [r for r in records if isinstance(r.get("seq"), int)]


# -- the ledger, folded with copy-on-write snapshots --------------------------------------


class _NoIndex(MatchIndex):
    """A match index that keeps nothing: a replay never asks for duplicates."""

    def add(self, entry: str, key: TextKey) -> None:
        return None

    def add_text(self, entry: str, text: str) -> None:
        return None

    def remove(self, entry: str) -> None:
        return None


COW_TABLES = ("ideas", "findings", "facts", "claims", "resources", "threads", "artifacts")
"""Tables whose entries the fold changes in place (after `touch` or `stamp`)."""
DEEP_FIELDS = frozenset({"proposals"})
"""Fields whose entries change without a `touch` (a proposal's status): copied whole."""
_SKIP = frozenset({"_projections", "_caches", "before_change"})


@dataclass
class ReplayState(LedgerState):
    """A `LedgerState` that tells `before_change` about each entry it is about to
    change, and keeps no match indexes or projection marks (see the module docstring)."""

    idea_index: MatchIndex = field(default_factory=_NoIndex)
    finding_index: MatchIndex = field(default_factory=_NoIndex)
    fact_index: MatchIndex = field(default_factory=_NoIndex)
    claim_index: MatchIndex = field(default_factory=_NoIndex)
    resource_index: MatchIndex = field(default_factory=_NoIndex)
    before_change: Callable[[Any], None] | None = field(default=None, repr=False, compare=False)

    def touch(self, kind: str, entity: Any) -> None:
        self.stamp(entity)

    def stamp(self, entity: Any) -> None:
        if self.before_change is not None:
            self.before_change(entity)
        self._changes += 1
        entity.version = self._changes

    def watch(self, kind: str, ident: str, dep_kind: str, dep_id: str) -> None:
        return None


Snapshot = dict[str, Any]


def _copy_field(name: str, value: Any) -> Any:
    if name in DEEP_FIELDS:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        if value and isinstance(next(iter(value.values())), list):
            return {k: list(v) for k, v in value.items()}
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, set):
        return set(value)
    return value


_STATE_FIELDS = [
    f.name for f in fields(ReplayState) if f.name not in _SKIP and f.default_factory is not _NoIndex
]


def capture(state: LedgerState) -> Snapshot:
    """The state's containers, copied one level down (entries shared); see the module
    docstring for why that is enough."""
    return {name: _copy_field(name, getattr(state, name)) for name in _STATE_FIELDS}


def tables(state: LedgerState) -> Snapshot:
    """What a fold produced, for comparing two folds (not the indexes and caches)."""
    return {name: getattr(state, name) for name in _STATE_FIELDS if not name.startswith("_")}


class LedgerTimeline:
    """The ledger folded up to any record count, fast in both directions."""

    def __init__(self, records: list[dict[str, Any]], every: int = LEDGER_EVERY) -> None:
        self.records = records
        self.seqs = array("Q", (int(r["seq"]) for r in records))
        self.every = every
        self.snapshots: dict[int, Snapshot] = {}
        self._shared: set[int] = set()
        """ids of live entries that some snapshot holds too."""
        self._tables: dict[type, str] = {}
        """Entry type -> the table holding entries of that type (learnt on the way)."""
        self.fine: dict[int, Snapshot] = {}
        """Snapshots every `FINE` records in one stretch (`fine_base` on), see `seek`."""
        self.fine_base: int | None = None
        self.state = self._fresh()
        self.at = 0
        """Records folded into `state`."""
        self._take_snapshot()

    def _fresh(self) -> ReplayState:
        state = ReplayState()
        state.before_change = self._copy_on_write
        return state

    def count_at(self, seq: int) -> int:
        """Records with a seq up to `seq` (the ledger is written in seq order)."""
        return bisect_right(self.seqs, seq)

    def seek_seq(self, seq: int) -> set[str]:
        return self.seek(self.count_at(seq))

    def seek(self, count: int) -> set[str]:
        """Fold to the first `count` records; return the ledger kinds that changed.

        Forward folds on from where it is; back restores the nearest snapshot and folds
        forward. A short step back also keeps, for the stretch between two snapshots it
        landed in, snapshots every `FINE` records, so the next steps back fold at most
        that many.
        """
        count = max(0, min(count, len(self.records)))
        if count == self.at:
            return set()
        coarse = max(b for b in self.snapshots if b <= count)
        base = max([coarse, *(f for f in self.fine if f <= count)])
        if count > self.at and (self.at >= base or count - self.at <= self.every):
            return self._forward(count)  # (restoring a snapshot ahead costs more)
        changed = self._kinds(min(count, self.at), max(count, self.at))
        stepping = 0 < self.at - count <= FINE  # one step back: more are likely to follow
        if stepping and self.fine_base != coarse:  # another stretch: its own snapshots
            self.fine, self.fine_base = {}, coarse
        self._restore(base)
        self._forward(count, fine=stepping)
        return changed

    def _forward(self, count: int, fine: bool = False) -> set[str]:
        """Fold on to `count`; with `fine` (going back), keep the fine snapshots."""
        changed: set[str] = set()
        fine_base = self.fine_base if fine else None
        while self.at < count:
            inside = fine_base is not None and fine_base <= self.at < fine_base + self.every
            step = FINE if inside else self.every
            stop = min(count, (self.at // step + 1) * step)
            changed |= self.state.apply_all(self.records[self.at : stop])
            self.at = stop
            if stop % self.every == 0 and stop not in self.snapshots:
                self._take_snapshot()
            elif stop % step == 0 and step == FINE and stop not in self.fine:
                self._take_snapshot(self.fine)
        return changed

    def _kinds(self, lo: int, hi: int) -> set[str]:
        """The kinds records `lo..hi-1` change (moving back over them changes them back)."""
        out: set[str] = set()
        for rec in self.records[lo:hi]:
            op = str(rec.get("op", ""))
            kind = OP_KIND.get(op)
            out |= {kind} if kind else set(RENDERERS) if kind is None else set()
            out |= ALSO_CHANGES.get(op, frozenset())
        return out

    def _entries(self, snap: Snapshot) -> Iterator[Any]:
        for name in COW_TABLES:
            yield from snap[name].values()

    def _take_snapshot(self, into: dict[int, Snapshot] | None = None) -> None:
        snap = capture(self.state)
        (self.snapshots if into is None else into)[self.at] = snap
        self._shared.update(map(id, self._entries(snap)))

    def _restore(self, at: int) -> None:
        snap = self.snapshots[at] if at in self.snapshots else self.fine[at]
        state = self._fresh()
        for name, value in snap.items():
            setattr(state, name, _copy_field(name, value))
        self.state, self.at = state, at
        self._shared = set(map(id, self._entries(snap)))

    def _copy_on_write(self, entity: Any) -> None:
        """`entity` is about to change: every snapshot holding it gets it as it is now."""
        if id(entity) not in self._shared:
            return
        self._shared.discard(id(entity))
        kept = detached(entity)
        ident = getattr(entity, "id", None)
        table = self._tables.get(type(entity))
        for snap in [*self.snapshots.values(), *self.fine.values()]:
            for name in (table,) if table else COW_TABLES:
                if snap[name].get(ident) is entity:
                    snap[name][ident] = kept
                    self._tables[type(entity)] = table = name


def detached(entity: Any) -> Any:
    """A copy of `entity` that its fold cannot change: its own lists, sets and dicts.
    What they hold (history notes, verifications, messages) is appended, never changed,
    so one level is enough (the property test in `test_replay` checks it)."""
    kept = copy.copy(entity)
    for name, value in vars(kept).items():
        if isinstance(value, list | set | dict):
            setattr(kept, name, copy.copy(value))
    return kept


def fold_upto(records: list[dict[str, Any]], seq: int) -> LedgerState:
    """A fresh fold of the records with a seq up to `seq` (what a replay must equal)."""
    state = LedgerState()
    state.apply_all([r for r in records if int(r["seq"]) <= seq])
    return state


# -- the member fold and the swimlane, snapshotted -----------------------------------------


class MemberTimeline:
    """`MemberFold` of the events before a position, with snapshots of its states."""

    def __init__(
        self, run_dir: Path, manifest: dict[str, Any], events: EventIndex, every: int = MEMBER_EVERY
    ) -> None:
        self.fold = MemberFold(run_dir, manifest)
        self.events = events
        self.every = every
        self.done = 0
        """Member events (`EventIndex.members`) folded."""
        self.snapshots: dict[int, dict[str, MemberState]] = {0: copy.deepcopy(self.fold.states)}

    def seek(self, at: int) -> bool:
        """Fold the events before position `at`; True if the fold changed."""
        count = bisect_left(self.events.members, at)
        if count == self.done:
            return False
        base = max(b for b in self.snapshots if b <= count)
        if count < self.done or self.done < base:
            self.fold.states = copy.deepcopy(self.snapshots[base])
            self.done = base
        while self.done < count:
            self.fold.apply(self.events.record(self.events.members[self.done]))
            self.done += 1
            if self.done % self.every == 0 and self.done not in self.snapshots:
                self.snapshots[self.done] = copy.deepcopy(self.fold.states)
        return True

    def members(self, live: bool) -> list[MemberState]:
        return self.fold.members(live)


class UsageTimeline:
    """Each member's model calls from the run's `usage.jsonl`, summed up to any moment.

    The member fold's turns, tokens and cost come from the transcripts, which are not
    cut at a moment; the gateway's usage file is one line a call with its time, so the
    member table at the cursor counts the calls made by then. Cumulative totals per
    member make that a bisect. An unpriced call makes the cost unknown from then on
    (`store.usage`), as the live table does.
    """

    def __init__(self, path: Path) -> None:
        calls: dict[str, list[tuple[float, int, int, Any]]] = {}
        for rec in JsonlTail(path).read_new() if path.exists() else ():
            try:
                member, ts = str(rec["member"]), float(rec["ts"])
                tokens = int(rec.get("prompt_tokens") or 0), int(rec.get("completion_tokens") or 0)
            except (KeyError, TypeError, ValueError):
                continue  # a line the gateway did not write: not a call
            calls.setdefault(member, []).append((ts, *tokens, rec.get("cost_usd")))
        self.times: dict[str, list[float]] = {}
        self.totals: dict[str, list[tuple[int, int, float | None]]] = {}
        """Member -> (prompt, completion, cost) after each of its calls, in time order."""
        for member, made in calls.items():
            made.sort(key=lambda call: call[0])
            total = _Usage()
            self.times[member] = [call[0] for call in made]
            running = self.totals[member] = []
            for _, prompt, completion, cost in made:
                usage.fold(total, prompt, completion, cost)
                running.append((total.prompt_tokens, total.completion_tokens, total.cost_usd))

    def __bool__(self) -> bool:
        return bool(self.times)

    def lay_over(self, state: MemberState, when: float) -> None:
        """Set `state`'s turns, tokens and cost to its calls made by `when`."""
        n = bisect_right(self.times.get(state.name, ()), when)
        state.turns = n
        state.prompt_tokens, state.completion_tokens, state.cost_usd = (
            self.totals[state.name][n - 1] if n else (0, 0, 0.0)
        )


@dataclass
class _Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


def copy_builder(builder: GraphBuilder) -> GraphBuilder:
    """A builder that feeding the original cannot change: its own containers (nodes and
    edges are frozen; an intent's params are replaced, never changed)."""
    kept = copy.copy(builder)
    graph = builder.graph
    kept.graph = replace(
        graph,
        lanes=list(graph.lanes),
        lane_labels=dict(graph.lane_labels),
        nodes=list(graph.nodes),
        edges=list(graph.edges),
    )
    kept.node_ids = set(builder.node_ids)
    kept.pending = dict(builder.pending)
    return kept


class GraphTimeline:
    """The swimlane of the events before a position, with snapshots of the builder."""

    def __init__(
        self, members: list[tuple[str, str]], path: Path, every: int = GRAPH_EVERY
    ) -> None:
        self.lines = LineIndex(path)
        self.lines.refresh()
        self.every = every
        self.builder = GraphBuilder(members)
        self.snapshots: dict[int, GraphBuilder] = {0: copy_builder(self.builder)}
        self._layout: tuple[int, SwimlaneLayout] | None = None

    def layout_at(self, at: int) -> SwimlaneLayout:
        if self._layout is not None and self._layout[0] == at:
            return self._layout[1]
        base = max(b for b in self.snapshots if b <= at)
        if at < self.builder.fed or self.builder.fed < base:
            self.builder = copy_builder(self.snapshots[base])
        while self.builder.fed < at:
            stop = min(at, (self.builder.fed // self.every + 1) * self.every)
            self.builder.feed(self.lines.record(i) or {} for i in range(self.builder.fed, stop))
            if stop % self.every == 0 and stop not in self.snapshots:
                self.snapshots[stop] = copy_builder(self.builder)
        shown = layout(self.builder.graph_so_far())
        self._layout = (at, shown)
        return shown


# -- the replay -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """Where the replay stands: after the event at `at - 1` (E`number`)."""

    at: int
    total: int
    number: int
    time: float
    kind: str
    actor: str
    seq: int


class Replay:
    """A finished run and a cursor over its events (see the module docstring)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.horde_dir = self.run_dir.parent.parent
        self.info: RunInfo
        self.info, manifest = read_info(self.run_dir)
        records = ledger_records(self.horde_dir)
        self.events = EventIndex(self.run_dir / "events.jsonl", records)
        if not len(self.events):
            self.events.close()
            raise ReplayRefused(
                f"refused: run {self.run_dir.name} has no events to replay "
                f"({self.run_dir / 'events.jsonl'} is empty or missing)"
            )
        # The spacing is read here, not bound as defaults, so a test can make it small.
        self.ledger = LedgerTimeline(records, LEDGER_EVERY)
        self.member_fold = MemberTimeline(self.run_dir, manifest, self.events, MEMBER_EVERY)
        self.usage = UsageTimeline(self.run_dir / "usage.jsonl")
        lanes = [(m.name, m.role) for m in self.member_fold.fold.members(True)]
        # The graph folds in its tab's thread: it reads the log through its own index.
        self.graph = GraphTimeline(lanes, self.events.lines.path, GRAPH_EVERY)
        self.at = 0
        self.changed: set[str] = set()
        """Ledger kinds changed by moves not yet shown (`take_changed`)."""
        self.seek(len(self.events))
        self.sync_ledger()

    @property
    def total(self) -> int:
        return len(self.events)

    def seek(self, at: int) -> bool:
        """Put the cursor after the `at`-th event (1..total); True if it moved."""
        at = max(1, min(at, self.total))
        if at == self.at:
            return False
        self.at = at
        self.member_fold.seek(at)
        return True

    def sync_ledger(self) -> None:
        """Fold the ledger to the cursor's seq. Apart from `seek` because the ledger
        tabs fold in their thread (`LedgerSource`): the state changes under their lock."""
        self.changed |= self.ledger.seek_seq(self.events.seqs[self.at - 1])

    def seek_event(self, number: int) -> bool:
        """Put the cursor after event E`number`; ReplayRefused when there is none."""
        pos = self.events.position_of(number)
        if pos is None:
            last = self.events.numbers[-1]
            raise ReplayRefused(
                f"refused: run {self.run_dir.name} has no event E{number}; its events "
                f"are E{self.events.numbers[0]} to E{last}"
            )
        return self.seek(pos + 1)

    def step(self, how: str, direction: int) -> bool:
        """Move by one `event`, `write`, `minute`, `finding` or `refusal`, forward
        (`direction` 1) or back (-1); False when there is nowhere to go."""
        at = self.at
        if how == "event":
            return self.seek(at + direction)
        if how == "minute":
            return self.seek(self._minute_from(at, direction))
        positions = self.events.by_flag[JUMPS[how]]
        if direction > 0:  # the next such event after the cursor's
            i = bisect_right(positions, at - 1)
            return i < len(positions) and self.seek(positions[i] + 1)
        i = bisect_left(positions, at - 1)  # the one before the cursor's
        return i > 0 and self.seek(positions[i - 1] + 1)

    def _minute_from(self, at: int, direction: int) -> int:
        """The last event at most a minute after (before) the cursor's, at least one on."""
        latest = self.events.latest
        target = latest[at - 1] + direction * MINUTE
        found = bisect_right(latest, target)  # events up to the target time
        return max(found, at + 1) if direction > 0 else min(max(found, 1), at - 1)

    def cursor(self) -> Cursor:
        pos = self.at - 1
        ev = self.events.record(pos)
        typ = str(ev.get("type", ""))
        kind = ev.get("kind") if typ == "lifecycle" else None
        label = str(kind or ev.get("action") or typ or "?")
        if typ == "outcome":
            label += f" {ev.get('outcome') or ('ok' if ev.get('ok') else 'refused')}"
        actor = str(ev.get("member") or ev.get("actor") or "")
        return Cursor(
            self.at,
            self.total,
            self.events.numbers[pos],
            self.events.times[pos],
            label,
            actor,
            self.events.seqs[pos],
        )

    @property
    def ended(self) -> bool:
        """Whether the run had ended by the cursor (its `run-end` is at or before it)."""
        return self.events.run_end is not None and self.at > self.events.run_end

    def members(self) -> list[MemberState]:
        """The members at the cursor: their lifecycle from the events before it and,
        when the run kept a usage file, their calls made by its time (an external
        member's turns are its `horde` calls, already counted by the events)."""
        states = self.member_fold.members(not self.ended)
        if self.usage:
            when = self.events.times[self.at - 1]
            for state in states:
                if not state.external:
                    self.usage.lay_over(state, when)
        return states

    def take_changed(self) -> set[str]:
        changed, self.changed = self.changed, set()
        return changed

    def graph_layout(self) -> SwimlaneLayout:
        return self.graph.layout_at(self.at)

    def close(self) -> None:
        self.events.close()
        self.graph.lines.close()
        self.member_fold.fold.close()


# -- what the run screen's tabs read, at the cursor ----------------------------------------


@dataclass
class YieldTally:
    """The cost line's count (`finding_yield`) of the ledger at one seq, made in parts.

    The count weighs every finding's acceptance (a hundred ms on a long run) and must
    not read a fold in progress, so it runs under the tabs' lock; made in parts, a
    tab's reload waiting for the lock goes after the part under way, not the whole
    count. Between parts the fold may move on: the tally then no longer fits.
    """

    state: LedgerState
    seq: int
    parts: list[dict[str, Any]]
    """The findings still to count, `YIELD_PART` a dict."""
    counts: tuple[int, int] = (0, 0)
    """(findings, accepted) counted so far; the count once `done`."""

    @property
    def done(self) -> bool:
        return not self.parts


class ReplayLedgerView(LedgerView):
    """`LedgerView` over the replay's ledger state: a `refresh` folds the ledger to the
    cursor (in the tab's thread, under its lock, like a live fold) and forgets the rows
    of the ledgers that moved."""

    def __init__(self, replay: Replay, run: str | None) -> None:
        super().__init__(replay.horde_dir, run)
        self.replay = replay
        self._seq = -1
        self._yields: dict[int, tuple[int, int]] = {}
        """Ledger seq -> the cost line's count there (a finished run's ledger at a seq
        never changes, so a count once made stays right)."""
        self._built: dict[tuple[str, int], LedgerRow] = {}
        """(entry id, version) -> its row: a finding's or idea's row is made of what its
        fold changes after a `touch` (its reviews too), and a replay's fold of the same
        records stamps the same versions, so a row once built stays right, both ways."""

    @property
    def state(self) -> LedgerState:
        return self.replay.ledger.state

    def _build(self, kind: str) -> list[LedgerRow]:
        """Rows of `kind`, findings and ideas reusing the rows of unchanged entries (a
        long run has thousands; a cursor step changes one)."""
        st, run = self.state, self.run
        if kind == "findings":
            found = [f for f in st.findings.values() if run is None or f.run == run]
            return [self._row(f, _finding) for f in found]
        if kind == "ideas":
            return [self._row(i, _idea) for i in st.ideas.values()]
        return super()._build(kind)

    def _row(
        self, entry: Any, build: Callable[[LedgerState, Any, str | None], LedgerRow]
    ) -> LedgerRow:
        key = (entry.id, entry.version)
        row = self._built.get(key)
        if row is None:
            row = self._built[key] = build(self.state, entry, self.run)
        return row

    def refresh(self) -> set[str]:
        self.replay.sync_ledger()
        seq, self._seq = self._seq, self.state.seq
        return self.take_changes(self.replay.take_changed(), seq)

    def start_yield(self) -> YieldTally:
        """Fold to the cursor and begin the cost line's count there (done already when
        the cursor was at this seq before)."""
        self.refresh()
        state = self.state
        known = self._yields.get(state.seq)
        if known is not None or self.run is None:
            return YieldTally(state, state.seq, [], known or (0, 0))
        found = list(state.findings.items())
        parts = [dict(found[i : i + YIELD_PART]) for i in range(0, len(found), YIELD_PART)]
        return YieldTally(state, state.seq, parts)

    def count_part(self, tally: YieldTally) -> bool:
        """Count the next part of `tally`; False when the fold moved since it began.

        Each part goes through `finding_yield` itself, over a shallow copy of the state
        whose findings are that part's: the same function REPORT.md counts with.
        """
        state = self.state
        if state is not tally.state or state.seq != tally.seq or self.run is None:
            return False
        part = copy.copy(state)
        part.findings = tally.parts.pop(0)
        found, accepted = finding_yield(part, self.run)
        tally.counts = (tally.counts[0] + found, tally.counts[1] + accepted)
        if tally.done:
            self._yields[tally.seq] = tally.counts
        return True


class ReplaySwimlane:
    """What `GraphPane` reads of a `SwimlaneView`, at the replay's cursor."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self._shown = -1

    def refresh(self) -> bool:
        moved, self._shown = self._shown != self.replay.at, self.replay.at
        return moved

    def layout(self) -> SwimlaneLayout:
        return self.replay.graph_layout()

    def close(self) -> None:
        return None
