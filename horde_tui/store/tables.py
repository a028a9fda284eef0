"""`LedgerTables`: the folded ledgers, the type every ledger module's fold works on.

Below `store/ledgers/` and `state.py` (which wires the ledger modules into one fold), so a
ledger module never imports the state that imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from horde_tui.store.ledgers.common import RenderCache
from horde_tui.store.model import (
    Artifact,
    Claim,
    Concern,
    Entity,
    Evidence,
    Fact,
    Finding,
    Idea,
    Post,
    Proposal,
    Resource,
    Review,
    RunHeading,
    Thread,
)
from horde_tui.store.projection import EntrySource, Projections
from horde_tui.store.textmatch import MatchIndex

Fold = Callable[["LedgerTables", dict[str, Any]], None]
"""One record op's fold: changes the tables (`touch` before changing an entry)."""


@dataclass
class LedgerTables:
    """Every ledger's entries as folded so far: what a ledger module's fold reads and changes.

    `state.LedgerState` adds the fold itself (which op goes to which ledger module); the
    ledger modules type their state as this, below them, so they import nothing above.
    """

    ENTRY_SOURCES: ClassVar[Mapping[str, EntrySource]] = {}
    """Projection kind -> its entries and how one renders (`state.ENTRIES`)."""

    seq: int = 0
    last_change: dict[str, int] = field(default_factory=dict)
    """Projection kind -> the seq of the last record that changed it: a projection
    rendered at that seq or later is up to date (`store.ProjectedMarks`)."""
    ideas: dict[str, Idea] = field(default_factory=dict)
    findings: dict[str, Finding] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)
    resources: dict[str, Resource] = field(default_factory=dict)
    concerns: dict[str, Concern] = field(default_factory=dict)
    posts: list[Post] = field(default_factory=list)
    reviews: dict[str, Review] = field(default_factory=dict)
    reviews_by_target: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, RunHeading] = field(default_factory=dict)
    proposals: dict[str, list[Proposal]] = field(default_factory=dict)
    resource_by_name: dict[str, str] = field(default_factory=dict)
    threads: dict[str, Thread] = field(default_factory=dict)
    threads_by_target: dict[str, list[str]] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    """`run/E#` -> evidence (event ids are numbered per run)."""
    evidence_by_target: dict[str, list[str]] = field(default_factory=dict)
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    artifact_by_name: dict[str, str] = field(default_factory=dict)
    """`run/name` -> A# (see `ledgers.artifacts.name_key`)."""
    delivered: dict[str, int] = field(default_factory=dict)
    """Member -> ledger seq up to which its inbox was delivered (`inbox.deliver`)."""
    actors: set[str] = field(default_factory=set)
    """Everyone who wrote a ledger record: the members a message may be addressed to."""
    idea_index: MatchIndex = field(default_factory=MatchIndex)
    finding_index: MatchIndex = field(default_factory=MatchIndex)
    fact_index: MatchIndex = field(default_factory=MatchIndex)
    claim_index: MatchIndex = field(default_factory=MatchIndex)
    resource_index: MatchIndex = field(default_factory=MatchIndex)
    skipped: list[str] = field(default_factory=list)
    """One line per record that could not be folded (kept visible in projections)."""
    highest: dict[str, int] = field(default_factory=dict)
    """Prefix -> highest number folded or shown by a corrupt line (`reserve`). Not
    `len(table)`: a corrupt or skipped line leaves a gap, and counting entries would hand
    out an id that a later entry already holds."""
    requests: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """(run, actor, requestId) -> the receipt (`id`, `text`) of the write that request made.
    The ledger records carry it, so a retry finds it even when the writer died before
    its outcome event."""
    _caches: dict[str, RenderCache] = field(default_factory=dict, repr=False, compare=False)
    _projections: Projections = field(init=False, repr=False, compare=False)
    _changes: int = field(default=0, repr=False, compare=False)
    """Changes folded so far: stamps `Entity.version`, so a version is never reused, not
    even by an entry re-added under the same id."""

    def __post_init__(self) -> None:
        self._projections = Projections(self.ENTRY_SOURCES)

    def touch(self, kind: str, entity: Entity) -> None:
        """Note that the fold creates or changes `entity`, an entry of projection `kind`.

        Bumps its version and marks it, and every entry watching it, for re-rendering. Fold
        functions call it on create and *before* they mutate an entry, so a record that
        fails half-way (and is skipped) still leaves what it changed marked.
        """
        self._changes += 1
        entity.version = self._changes
        self._projections.touch(self, kind, entity)

    def stamp(self, entity: Entity) -> None:
        """Bump the version of an entity no markdown projection shows (threads, artifacts),
        so a cached rendering of it is redone after a change."""
        self._changes += 1
        entity.version = self._changes

    def watch(self, kind: str, ident: str, dep_kind: str, dep_id: str) -> None:
        """Re-render `dep_id` (of `dep_kind`) whenever `ident` (of `kind`) is touched."""
        self._projections.watch(kind, ident, dep_kind, dep_id)

    def entry_texts(self, kind: str) -> Sequence[str]:
        """Rendered entries of projection `kind`, in ledger order (the cache itself)."""
        return self._projections.current(self, kind).entries()

    def entry_texts_by_run(self, kind: str) -> list[tuple[str, Sequence[str]]]:
        """Rendered entries of `kind` under every run, in run order (empty runs included)."""
        return self._projections.current(self, kind).grouped(self.runs)
