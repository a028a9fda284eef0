"""The entities folded from `ledger.jsonl`.

Plain dataclasses (not pydantic): the fold runs once per record in every process and
must stay cheap. Each entity keeps `version`, stamped by `LedgerState.touch` on every
change, so rendered text can be cached per entity and re-rendered only when it changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

IdeaStatus = Literal["open", "claimed", "done", "ruled-out"]
ClaimStatus = Literal["asserted", "confirmed", "contested", "retracted", "superseded"]
Classification = Literal["full", "limited", "disputed", "unreviewed", "legacy", "superseded"]

IMPORTANCE = ("critical", "high", "medium", "low", "info")
CONFIDENCE = ("high", "medium", "low")
SUPPORT = ("reproduced", "tested", "derived", "sourced", "speculative")
VERDICTS = ("supports", "partially-supports", "refutes")
ThreadKind = Literal["question", "blocker", "review-request", "challenge", "handoff", "decision"]
ThreadState = Literal["open", "acked", "responded", "deferred", "resolved"]
ResourceStateName = Literal["building", "ready", "broken", "retired"]
THREAD_KINDS = ("question", "blocker", "review-request", "challenge", "handoff", "decision")
BLOCKING_KINDS = frozenset({"blocker", "challenge"})
"""Thread kinds that block acceptance of their target while not resolved."""
RELATIONS = ("supports", "contradicts", "extends")
ARTIFACT_KINDS = ("runnable", "document")
DOCUMENT_SUFFIXES = (".md", ".txt", ".rst", ".adoc", ".pdf")
RESOURCE_STATES = ("building", "ready", "broken", "retired")


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
    evidence_id: str = ""
    """The E# attached by this call's `evidenceText`, if any."""
    reattests: str = ""
    """The earlier V# this review carries forward (`reattest`), if any."""
    spans: list[dict[str, Any]] = field(default_factory=list)
    """The lines its evidence cites, with their hash (as for a finding)."""

    @property
    def full_scope(self) -> bool:
        """Nothing inside the target's claim or criteria was left unchecked."""
        return not self.unchecked.strip()


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
    claim_lines: list[str] = field(default_factory=list)
    """The claim line of every revision (index 0 is r1): `reattest` refuses across a change."""
    amended_from: set[int] = field(default_factory=set)
    """Revisions an `amend` started from: a review of one may be carried forward."""
    spans: list[dict[str, Any]] = field(default_factory=list)
    """The `path` lines its evidence cites, each with their hash at filing time (quoted
    ones were checked): finalize marks them `stale` or `missing` (`protocol.evidence`)."""

    @property
    def claim_line(self) -> str:
        """The first line of the prose: what the finding claims."""
        return first_line(self.text)


def first_line(text: str) -> str:
    """The first line of a text, stripped ('' for blank text)."""
    return text.strip().splitlines()[0] if text.strip() else ""


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
    state: str = ""
    """Published readiness (building, ready, broken, retired); '' until `resource-state`."""
    lease: str = ""
    ports: list[int] = field(default_factory=list)
    health: str = ""
    generation: int = 0
    """Bumped each time the resource goes back to `building`: a rebuild is a new generation."""


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
    reopened_from: int | None = None
    """The contested round this one reopens (`solved.reopen`), once its named ideas closed."""


@dataclass
class RunHeading:
    """A `## Run <id>` heading: where a run's board posts and findings start."""

    id: str
    task_sha256: str
    seq: int
    ts: str


@dataclass
class ThreadNote:
    """One step of a thread: ack, respond, defer or resolve (`auto` names the V# that
    resolved it on the requester's behalf)."""

    seq: int
    ts: str
    by: str
    what: str
    text: str = ""
    evidence: str = ""
    auto: str = ""


@dataclass
class Thread(Entity):
    """A Q# targeted thread from `by` to `to`, optionally about an F#, A# or the answer."""

    to: str = ""
    kind: str = "question"
    text: str = ""
    target: str | None = None
    target_revision: int | None = None
    state: ThreadState = "open"
    review: str | None = None
    """The refuting V# that opened this challenge."""
    repin: str | None = None
    """`A#@n`: this review-request asks the owner to re-pin that dependency revision."""
    notes: list[ThreadNote] = field(default_factory=list)

    @property
    def responses(self) -> int:
        """How many responses the recipient sent (the repair phase's progress measure)."""
        return sum(1 for n in self.notes if n.what == "respond")

    @property
    def closed(self) -> bool:
        return self.state == "resolved"

    @property
    def blocking(self) -> bool:
        return self.kind in BLOCKING_KINDS and not self.closed


@dataclass
class Evidence:
    """Evidence attached to a target; its id is the E# of the call that carried it."""

    id: str
    run: str
    by: str
    target: str
    relation: str
    text: str
    seq: int
    ts: str
    review: str = ""
    """The V# this evidence was attached with (`review evidenceText=`), if any."""

    @property
    def key(self) -> str:
        """Event ids are numbered per run, so the run is part of the key."""
        return evidence_key(self.run, self.id)


def evidence_key(run: str, event_id: str) -> str:
    return f"{run}/{event_id}"


@dataclass
class ArtifactRevision:
    """Revision n of an artifact: its bytes (by sha256), kind, criteria and pinned deps."""

    n: int
    sha256: str
    kind: str
    criteria: str
    depends_on: dict[str, int]
    size: int
    by: str
    seq: int
    ts: str
    note: str = ""


@dataclass
class Artifact(Entity):
    """A# a file published under `runs/<run>/artifacts/<name>`, owned by its publisher."""

    name: str = ""
    revisions: list[ArtifactRevision] = field(default_factory=list)

    @property
    def current(self) -> ArtifactRevision:
        return self.revisions[-1]

    @property
    def revision(self) -> int:
        return self.current.n

    @property
    def kind(self) -> str:
        return self.current.kind
