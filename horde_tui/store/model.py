"""The entities folded from `ledger.jsonl`.

Plain dataclasses (not pydantic): the fold runs once per record in every process and
must stay cheap. Each entity keeps `version`, stamped by `LedgerState.touch` on every
change, so rendered text can be cached per entity and re-rendered only when it changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

IdeaStatus = Literal["open", "claimed", "done", "ruled-out"]
ClaimStatus = Literal["asserted", "confirmed", "contested", "retracted", "superseded"]
Classification = Literal["full", "limited", "disputed", "unreviewed", "superseded"]

IMPORTANCE = ("critical", "high", "medium", "low", "info")
CONFIDENCE = ("high", "medium", "low")
SUPPORT = ("reproduced", "tested", "derived", "sourced", "speculative")
VERDICTS = ("supports", "partially-supports", "refutes")


@dataclass
class Entity:
    """Fields every ledger entry shares."""

    id: str
    by: str
    run: str
    seq: int
    ts: str
    version: int = 0


@dataclass
class HistoryNote:
    """One change in an entry's life (claimed, dropped, contested, ...)."""

    seq: int
    ts: str
    by: str
    what: str
    text: str = ""


@dataclass
class Idea(Entity):
    text: str = ""
    status: IdeaStatus = "open"
    owner: str | None = None
    result: str = ""
    corroborators: list[str] = field(default_factory=list)
    history: list[HistoryNote] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return self.status in ("done", "ruled-out")


@dataclass
class Verification:
    """A `verify` record: someone's own reproduction, at a revision."""

    by: str
    support: str
    text: str
    revision: int
    seq: int


@dataclass
class Review:
    """A V# record: a revision-pinned check with explicit scope and a verdict."""

    id: str
    target: str
    revision: int
    by: str
    verdict: str
    support: str
    checked: str
    unchecked: str
    limits: str
    evidence: str
    run: str
    seq: int


@dataclass
class Finding(Entity):
    idea: str = ""
    concern: str = ""
    text: str = ""
    evidence: str = ""
    support: str = "speculative"
    importance: str | None = None
    confidence: str | None = None
    delta_of: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    revision: int = 1
    corroborators: list[str] = field(default_factory=list)
    verifications: list[Verification] = field(default_factory=list)
    history: list[HistoryNote] = field(default_factory=list)

    @property
    def claim_line(self) -> str:
        """The first line of the prose: what the finding claims."""
        return self.text.strip().splitlines()[0] if self.text.strip() else ""


@dataclass
class Fact(Entity):
    text: str = ""
    delta_of: str | None = None
    provisional_on: str | None = None
    """`#N` (an idea still being audited) or `C#N` (a contested claim), else None."""
    corroborators: list[str] = field(default_factory=list)


@dataclass
class Claim(Entity):
    text: str = ""
    status: ClaimStatus = "asserted"
    supersedes: str | None = None
    superseded_by: str | None = None
    confirmers: list[str] = field(default_factory=list)
    contesters: list[str] = field(default_factory=list)
    history: list[HistoryNote] = field(default_factory=list)


@dataclass
class Resource(Entity):
    name: str = ""
    text: str = ""
    cleanup: str = ""
    path: str = ""
    reusers: list[str] = field(default_factory=list)


@dataclass
class Concern(Entity):
    definition: str = ""


@dataclass
class Post(Entity):
    text: str = ""


@dataclass
class Proposal:
    """One `solved` proposal of a run, with the revisions it pinned."""

    run: str
    by: str
    text: str
    cites: list[str]
    pins: dict[str, int]
    seq: int
    ts: str
    round: int = 1
    status: Literal["pending", "validated", "contested", "withdrawn"] = "pending"
    validated_by: str | None = None
    contested_by: str | None = None
    contest_text: str = ""
    contest_ideas: list[str] = field(default_factory=list)
    withdrawn_reason: str = ""


@dataclass
class RunInfo:
    """A `## Run <id>` heading: where a run's board posts and findings start."""

    id: str
    task_sha256: str
    seq: int
    ts: str
