"""Parameter models of the `horde` tool, one per action, and the tool's JSON schema.

Models validate what one action accepts (unknown fields are refused by name, so a
typo never silently drops data). The schema an LLM sees is one flat object: `action`
plus every field, each described with the actions that use it, because flat schemas
work with strong and small models alike where `oneOf` unions often do not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

TEXT_CAP = 4000
"""Characters in `text`, `result`, `reason`, `note`: a ledger entry, not a document."""
EVIDENCE_CAP = 20000
"""Characters of `evidence`: command output excerpts, quotes, line references."""
NAME_CAP = 200

Importance = Literal["critical", "high", "medium", "low", "info"]
Confidence = Literal["high", "medium", "low"]
Support = Literal["reproduced", "tested", "derived", "sourced", "speculative"]


def _as_list(value: Any) -> Any:
    """Accept `"F1, T2"` as well as `["F1", "T2"]` (key=value callers and small models)."""
    if isinstance(value, str):
        return [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
    return value


Text = Annotated[str, Field(min_length=1)]
RefList = Annotated[list[str], BeforeValidator(_as_list)]


class Params(BaseModel):
    """Fields every action accepts."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    action: str
    requestId: str | None = Field(
        default=None,
        max_length=200,
        description="Any write: an id of your choosing; a retry with the same id returns "
        "the first result and writes nothing.",
    )


class ReadParams(Params):
    detail: Literal["full", "compact"] | None = None


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
    target: str = Field(min_length=1, max_length=NAME_CAP)


class PostParams(Params):
    action: Literal["post"]
    text: Text


class IdeaParams(Params):
    action: Literal["idea"]
    text: Text


class ClaimParams(Params):
    action: Literal["claim"]
    id: str


class DoneParams(Params):
    action: Literal["done"]
    id: str
    result: Text


class DropParams(Params):
    action: Literal["drop"]
    id: str
    reason: str = ""


class RuleOutParams(Params):
    action: Literal["rule-out"]
    id: str
    reason: Text


class FindingParams(Params):
    action: Literal["finding"]
    text: Text
    idea: str | None = None
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
    id: str
    support: Support
    text: str = ""


class AmendParams(Params):
    action: Literal["amend"]
    id: str
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
    id: str
    text: str = ""


class ContestParams(Params):
    action: Literal["contest"]
    id: str
    text: Text


class RetractParams(Params):
    action: Literal["retract"]
    id: str
    text: str = ""


class SupersedeParams(Params):
    action: Literal["supersede"]
    id: str
    text: Text


class ResourceParams(Params):
    action: Literal["resource"]
    name: str = Field(min_length=1, max_length=NAME_CAP)
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


ACTION_MODELS: dict[str, type[Params]] = {
    m.model_fields["action"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (
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
    )
}

CAPS: dict[str, int] = {
    "text": TEXT_CAP,
    "result": TEXT_CAP,
    "reason": TEXT_CAP,
    "note": TEXT_CAP,
    "concernDef": TEXT_CAP,
    "cleanup": 1000,
    "path": 1000,
    "evidence": EVIDENCE_CAP,
}
"""Size caps checked as rules (a refusal a model can act on), not as type errors."""

FIELD_DOCS: dict[str, str] = {
    "text": "The entry's prose (idea, post, finding body, fact, claim, answer, ...).",
    "id": "The entry acted on: '#3' for ideas, 'F2', 'T4', 'C1', 'R5', or the bare number.",
    "idea": "finding: the idea (#N) you claimed that this finding files under.",
    "result": "done: what you found, one line.",
    "reason": "rule-out / drop: why.",
    "concern": "finding: a slug from CONCERNS.md (e.g. 'sql-injection').",
    "concernDef": "finding: definition of a new concern slug.",
    "concernNew": "finding: true to create a slug that looks like an existing one.",
    "support": "finding / verify: reproduced, tested, derived, sourced or speculative.",
    "importance": "finding: critical, high, medium, low or info.",
    "confidence": "finding: high, medium or low.",
    "evidence": "finding: exact evidence (paths with line numbers, command output, quotes).",
    "deltaOf": "finding / fact: the F# or T# this adds distinct evidence to.",
    "supersedes": "finding: the F# this corrects.",
    "name": "resource: the shared resource's name.",
    "cleanup": "resource: command run at finalize to tear down an external runtime object.",
    "path": "resource: where it lives, inside the working directory.",
    "note": "amend: why the finding changed.",
    "target": "inspect: an id (F3, #2, T1, C4, R1, E12) or 'answer'.",
    "cites": "solved: the F#/T#/A# the answer rests on.",
    "ideas": "contest-solved: idea ids (#N) that must close before re-proposal.",
    "owner": "list: only ideas held by this member.",
    "detail": "reads: 'full' includes every entry's full prose.",
    "requestId": "any write: retry key; a repeat returns the first result.",
}


def tool_schema() -> dict[str, Any]:
    """The `horde` tool definition (OpenAI function format) with one flat parameter object."""
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": sorted(ACTION_MODELS), "description": "What to do."}
    }
    for model in ACTION_MODELS.values():
        schema = model.model_json_schema()
        for name, prop in schema.get("properties", {}).items():
            if name == "action" or name in properties:
                continue
            prop = dict(prop)
            prop.pop("title", None)
            prop.pop("default", None)
            # A field shared by several actions keeps only its type here: `text` may be
            # empty for `confirm` but not for `post`. Each action's model checks lengths.
            for bound in ("minLength", "maxLength"):
                prop.pop(bound, None)
            prop["description"] = FIELD_DOCS.get(name, prop.get("description", name))
            properties[name] = _flatten_nullable(prop)
    return {
        "type": "function",
        "function": {
            "name": "horde",
            "description": "Read and write the horde's shared ledgers (.horde/). One action per call.",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": ["action"],
                "additionalProperties": False,
            },
        },
    }


def _flatten_nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null]` -> X, so small models see a plain type."""
    options = prop.get("anyOf")
    if options:
        non_null = [o for o in options if o.get("type") != "null"]
        if len(non_null) == 1:
            merged = {k: v for k, v in prop.items() if k != "anyOf"}
            merged.update(non_null[0])
            return merged
    return prop
