"""`LedgerView`: the six ledgers as table rows, in the reference dashboard's views.

A `HordeStore` acting as `viewer` folds `ledger.jsonl` incrementally (`refresh` reads
only the appended bytes and says which ledgers changed); rows of a ledger are rebuilt
only when it changed, and each row carries a version that moves only when its content
did (`rows.Versions`), so the app updates just the cells that differ.

Threads (Q#, the collaboration inspector's list) are rows too, though they have no
markdown ledger: the fold reports no kind for collaboration records, so a change to
threads is seen from their entity versions (`LedgerState.stamp` draws them from one
counter, so the highest moves whenever any thread changes).
`detail` gives one entry's full text: its ledger entry as Markdown and, for findings and
threads, the collaboration around it (evidence, reviews with their scope, acceptance).

Views (the reference's `?view=clusters`, `?owner=`, `?order=oldest`): `newest` (the
default), `oldest`, `owner` (grouped by member) and, for findings, `clusters` (grouped
like the report, `store.clusters.build_clusters`). Scoped to a run, board and
findings narrow to that run and facts split into this run's and carried ones; ideas,
claims and resources are project-wide, as in the reference.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from horde_tui.store.clusters import Cluster, build_clusters
from horde_tui.store.ledgers.common import one_line, stamp
from horde_tui.store.ledgers.facts import is_provisional
from horde_tui.store.ledgers.findings import classify, label
from horde_tui.store.model import Claim, Fact, Finding, Idea, Post, Resource, Thread
from horde_tui.store.state import ENTRIES, LedgerState
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.forecast import finding_yield
from horde_tui.view.baseline import BaselineColumn
from horde_tui.view.rows import LedgerRow, Versions
from horde_tui.view.threads import finding_page, thread_detail

KINDS = ("ideas", "board", "findings", "facts", "claims", "resources", "threads")
VIEWS = ("newest", "oldest", "owner", "clusters")
COLUMNS: dict[str, tuple[str, ...]] = {
    "ideas": ("by", "run", "also raised by", "result"),
    "board": ("time", "run"),
    "findings": ("labels", "concern", "idea", "revision", "reviews"),
    "facts": ("run", "extends", "confirmed by"),
    "claims": ("run", "confirmed by", "contested by", "supersession"),
    "resources": ("path", "cleanup", "reused by"),
    "threads": ("message", "replies"),
}
"""Names of each ledger's `LedgerRow.extra` cells (after id, status, owner, text)."""
BASE_COLUMNS = {"threads": ("id", "state", "from", "thread")}
"""Names of the first four cells where `id, status, owner, text` would mislead: a
thread's text cell says what it is (`challenge -> member-2 about F3 r1`), so a narrow
table shows that first and the message after it."""
TEXT_CHARS = 160
UNOWNED = "(unclaimed)"


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _idea(st: LedgerState, i: Idea, run: str | None) -> LedgerRow:
    extra = (i.by, i.run, _names(i.corroborators), one_line(i.result, 80))
    return LedgerRow(i.id, i.id, i.status, i.owner or "", _first(i.text), extra)


def _post(st: LedgerState, p: Post, run: str | None) -> LedgerRow:
    return LedgerRow(p.id, p.id, "", p.by, _first(p.text), (stamp(p.ts), p.run))


def _finding(st: LedgerState, f: Finding, run: str | None) -> LedgerRow:
    reviews = len(st.reviews_by_target.get(f.id, []))
    extra = (label(f), f.concern, f.idea, f"r{f.revision}", str(reviews) if reviews else "")
    return LedgerRow(f.id, f.id, classify(st, f), f.by, _first(f.claim_line), extra)


def _fact(st: LedgerState, t: Fact, run: str | None) -> LedgerRow:
    status = [f"provisional on {t.provisional_on}"] if is_provisional(st, t) else []
    if run is not None and t.run != run:
        status.insert(0, "carried")
    extra = (t.run, t.delta_of or "", _names(t.corroborators))
    group = ("this run" if t.run == run else "carried") if run is not None else ""
    return LedgerRow(t.id, t.id, " · ".join(status), t.by, _first(t.text), extra, group)


def _claim(st: LedgerState, c: Claim, run: str | None) -> LedgerRow:
    moved = (f"supersedes {c.supersedes}" if c.supersedes else "") or (
        f"superseded by {c.superseded_by}" if c.superseded_by else ""
    )
    extra = (c.run, _names(c.confirmers), _names(c.contesters), moved)
    return LedgerRow(c.id, c.id, c.status, c.by, _first(c.text), extra)


def _resource(st: LedgerState, r: Resource, run: str | None) -> LedgerRow:
    status = f"reused x{len(r.reusers)}" if r.reusers else ""
    text = _first(f"{r.name}: {r.text}" if r.text else r.name)
    return LedgerRow(r.id, r.id, status, r.by, text, (r.path, r.cleanup, _names(r.reusers)))


