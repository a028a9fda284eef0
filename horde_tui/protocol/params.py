"""Parameter models of the `horde` tool, one per action (the JSON schema is `schema.py`).

Models validate what one action accepts (unknown fields are refused by name, so a
typo never silently drops data). The schema an LLM sees is one flat object: `action`
plus every field, each described with the actions that use it, because flat schemas
work with strong and small models alike where `oneOf` unions often do not.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from horde_tui.protocol.collab_params import COLLAB_CAPS, COLLAB_MODELS
from horde_tui.protocol.fields import (
    EVIDENCE_CAP,
    NAME_CAP,
    TEXT_CAP,
    Confidence,
    Importance,
    OptRef,
    Params,
    ReadParams,
    Ref,
    RefList,
    Support,
    Text,
    action_of,
)

__all__ = ["EVIDENCE_CAP", "NAME_CAP", "TEXT_CAP", "Params", "ReadParams"]


class ListParams(ReadParams):
    action: Literal["list"]
    owner: str | None = None


class FindingsParams(ReadParams):
    action: Literal["findings"]
    concern: str | None = None


class FactsParams(ReadParams):
    action: Literal["facts"]


class ClaimsParams(ReadParams):
    action: Literal["claims"]


class ResourcesParams(ReadParams):
    action: Literal["resources"]


class ConcernsParams(ReadParams):
    action: Literal["concerns"]


class InspectParams(ReadParams):
    action: Literal["inspect"]
    target: str = Field(min_length=1)


class PostParams(Params):
    action: Literal["post"]
    text: Text


class IdeaParams(Params):
    action: Literal["idea"]
    text: Text


class ClaimParams(Params):
    action: Literal["claim"]
    id: Ref


class DoneParams(Params):
    action: Literal["done"]
    id: Ref
    result: Text


class DropParams(Params):
    action: Literal["drop"]
    id: Ref
    reason: str = ""


class RuleOutParams(Params):
    action: Literal["rule-out"]
    id: Ref
    reason: Text


class FindingParams(Params):
    action: Literal["finding"]
    text: Text
    idea: OptRef = None
    concern: str | None = None
    concernDef: str | None = None
    concernNew: bool = False
    support: Support = "speculative"
    importance: Importance | None = None
    confidence: Confidence | None = None
    evidence: str = ""
    deltaOf: str | None = None
    supersedes: str | None = None


class VerifyParams(Params):
    action: Literal["verify"]
    id: Ref
    support: Support
    text: str = ""


class AmendParams(Params):
    action: Literal["amend"]
    id: Ref
    text: Text
    note: Text


class FactParams(Params):
    action: Literal["fact"]
    text: Text
    deltaOf: str | None = None


class AssertParams(Params):
    action: Literal["assert"]
    text: Text


class ConfirmParams(Params):
    action: Literal["confirm"]
    id: Ref
    text: str = ""


class ContestParams(Params):
    action: Literal["contest"]
    id: Ref
    text: Text


class RetractParams(Params):
    action: Literal["retract"]
    id: Ref
    text: str = ""


class SupersedeParams(Params):
    action: Literal["supersede"]
    id: Ref
    text: Text


class ResourceParams(Params):
    action: Literal["resource"]
    name: str = Field(min_length=1)
    text: str = ""
    cleanup: str = ""
    path: str = ""


class SolvedParams(Params):
    action: Literal["solved"]
    text: Text
    cites: RefList = Field(default_factory=list)


class ConfirmSolvedParams(Params):
    action: Literal["confirm-solved"]
    text: str = ""


class ContestSolvedParams(Params):
    action: Literal["contest-solved"]
    text: Text
    ideas: RefList = Field(default_factory=list)


MODELS: tuple[type[Params], ...] = (
    ListParams,
    FindingsParams,
    FactsParams,
    ClaimsParams,
    ResourcesParams,
    ConcernsParams,
    InspectParams,
    PostParams,
    IdeaParams,
    ClaimParams,
    DoneParams,
    DropParams,
    RuleOutParams,
    FindingParams,
    VerifyParams,
    AmendParams,
    FactParams,
    AssertParams,
    ConfirmParams,
    ContestParams,
    RetractParams,
    SupersedeParams,
    ResourceParams,
    SolvedParams,
    ConfirmSolvedParams,
    ContestSolvedParams,
    *COLLAB_MODELS,
)
"""Every action's parameter model (the collaboration ones last)."""

ACTION_MODELS: dict[str, type[Params]] = {action_of(m): m for m in MODELS}

CAPS: dict[str, int] = {
    "text": TEXT_CAP,
    "result": TEXT_CAP,
    "reason": TEXT_CAP,
    "note": TEXT_CAP,
    "concernDef": TEXT_CAP,
    "cleanup": 1000,
    "path": 1000,
    "evidence": EVIDENCE_CAP,
    **COLLAB_CAPS,
}
"""Size caps checked as rules (a refusal a model can act on), not as type errors."""
