"""The `horde` tool's JSON schema: one flat object, `action` plus every field.

Flat schemas work with strong and small models alike where `oneOf` unions often do not.
A field several actions share is listed once, with the union of their allowed values;
each action's model still checks what that action accepts. A description's first line
is what the text tool protocol shows (it must stay short: every field of every action
shares one prompt line), the rest is for models that read full tool definitions.
"""

from __future__ import annotations

from typing import Any

from horde_tui.protocol.bounds import LIST_CAP, cap_of
from horde_tui.protocol.collab_params import COLLAB_MODELS
from horde_tui.protocol.fields import action_of
from horde_tui.protocol.params import ACTION_MODELS

TOOL_DOC = (
    "The horde's shared ledgers (.horde/): one action per call.\n"
    "Every text field has a size cap (maxLength; lists maxItems) and may hold newline and "
    "tab but no other control characters; put long output in a file and cite its path."
)
"""The first line is all the text tool protocol shows; the caps reach models that read
full tool definitions, and every refusal states the cap it applied."""
NUMBER_FIELDS = frozenset({"revision", "page", "limit"})
"""Whole numbers, typed `integer` and nothing else: strict clients (Gemini's schema
subset) refuse a list of types. A model that sends one as a string (`"2"`, `"r2"`) is
still understood (`fields.Number`)."""

FIELD_DOCS: dict[str, str] = {
    "action": "",
    "text": "",
    "id": "#3, F2, Q2, V1\nThe entry acted on (#3, F2, T4, C1, R5, Q2, V1); the bare number "
    "works too.",
    "idea": "#N\nfinding: the idea you claimed that this finding files under.",
    "result": "",
    "reason": "",
    "concern": "",
    "concernDef": "",
    "concernNew": "",
    "support": "",
    "importance": "",
    "confidence": "",
    "evidence": "paths:lines\nExact evidence: paths with line numbers, command output, "
    "quotes, E#/T# refs (finding, review, reattest, resolve, respond; resource-state: health).",
    "deltaOf": "F#/T#\nfinding / fact: the F# or T# this adds distinct evidence to.",
    "supersedes": "F#\nfinding: the F# this corrects.",
    "name": "",
    "cleanup": "",
    "path": "",
    "note": "",
    "target": "F#, A#, Q#, E#, answer\ninspect / message / attach / review / reattest / "
    "collaboration: the entry concerned.",
    "cites": "F#/A#/T#\nsolved: the F#, A# (A2 or A2@r3) and T# the answer rests on.",
    "ideas": "#N\ncontest-solved: open ideas the answer waits on; it reopens once they close.",
    "owner": "",
    "detail": "",
    "requestId": "retry id\nany write: a repeat returns the first result and writes nothing.",
    "to": "member\nmessage: the recipient member's name.",
    "kind": "",
    "relation": "",
    "verdict": "",
    "revision": "default latest\nreview: the revision checked.",
    "checked": "",
    "unchecked": "in-scope gaps\nreview: gaps left inside the claim or criteria; "
    "anything here keeps acceptance open. Leave empty for a full-scope review.",
    "limits": "out of scope\nreview: disclosures outside the criteria, recorded as "
    "'accepted with limits', never a blocker.",
    "evidenceText": "kept as an E#\nreview / resolve / reattest: evidence attached in the "
    "same call.",
    "artifactKind": "",
    "criteria": "",
    "dependsOn": "A#@rev\nartifact: revision-pinned dependencies.",
    "state": "",
    "lease": "",
    "ports": "",
    "page": "",
    "limit": "1-100\ncollaboration: records per page (default 25).",
}
"""Field descriptions. The first line is all the text tool protocol shows, and the whole
protocol should fit the 40% of a 6000-character compact cap that `jsonproto` reserves
for it, so fields whose name and allowed values say enough have none; the rest of a
description is for models that read full tool definitions. Every action is documented
in the member system prompt."""


def action_names() -> list[str]:
    """The foundation's actions, then the collaboration actions, each group sorted (so the
    long-standing ones keep their place in prompts that list them)."""
    collab = {action_of(m) for m in COLLAB_MODELS}
    return sorted(set(ACTION_MODELS) - collab) + sorted(collab)


def tool_schema() -> dict[str, Any]:
    """The `horde` tool definition (OpenAI function format) with one flat parameter object."""
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": action_names(), "description": "What to do."}
    }
    for model in ACTION_MODELS.values():
        schema = model.model_json_schema()
        for name, prop in schema.get("properties", {}).items():
            if name == "action":
                continue
            prop = _flatten_nullable(dict(prop))
            if name in properties:
                _merge_enum(properties[name], prop)
                continue
            prop.pop("title", None)
            prop.pop("default", None)
            # A field shared by several actions keeps only its type here: `text` may be
            # empty for `confirm` but not for `post`. Each action's model checks lengths.
            for bound in ("minLength", "maxLength"):
                prop.pop(bound, None)
            if name in NUMBER_FIELDS:
                prop["type"] = "integer"
            doc = FIELD_DOCS.get(name, prop.get("description", name))
            if doc:
                prop["description"] = doc
            else:
                prop.pop("description", None)
            properties[name] = prop
    for name, prop in properties.items():
        if name != "action":
            _add_caps(name, prop)
    return {
        "type": "function",
        "function": {
            "name": "horde",
            "description": TOOL_DOC,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": ["action"],
                "additionalProperties": False,
            },
        },
    }


def _add_caps(name: str, prop: dict[str, Any]) -> None:
    """The bounds `bounds.check_fields` enforces, as JSON schema keywords."""
    kind = prop.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds:
        prop["maxItems"] = LIST_CAP
        items = prop.get("items")
        if isinstance(items, dict) and items.get("type") == "string":
            items["maxLength"] = cap_of(name)
    elif "string" in kinds and "enum" not in prop:
        prop["maxLength"] = cap_of(name)


def _merge_enum(kept: dict[str, Any], other: dict[str, Any]) -> None:
    """Widen a shared field's allowed values to every action's (e.g. `support`)."""
    if "enum" in kept and "enum" in other:
        kept["enum"] += [v for v in other["enum"] if v not in kept["enum"]]
    elif "enum" in kept:
        del kept["enum"]  # another action takes any value of the type


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
