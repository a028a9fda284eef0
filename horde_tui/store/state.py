"""`LedgerState`: every ledger folded from `ledger.jsonl`, plus the match indexes.

The same fold runs in every process, on records it read from disk and on records it is
about to append, so a writer's in-memory state always equals a fresh fold of the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from horde_tui.common.inputs import DIGITS, MAX_DIGITS
from horde_tui.store.ledgers import (
    answers,
    artifacts,
    board,
    claims,
    concerns,
    evidence,
    facts,
    findings,
    ideas,
    resources,
    threads,
)
from horde_tui.store.ledgers.common import RenderCache
from horde_tui.store.projection import EntrySource
from horde_tui.store.tables import Fold, LedgerTables
from horde_tui.store.textmatch import MatchIndex

OP_KIND: dict[str, str] = {}
"""Record op -> the ledger projection it changes (`answers` is the run's ANSWER.md)."""
FOLDS: dict[str, Fold] = {}
for _kind, _module in (
    ("ideas", ideas),
    ("board", board),
    ("concerns", concerns),
    ("findings", findings),
    ("facts", facts),
    ("claims", claims),
    ("resources", resources),
    ("answers", answers),
    # Collaboration records have no markdown ledger of their own (kind ''): the
    # `collaboration`, `inbox` and `inspect` reads and the supervisor's snapshots show them.
    ("", threads),
    ("", evidence),
    ("", artifacts),
):
    for _op, _fold in _module.OPS.items():
        FOLDS[_op] = _fold
        OP_KIND[_op] = _kind
OP_KIND["run.start"] = "board"

ALSO_CHANGES: dict[str, frozenset[str]] = {
    # FINDINGS.md carries a `## Run <id>` heading per run, like BOARD.md.
    "run.start": frozenset({"findings"}),
    # ANSWER.md names the pinned citations that changed since the proposal pinned them.
    "artifact.publish": frozenset({"answers"}),
}
"""Record op -> other projections whose rendering depends on what the op changes.

Dependencies between entries are tracked per entry instead (`LedgerState.watch`): a fact
is rendered "provisional on #N / C#N" while that idea is open or that claim contested, so
a change to that idea or claim changes FACTS.md only when some fact depends on it.
"""

RENDERERS = {
    "ideas": ideas.render,
    "board": board.render,
    "findings": findings.render,
    "facts": facts.render,
    "claims": claims.render,
    "resources": resources.render,
    "concerns": concerns.render,
}

ENTRIES: dict[str, EntrySource] = {
    "ideas": EntrySource("ideas", lambda _state, idea: ideas.render_idea(idea)),
    "board": EntrySource("posts", lambda _state, post: board.render_post(post), by_run=True),
    "findings": EntrySource("findings", lambda st, f: findings.render_finding(st, f), by_run=True),
    "facts": EntrySource("facts", lambda st, fact: facts.render_fact(st, fact)),
    "claims": EntrySource("claims", lambda _state, claim: claims.render_claim(claim)),
    "resources": EntrySource("resources", lambda _state, res: resources.render_resource(res)),
    "concerns": EntrySource("concerns", lambda _state, c: concerns.render_concern(c)),
}
"""Projection kind -> its entries and how one renders (see `projection`). The renderers
are looked up at call time so a test can count the entries a write re-renders."""

PREFIXES = {
    "ideas": "#",
    "findings": "F",
    "facts": "T",
    "claims": "C",
    "resources": "R",
    "reviews": "V",
    "threads": "Q",
    "artifacts": "A",
}
_ID = re.compile(rf"^\s*(#|[A-Za-z])?\s*({DIGITS}{{1,{MAX_DIGITS}}})\s*$")
_NUMBERED = re.compile(rf"^(#|[A-Z])({DIGITS}{{1,{MAX_DIGITS}}})$")


class FoldError(ValueError):
    """A record names an entry that does not exist or carries an unknown op."""


@dataclass
class LedgerState(LedgerTables):
    """Everything in `ledger.jsonl`, folded: the tables plus which ledger module folds
    each record op and renders each projection."""

    ENTRY_SOURCES: ClassVar[Mapping[str, EntrySource]] = ENTRIES

    def apply(self, record: dict[str, Any]) -> str | None:
        """Fold one record; return the projection kind it changed."""
        op = record.get("op", "")
        fold = FOLDS.get(op)
        if fold is None:
            raise FoldError(f"unknown op {op!r}")
        try:
            fold(self, record)
        except KeyError as exc:
            raise FoldError(f"{op} names {exc.args[0]!r}, which does not exist") from None
        self.seq = max(self.seq, int(record.get("seq", 0)))
        if record.get("actor"):
            self.actors.add(str(record["actor"]))
        m = _NUMBERED.match(str(record.get("id", "")))
        if m:
            self.highest[m.group(1)] = max(self.highest.get(m.group(1), 0), int(m.group(2)))
        receipt = record.get("receipt")
        if record.get("requestId") and isinstance(receipt, dict):
            key = (str(record.get("run", "")), str(record.get("actor", "")), record["requestId"])
            self.requests[key] = receipt
        return OP_KIND[op]

    def warm_indexes(self, ready: Sequence[str] = ()) -> None:
        """Key the texts folded since each index was last asked (`MatchIndex.warm`), and
        the whole of each index named in `ready` (see `INDEXES`)."""
        for name in INDEXES:
            index: MatchIndex = getattr(self, name)
            if name in ready:
                index.prepare()
            else:
                index.warm()

    def reserve(self, seq: int, ids: dict[str, int]) -> None:
        """Never hand out again the seq and ids a corrupt line still shows: once a person
        fixes the line, its record must not share them with a later one."""
        self.seq = max(self.seq, seq)
        for prefix, number in ids.items():
            self.highest[prefix] = max(self.highest.get(prefix, 0), number)

    def apply_all(self, records: Sequence[dict[str, Any]], line_hint: str = "") -> set[str]:
        """Fold records read from disk; a bad one is noted in `skipped`, never fatal.

        A skipped record changes every projection: each one lists the skipped lines.
        """
        kinds: set[str] = set()
        for rec in records:
            try:
                kind = self.apply(rec)
            except (FoldError, TypeError, ValueError) as exc:
                self.skipped.append(f"ledger record seq {rec.get('seq', '?')} skipped: {exc}")
                self.seq = max(self.seq, int(rec.get("seq", 0) or 0))
                changed: set[str] = set(RENDERERS)
            else:
                changed = {kind} if kind else set()
                changed |= ALSO_CHANGES.get(rec.get("op", ""), frozenset())
                changed |= self._projections.take_knock_on()
            for name in changed:
                self.last_change[name] = self.seq
            kinds |= changed
        return kinds

    def render_cache(self, kind: str) -> RenderCache:
        """Per-entity text cache for reads that render a subset (`list` by owner)."""
        cache = self._caches.get(kind)
        if cache is None:
            cache = self._caches[kind] = RenderCache()
        return cache

    def next_id(self, kind: str) -> str:
        """The next id of a kind: one more than the highest ever used (ids never reuse)."""
        table: dict[str, Any] = getattr(self, kind)
        prefix = PREFIXES[kind]
        return f"{prefix}{max(len(table), self.highest.get(prefix, 0)) + 1}"

    def render(self, kind: str) -> str:
        text = RENDERERS[kind](self)
        if self.skipped:
            text += (
                "\n## Skipped ledger lines\n\n" + "\n".join(f"- {s}" for s in self.skipped) + "\n"
            )
        return text


INDEXES = ("idea_index", "finding_index", "fact_index", "claim_index", "resource_index")
"""The `MatchIndex` fields of `LedgerState`."""


def normalize_id(raw: str, prefix: str) -> str | None:
    """`'#3'`, `'3'`, `'F3'`, `'f3'` -> `'#3'`/`'F3'` for `prefix`; None if another kind."""
    m = _ID.match(str(raw))
    if not m:
        return None
    given = (m.group(1) or "").upper()
    if given and given != prefix.upper():
        return None
    return f"{prefix}{int(m.group(2))}"