def _thread(st: LedgerState, t: Thread, run: str | None) -> LedgerRow:
    about = f" about {t.target}" if t.target else ""
    about += f" r{t.target_revision}" if t.target and t.target_revision else ""
    replies = str(len(t.notes)) if t.notes else ""
    what = f"{t.kind} -> {t.to}{about}"
    return LedgerRow(t.id, t.id, t.state, t.by, what, (_first(t.text), replies))


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return one_line(lines[0], TEXT_CHARS) if lines else ""


class LedgerView:
    """Rows of every ledger for a table, kept current by offset tailing."""

    def __init__(self, horde_dir: Path, run: str | None = None, baseline: str = "") -> None:
        """`baseline`: the run's `--baseline` as asked (a run id or `last`); the
        findings then get a baseline column (`view.baseline`)."""
        self.store = HordeStore(Path(horde_dir), "viewer")
        self.run = run
        self.baseline = BaselineColumn(horde_dir, run, baseline) if baseline and run else None
        self._base: dict[str, list[LedgerRow]] = {}
        """Kind -> rows in ledger order (without versions), rebuilt when the kind changes."""
        self._clusters: list[Cluster] | None = None
        self._cache: dict[tuple[str, str, str | None], list[LedgerRow]] = {}
        self._versions: dict[str, Versions] = {k: Versions() for k in KINDS}
        self._primed = False
        self._threads_stamp = (0, 0)
        self._yield: tuple[int, tuple[int, int]] = (-1, (0, 0))
        """(ledger seq, `finding_yield`) last counted."""

    @property
    def state(self) -> LedgerState:
        return self.store.state

    def refresh(self) -> set[str]:
        """Fold what was appended to `ledger.jsonl`; return the ledgers that changed."""
        seq = self.state.seq
        return self.take_changes(self.store.refresh(), seq)

    def take_changes(self, kinds: set[str], seq: int) -> set[str]:
        """Forget the rows of the ledgers `kinds` names (and of threads when they moved
        since the state was at `seq`); return the ledgers that changed. `refresh` after
        a fold; a replay (`view.replay`) after it moved its state."""
        changed = kinds & set(KINDS)
        if self.state.seq != seq:
            stamp = _threads_stamp(self.state)
            if stamp != self._threads_stamp:
                self._threads_stamp = stamp
                changed.add("threads")
        if not self._primed:
            self._primed, changed = True, set(KINDS)
        if self.baseline is not None and self.baseline.moved(self.state):
            changed.add("findings")  # a review, a thread or a re-report moves the column
        for kind in changed:
            self._base.pop(kind, None)
            for key in [k for k in self._cache if k[0] == kind]:
                del self._cache[key]
        if "findings" in changed:
            self._clusters = None
        return changed

    def finding_yield(self) -> tuple[int, int]:
        """(this run's current findings, how many are accepted), as REPORT.md counts
        them (`supervisor.forecast.finding_yield`); recounted only when the ledger moved
        (a review or a thread changes acceptance without changing a finding)."""
        seq, counts = self._yield
        if seq != self.state.seq:
            counts = finding_yield(self.state, self.run) if self.run is not None else (0, 0)
            self._yield = (self.state.seq, counts)
        return counts

    def columns(self, kind: str) -> tuple[str, ...]:
        """Column names of `kind`'s rows: id, status, owner, text, then its extras."""
        extra = ("baseline",) if kind == "findings" and self.baseline is not None else ()
        return (*BASE_COLUMNS.get(kind, ("id", "status", "owner", "text")), *COLUMNS[kind], *extra)

    def views(self, kind: str) -> tuple[str, ...]:
        return VIEWS if kind == "findings" else VIEWS[:3]

    def rows(self, kind: str, view: str = "newest", owner: str | None = None) -> list[LedgerRow]:
        """`kind`'s rows in `view`, optionally only `owner`'s (the member who holds an
        idea, else who wrote the entry); cached until the ledger changes."""
        if kind not in COLUMNS:
            raise ValueError(f"unknown ledger {kind!r}; one of {', '.join(KINDS)}")
        if view not in self.views(kind):
            raise ValueError(f"{kind} has no {view!r} view; one of {', '.join(self.views(kind))}")
        hit = self._cache.get((kind, view, owner))
        if hit is not None:
            return hit
        base = self._rows_of(kind)
        if owner is not None:
            base = [r for r in base if r.owner == owner]
        if view == "oldest":
            out = list(base)
        elif view == "owner":
            out = sorted(reversed(base), key=lambda r: r.owner or "\uffff")
            out = [_with(r, group=r.owner or UNOWNED) for r in out]
        elif view == "clusters":
            out = self._clustered(base)
        else:  # newest first, inside each group (this run's facts before carried ones)
            rank = {g: i for i, g in enumerate(dict.fromkeys(r.group for r in base))}
            out = sorted(reversed(base), key=lambda r: rank[r.group])
        versions = self._versions[kind]
        out = [_with(r, version=versions.stamp((view, r.key), r)) for r in out]
        self._cache[(kind, view, owner)] = out
        return out

    def owners(self, kind: str) -> list[str]:
        """Members that own or wrote `kind` rows: the choices of an owner filter."""
        return sorted({r.owner for r in self._rows_of(kind) if r.owner})

    def counts(self) -> dict[str, int]:
        """Rows per ledger in this scope (for tab labels)."""
        return {kind: len(self._rows_of(kind)) for kind in KINDS}

    def _rows_of(self, kind: str) -> list[LedgerRow]:
        rows = self._base.get(kind)
        if rows is None:
            rows = self._base[kind] = self._build(kind)
        return rows

    def _build(self, kind: str) -> list[LedgerRow]:
        st, run = self.state, self.run
        if kind == "ideas":
            return [_idea(st, i, run) for i in st.ideas.values()]
        if kind == "board":
            return [_post(st, p, run) for p in st.posts if run is None or p.run == run]
        if kind == "findings":
            found = [f for f in st.findings.values() if run is None or f.run == run]
            if self.baseline is not None:
                return self._against_baseline(found, self.baseline)
            return [_finding(st, f, run) for f in found]
        if kind == "facts":
            rows = [_fact(st, t, run) for t in st.facts.values()]
            # this run's facts first, then the carried ones, each in ledger order
            return sorted(rows, key=lambda r: r.group == "carried") if run else rows
        if kind == "claims":
            return [_claim(st, c, run) for c in st.claims.values()]
        if kind == "threads":
            return [_thread(st, t, run) for t in st.threads.values()]
        return [_resource(st, r, run) for r in st.resources.values()]

    def _against_baseline(self, found: list[Finding], column: BaselineColumn) -> list[LedgerRow]:
        """This run's findings with their baseline cell, then the baseline's findings
        that none of them stands for, under a heading of their own."""
        st, run = self.state, self.run
        column.update(st)
        rows = [_finding(st, f, run) for f in found]
        rows = [_with(r, extra=(*r.extra, column.cell(r.key))) for r in rows]
        theirs = sorted((st.findings[i] for i in column.theirs), key=lambda f: f.seq)
        for f in theirs:
            row = _finding(st, f, run)
            rows.append(_with(row, extra=(*row.extra, column.theirs[f.id]), group=column.group))
        return rows

    def detail(self, kind: str, key: str) -> str:
        """One entry in full, as Markdown ("" when it does not exist (any more))."""
        if kind == "threads":
            thread = self.state.threads.get(key)
            return thread_detail(self.state, thread) if thread else ""
        source = ENTRIES[kind]
        table = getattr(self.state, source.table)
        entity = (
            next((p for p in table if p.id == key), None) if kind == "board" else table.get(key)
        )
        if entity is None:
            return ""
        text = source.render(self.state, entity)
        if kind == "findings":
            text += "\n" + finding_page(self.state, key)
        return text

    def clusters(self) -> list[Cluster]:
        """Ranked clusters of this scope's current (not superseded) findings."""
        if self._clusters is None:
            st = self.state
            theirs = self.baseline.theirs if self.baseline is not None else {}
            current = [
                st.findings[r.key]
                for r in self._rows_of("findings")
                if r.status != "superseded" and r.key not in theirs
            ]
            self._clusters = build_clusters(st, current)
        return self._clusters

    def _clustered(self, base: list[LedgerRow]) -> list[LedgerRow]:
        """Findings grouped by cluster (rank order, lead first), superseded ones last."""
        by_key = {r.key: r for r in base}
        out: list[LedgerRow] = []
        for c in self.clusters():
            ids = [c.lead, *(i for i in c.ids if i != c.lead)]
            members = len(c.members)
            heading = (
                f"{c.lead} · {c.status} · {c.concern}{' (mixed concerns)' if c.mixed else ''}"
                f" · {len(c.ids)} finding{'s' if len(c.ids) != 1 else ''}"
                f" · {members} member{'s' if members != 1 else ''}"
            )
            out += [_with(by_key[i], group=heading) for i in ids if i in by_key]
        placed = {r.key for r in out}
        # What no cluster holds: superseded findings, and a baseline's own rows.
        out += [_with(r, group=r.group or "superseded") for r in base if r.key not in placed]
        return out


def _threads_stamp(state: LedgerState) -> tuple[int, int]:
    return len(state.threads), max((t.version for t in state.threads.values()), default=0)


def _with(row: LedgerRow, **changes: object) -> LedgerRow:
    return replace(row, **changes)  # type: ignore[arg-type]
