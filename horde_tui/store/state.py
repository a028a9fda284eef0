"""`LedgerState`: every ledger folded from `ledger.jsonl`, plus the match indexes.

The same fold runs in every process, on records it read from disk and on records it is
about to append, so a writer's in-memory state always equals a fresh fold of the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from horde_tui.store.ledgers import (
    answers,
    board,
    claims,
    concerns,
    facts,
    findings,
    ideas,
    resources,
)
from horde_tui.store.ledgers.common import Fold, RenderCache
from horde_tui.store.model import (
    Claim,
    Concern,
    Entity,
    Fact,
    Finding,
    Idea,
    Post,
    Proposal,
    Resource,
    Review,
    RunInfo,
)
from horde_tui.store.textmatch import MatchIndex

E = TypeVar("E", bound=Entity)

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
):
    for _op, _fold in _module.OPS.items():
        FOLDS[_op] = _fold
        OP_KIND[_op] = _kind
OP_KIND["run.start"] = "board"

ALSO_CHANGES: dict[str, frozenset[str]] = {
    # FINDINGS.md carries a `## Run <id>` heading per run, like BOARD.md.
    "run.start": frozenset({"findings"}),
    # A fact is rendered "provisional on #N / C#N" while that idea is open or that claim
    # contested, so closing, reopening or moving them changes FACTS.md too.
    **dict.fromkeys(
        ("idea.done", "idea.ruleout", "idea.drop", "idea.release"), frozenset({"facts"})
    ),
    **dict.fromkeys(
        ("claim.confirm", "claim.contest", "claim.retract", "claim.supersede"),
        frozenset({"facts"}),
    ),
}
"""Record op -> other projections whose rendering depends on what the op changes."""

RENDERERS = {
    "ideas": ideas.render,
    "board": board.render,
    "findings": findings.render,
    "facts": facts.render,
    "claims": claims.render,
    "resources": resources.render,
    "concerns": concerns.render,
}

PREFIXES = {
    "ideas": "#",
    "findings": "F",
    "facts": "T",
    "claims": "C",
    "resources": "R",
    "reviews": "V",
}
_ID = re.compile(r"^\s*(#|[A-Za-z])?\s*(\d+)\s*$")
_NUMBERED = re.compile(r"^(#|[A-Z])(\d+)$")


class FoldError(ValueError):
    """A record names an entry that does not exist or carries an unknown op."""


@dataclass
class LedgerState:
    """Everything in `ledger.jsonl`, folded."""

    seq: int = 0
    ideas: dict[str, Idea] = field(default_factory=dict)
    findings: dict[str, Finding] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    concerns: dict[str, Concern] = field(default_factory=dict)
    posts: list[Post] = field(default_factory=list)
    reviews: dict[str, Review] = field(default_factory=dict)
    reviews_by_target: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    proposals: dict[str, list[Proposal]] = field(default_factory=dict)
    resource_by_name: dict[str, str] = field(default_factory=dict)
    idea_index: MatchIndex = field(default_factory=MatchIndex)
    finding_index: MatchIndex = field(default_factory=MatchIndex)
    fact_index: MatchIndex = field(default_factory=MatchIndex)
    claim_index: MatchIndex = field(default_factory=MatchIndex)
    resource_index: MatchIndex = field(default_factory=MatchIndex)
    skipped: list[str] = field(default_factory=list)
    """One line per record that could not be folded (kept visible in projections)."""
    highest: dict[str, int] = field(default_factory=dict)
    """Prefix -> highest number folded. Not `len(table)`: a corrupt or skipped line leaves a
    gap, and counting entries would hand out an id that a later entry already holds."""
    _caches: dict[str, RenderCache] = field(default_factory=dict, repr=False)

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
        m = _NUMBERED.match(str(record.get("id", "")))
        if m:
            self.highest[m.group(1)] = max(self.highest.get(m.group(1), 0), int(m.group(2)))
        return OP_KIND[op]

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
                kinds.update(RENDERERS)
                continue
            if kind:
                kinds.add(kind)
                kinds |= ALSO_CHANGES.get(rec.get("op", ""), frozenset())
        return kinds

    def render_cache(self, kind: str) -> RenderCache:
        cache = self._caches.get(kind)
        if cache is None:
            cache = self._caches[kind] = RenderCache()
        return cache

    def next_id(self, kind: str) -> str:
        """The next id of a kind: one more than the highest ever used (ids never reuse)."""
        table: dict[str, Any] = getattr(self, kind)
        prefix = PREFIXES[kind]
        return f"{prefix}{max(len(table), self.highest.get(prefix, 0)) + 1}"

    def entries_by_run(self, entries: Sequence[E]) -> list[tuple[str, list[E]]]:
        """Group entries under every run heading, in run order (empty runs included)."""
        groups: dict[str, list[E]] = {run: [] for run in self.runs}
        for e in entries:
            groups.setdefault(e.run, []).append(e)
        return list(groups.items())

    def render(self, kind: str) -> str:
        text = RENDERERS[kind](self)
        if self.skipped:
            text += (
                "\n## Skipped ledger lines\n\n" + "\n".join(f"- {s}" for s in self.skipped) + "\n"
            )
        return text


def normalize_id(raw: str, prefix: str) -> str | None:
    """`'#3'`, `'3'`, `'F3'`, `'f3'` -> `'#3'`/`'F3'` for `prefix`; None if another kind."""
    m = _ID.match(str(raw))
    if not m:
        return None
    given = (m.group(1) or "").upper()
    if given and given != prefix.upper():
        return None
    return f"{prefix}{int(m.group(2))}"
