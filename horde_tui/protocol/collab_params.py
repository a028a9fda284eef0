"""Parameter models of the collaboration actions: threads, evidence, reviews, artifacts,
resource state, and the `inbox` and `collaboration` reads.

Field names follow the reference's vocabulary (`to`, `kind`, `relation`, `verdict`,
`checked`, `unchecked`, `limits`, `evidenceText`, `artifactKind`, `criteria`,
`dependsOn`). Values a rule judges (a revision number, a port, a page size) are taken
as text and checked by the handler, so a bad one is a refusal naming the rule rather
than a type error.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from horde_tui.protocol.fields import (
    EVIDENCE_CAP,
    NAME_CAP,
    TEXT_CAP,
    Number,
    NumberList,
    OptRef,
    OptRefList,
    Params,
    ReadParams,
    Ref,
    Text,
)

ThreadKind = Literal["question", "blocker", "review-request", "challenge", "handoff", "decision"]
Relation = Literal["supports", "contradicts", "extends"]
Verdict = Literal["supports", "partially-supports", "refutes"]
ReviewSupport = Literal["reproduced", "tested", "derived", "sourced"]
ArtifactKind = Literal["runnable", "document"]
ResourceState = Literal["building", "ready", "broken", "retired"]


class MessageParams(Params):
    action: Literal["message"]
    to: str = Field(min_length=1)
    kind: ThreadKind
    text: Text
    target: str | None = None


class InboxParams(ReadParams):
    action: Literal["inbox"]


class AckParams(Params):
    action: Literal["ack"]
    id: Ref
    text: str = ""


class RespondParams(Params):
    action: Literal["respond"]
    id: Ref
    text: Text
    evidence: str = ""


class ResolveParams(Params):
    action: Literal["resolve"]
    id: Ref
    text: Text
    evidence: str = ""
    evidenceText: str = ""


class DeferParams(Params):
    action: Literal["defer"]
    id: Ref
    text: Text


class AttachParams(Params):
    action: Literal["attach"]
    target: str = Field(min_length=1)
    relation: Relation
    text: Text


class ReviewParams(Params):
    action: Literal["review"]
    target: str = Field(min_length=1)
    revision: Number = None
    verdict: Verdict
    support: ReviewSupport
    checked: Text
    unchecked: str = ""
    limits: str = ""
    evidence: str = ""
    evidenceText: str = ""


class ReattestParams(Params):
    action: Literal["reattest"]
    target: str | None = None
    id: OptRef = None
    text: str = ""
    evidence: str = ""
    evidenceText: str = ""


class ArtifactParams(Params):
    action: Literal["artifact"]
    path: str = Field(min_length=1)
    artifactKind: ArtifactKind | None = None
    criteria: str | None = None
    dependsOn: OptRefList = None
    text: str = ""


class ResourceStateParams(Params):
    action: Literal["resource-state"]
    state: ResourceState
    name: str | None = None
    id: OptRef = None
    lease: str = ""
    ports: NumberList = None
    evidence: str = ""


class CollaborationParams(ReadParams):
    action: Literal["collaboration"]
    target: str | None = None
    page: Number = None
    limit: Number = None


COLLAB_MODELS: tuple[type[Params], ...] = (
    MessageParams,
    InboxParams,
    AckParams,
    RespondParams,
    ResolveParams,
    DeferParams,
    AttachParams,
    ReviewParams,
    ReattestParams,
    ArtifactParams,
    ResourceStateParams,
    CollaborationParams,
)

COLLAB_CAPS: dict[str, int] = {
    "evidenceText": EVIDENCE_CAP,
    "checked": TEXT_CAP,
    "unchecked": TEXT_CAP,
    "limits": TEXT_CAP,
    "criteria": TEXT_CAP,
    "lease": NAME_CAP,
}
"""Size caps of the collaboration fields, checked as rules like the foundation's."""
