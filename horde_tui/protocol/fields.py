"""Building blocks of the `horde` tool's parameter models: caps, value types, bases.

Kept apart from the per-action models so the foundation's models (`params`) and the
collaboration models (`collab_params`) share them without importing each other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

TEXT_CAP = 4000
"""Characters in `text`, `result`, `reason`, `note`: a ledger entry, not a document."""
EVIDENCE_CAP = 20000
"""Characters of `evidence`: command output excerpts, quotes, line references."""
NAME_CAP = 200
"""Characters of any other string field (ids, slugs, names, numbers); `bounds` checks
every field's cap in one place."""

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
OptRefList = Annotated[list[str] | None, BeforeValidator(_as_list)]
"""A list that may be left out (None: keep what the entry had), e.g. `dependsOn`."""


def _as_text_list(value: Any) -> Any:
    """`_as_list`, also taking numbers (`ports: [8080]`, `ports: 8080`) as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        return [_number_as_text(v) for v in value]
    return _as_list(value)


def _number_as_text(value: Any) -> Any:
    """Accept `2` as well as `"2"` or `"r2"`: handlers parse it and refuse by rule."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Ref = Annotated[str, BeforeValidator(_number_as_text)]
"""An entry's id (`#3`, `F2`), also sent as a bare number: the MCP Inspector sends
`id=3` as the JSON number 3, and the field's description says the number works."""
OptRef = Annotated[str | None, BeforeValidator(_number_as_text)]
NumberList = Annotated[list[str] | None, BeforeValidator(_as_text_list)]
"""Whole numbers as a list (`ports`), sent as integers or strings."""
Number = Annotated[str | None, BeforeValidator(_number_as_text)]
"""A whole number sent as JSON integer or string (`revision`, `page`, `limit`)."""


class Params(BaseModel):
    """Fields every action accepts."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True)
    action: str
    requestId: str | None = Field(
        default=None,
        description="Any write: an id of your choosing; a retry with the same id returns "
        "the first result and writes nothing.",
    )


def action_of(model: type[Params]) -> str:
    """The one action a parameter model serves: its `action: Literal[...]` value."""
    return str(get_args(model.model_fields["action"].annotation)[0])


class ReadParams(Params):
    detail: Literal["full", "compact"] | None = None
