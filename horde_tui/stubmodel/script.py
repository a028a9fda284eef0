"""Scripts for the stub model: what each member's next chat completion answers.

A script is a JSON object `{member: [step, ...]}`; `"*"` is the script of every member
that has none of its own (each member still walks its own copy). Steps are validated
strictly (unknown keys are errors) because a typo in a test script should fail the
test loudly rather than play a silently different conversation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

FALLBACK = "*"
"""The script key used for members without a script of their own."""


class ToolCallSpec(BaseModel):
    """One tool call the model makes; `arguments` may be a dict or raw (even invalid) JSON."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def arguments_json(self) -> str:
        """The arguments as the JSON string OpenAI sends; a str is passed through as-is."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


class Step(BaseModel):
    """One scripted reply: content and/or tool calls, or an HTTP error when `status` is set."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    status: int | None = Field(default=None, ge=400, le=599)
    error_message: str | None = None
    retry_after: str = "0"
    """A 429's `retry-after` header (seconds); other statuses send none."""
    delay_ms: int = Field(default=0, ge=0)
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    repeat: int = Field(default=1, ge=1)


DONE = Step(content="Done.")
"""The reply once a member's script is used up: text and no tool call ends an agent loop."""

Scripts = dict[str, list[Step]]
ScriptsInput = Mapping[str, Sequence[Step | Mapping[str, Any]]]

_SCRIPTS: TypeAdapter[Scripts] = TypeAdapter(Scripts)


def parse_scripts(data: object) -> Scripts:
    """Validate scripts given as Steps or plain JSON data; pydantic errors name the bad step."""
    return _SCRIPTS.validate_python(data)


def load_scripts(path: Path) -> Scripts:
    """Read and validate a script file (a JSON object of member -> steps)."""
    return _SCRIPTS.validate_json(path.read_bytes())
