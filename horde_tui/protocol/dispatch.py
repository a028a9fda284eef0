"""`run_action`: validate a raw `horde` call, then read or write through the store.

Errors come in two kinds, because callers act on them differently:
- `UsageError` (exit 2): the call itself is malformed (unknown action, missing field,
  wrong type). Nothing is recorded: there is no action to audit.
- a refusal (`ok=False`, exit 1): a well-formed action broke a rule. Writes are refused
  inside the store transaction, so the refusal is in `events.jsonl` too.
"""

from __future__ import annotations

import difflib
import errno
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from horde_tui.protocol import hints
from horde_tui.protocol.actions import (
    artifacts,
    claims,
    collab_reads,
    facts,
    findings,
    ideas,
    reads,
    resources,
    reviews,
    solved,
    threads,
)
from horde_tui.protocol.bounds import check_fields, clipped, field_problem
from horde_tui.protocol.context import ActionContext
from horde_tui.protocol.params import ACTION_MODELS, Params
from horde_tui.protocol.rules import check_wind_down
from horde_tui.protocol.schema import action_names
from horde_tui.store import identity
from horde_tui.store.lock import LockTimeoutError
from horde_tui.store.paths import ACTOR_NAME_RULE, shown, valid_actor_name, valid_run_id
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision, HordeStore, why

WriteHandler = Callable[[ActionContext, Any, LedgerState], Decision]
ReadHandler = Callable[[ActionContext, Any, LedgerState], str]

WRITES: dict[str, WriteHandler] = {
    "post": ideas.post,
    "idea": ideas.idea,
    "claim": ideas.claim,
    "done": ideas.done,
    "drop": ideas.drop,
    "rule-out": ideas.rule_out,
    "finding": findings.finding,
    "verify": findings.verify,
    "amend": findings.amend,
    "fact": facts.fact,
    "assert": claims.assert_,
    "confirm": claims.confirm,
    "contest": claims.contest,
    "retract": claims.retract,
    "supersede": claims.supersede,
    "resource": resources.resource,
    "solved": solved.solved,
    "confirm-solved": solved.confirm_solved,
    "contest-solved": solved.contest_solved,
    "message": threads.message,
    "ack": threads.ack,
    "respond": threads.respond,
    "resolve": threads.resolve,
    "defer": threads.defer,
    "attach": reviews.attach,
    "review": reviews.review,
    "reattest": reviews.reattest,
    "artifact": artifacts.artifact,
    "resource-state": resources.resource_state,
}

ASKS: dict[str, tuple[str, ...]] = {
    "idea": ("idea_index",),
    "claim": ("idea_index", "finding_index"),
    "fact": ("idea_index", "claim_index", "fact_index"),
    "assert": ("claim_index",),
    "finding": ("finding_index",),
    "resource": ("resource_index",),
}
"""The match indexes each write's decision asks (`LedgerState` fields), readied before
the lock: a cold process unpacks them from the checkpoint there, not while holding it.
A test checks that no decision asks another; a miss would cost time, not correctness."""

READS: dict[str, ReadHandler] = {
    "list": reads.list_ideas,
    "findings": reads.list_findings,
    "facts": reads.list_facts,
    "claims": reads.list_claims,
    "resources": reads.list_resources,
    "concerns": reads.list_concerns,
    "inspect": reads.inspect,
    "inbox": collab_reads.inbox,
    "collaboration": collab_reads.collaboration,
}


class UsageError(ValueError):
    """The call is malformed; the message names the field and what it expects."""


@dataclass
class ToolResult:
    ok: bool
    id: str | None
    text: str
    usage_error: bool = False
    event: str | None = None

    @property
    def exit_code(self) -> int:
        return 2 if self.usage_error else 0 if self.ok else 1

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "id": self.id, "text": self.text}


_TYPE_WORDS = {
    "string_type": "a string",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "list_type": 'a list of ids such as ["F1", "T2"]',
    "literal_error": "one of",
    "string_too_short": "a non-empty string",
    "string_unicode": "valid Unicode text (an unpaired surrogate such as \\ud800 is not)",
}


def _shown(value: Any) -> str:
    """`value` as a usage line quotes it: a repr cut short, never the whole submission."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _named(name: str) -> str:
    """A name from the call (a field, an action) as a usage line quotes it: control
    characters escaped, a long one cut short."""
    shown = name if name.isprintable() else repr(name)[1:-1]
    return shown if len(shown) <= 60 else f"{shown[:40]}... ({len(name)} characters)"


ACTION_SYNONYMS: dict[str, str] = {
    "create_idea": "idea",
    "add_idea": "idea",
    "new_idea": "idea",
    "add_finding": "finding",
    "create_finding": "finding",
    "file_finding": "finding",
    "report_finding": "finding",
    "list_ideas": "list",
    "get_ideas": "list",
    "list_findings": "findings",
    "get_findings": "findings",
    "claim_idea": "claim",
    "complete": "done",
    "finish": "done",
    "comment": "post",
    "answer": "solved",
    "submit": "solved",
    "verify_finding": "verify",
}
"""Names models invent for actions (`create_idea`), mapped to the action they meant."""

FIELD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "ideaid": ("idea", "id"),
    "findingid": ("target", "id"),
    "finding": ("target", "id"),
    "severity": ("importance",),
    "priority": ("importance",),
    "description": ("text",),
    "content": ("text",),
    "body": ("text",),
    "message": ("text",),
    "title": ("text",),
}
"""Field names models invent (lower case, without `_` or `-`), with the real names they
may mean, tried in order against the fields the action accepts: `idea_id` is `idea` for
a finding, `id` for a claim."""


def _squashed(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _near_actions(action: str) -> list[str]:
    """Valid actions a misnamed one probably meant: a known synonym, then spellings."""
    names = action_names()
    folded = action.strip().lower().replace("_", "-")
    near = [ACTION_SYNONYMS[action.lower()]] if action.lower() in ACTION_SYNONYMS else []
    if folded in names:
        near.append(folded)
    near += difflib.get_close_matches(folded, names, n=3, cutoff=0.6)
    return list(dict.fromkeys(near))[:3]


def _real_field(field: str, accepted: list[str]) -> str | None:
    """The accepted field a misnamed one means, or None when nothing is close."""
    for candidate in FIELD_SYNONYMS.get(_squashed(field), ()):
        if candidate in accepted:
            return candidate
    by_squash = {_squashed(name): name for name in accepted}
    if _squashed(field) in by_squash:
        return by_squash[_squashed(field)]
    close = difflib.get_close_matches(field, accepted, n=1, cutoff=0.75)
    return close[0] if close else None


def _unknown_field(raw: Mapping[str, Any], action: str, model: type[Params]) -> str | None:
    """One line for the first field the action does not take, naming the real field when
    one is near. Checked before validation so a misnamed required field is reported as
    misnamed, not as missing."""
    accepted = [n for n in model.model_fields if n != "action"]
    extra = next((k for k in raw if k != "action" and k not in model.model_fields), None)
    if extra is None:
        return None
    real = _real_field(extra, [n for n in accepted if n not in raw])
    hint = f"; the field is '{real}'" if real else ""
    return (
        f"field '{_named(extra)}' is not accepted by action '{action}'{hint} "
        f"(accepted: {', '.join(accepted)})"
    )


def _describe(error: ErrorDetails, action: str, model: type[Params]) -> str:
    field = _named(".".join(str(part) for part in error.get("loc", ())) or "?")
    kind = error.get("type", "")
    accepted = ", ".join(n for n in model.model_fields if n != "action")
    if kind == "extra_forbidden":
        return f"field '{field}' is not accepted by action '{action}' (accepted: {accepted})"
    if kind == "missing":
        return f"field '{field}' is required for action '{action}'"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"field '{field}' must be one of {expected}, got {_shown(error.get('input'))}"
    want = _TYPE_WORDS.get(kind, error.get("msg", "a valid value").lower())
    return f"field '{field}' must be {want}, got {_shown(error.get('input'))}"


def parse_params(raw: dict[str, Any]) -> Params:
    """Validate one call; raise `UsageError` with one line on the first problem."""
    if not isinstance(raw, dict):
        raise UsageError("the horde tool takes a JSON object with an 'action' field")
    action = raw.get("action")
    if not isinstance(action, str) or not action:
        raise UsageError(f"field 'action' is required; actions: {', '.join(action_names())}")
    model = ACTION_MODELS.get(action)
    if model is None:
        near = _near_actions(action)
        meant = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        raise UsageError(
            f"unknown action '{_named(action)}'; {meant}actions: {', '.join(action_names())}"
        )
    cleaned = {k: v for k, v in raw.items() if v is not None}
    if problem := _unknown_field(cleaned, action, model):
        raise UsageError(problem)
    try:
        params = model.model_validate(cleaned)
    except ValidationError as exc:
        raise UsageError(_describe(exc.errors()[0], action, model)) from None
    if params.requestId is not None:
        # Recorded with every event of the call and matched on retries: a bad one is a
        # malformed call, refused before anything is written.
        problem = field_problem("requestId", params.requestId)
        if problem:
            raise UsageError(problem.removeprefix("refused: "))
    return params


def run_action(
    store: HordeStore,
    raw: dict[str, Any],
    *,
    run: str,
    role: str = "member",
    siblings: Mapping[str, Path] | None = None,
) -> ToolResult:
    """Validate and perform one `horde` action as `store.actor` in `run`; `siblings`
    (a swarm's other hordes) are only ever read."""
    try:
        params = parse_params(raw)
        if not valid_run_id(run):
            # The run id becomes a directory name; a bad one is a malformed call, not a crash.
            raise UsageError(
                f"invalid run id {shown(run)}; use letters, digits, '.', '_' or '-' (max 80)"
            )
        if not valid_actor_name(store.actor):
            raise UsageError(
                f"actor {shown(store.actor)} is not a member name (names rule: {ACTOR_NAME_RULE}); "
                "set HORDE_MEMBER to a name such as member-1"
            )
    except UsageError as exc:
        return ToolResult(False, None, f"usage: {exc}", usage_error=True)
    ctx = ActionContext(store, run, role, siblings or {})
    action = params.action
    try:
        if action in READS:
            check_fields(params.model_dump(exclude_none=True, exclude={"action"}))
            store.refresh()
            return ToolResult(True, None, READS[action](ctx, params, store.state))
        handler = WRITES[action]
        if not store.run_exists(run):
            # A refused write must not create the run it was refused in; in an existing
            # run the refusal is decided (and recorded) inside the transaction below.
            forged = identity.refusal(store.paths.root, run, store.actor)
            if forged:
                return ToolResult(False, None, forged)
        submitted = params.model_dump(exclude_none=True, exclude={"action", "requestId"})

        def decide(state: LedgerState) -> Decision:
            forged = identity.refusal(store.paths.root, run, store.actor)
            if forged:
                raise ActionRefused(forged)
            check_fields(submitted)
            check_wind_down(action, ctx.winding_down)
            return handler(ctx, params, state)

        receipt = store.transact(
            run, action, clipped(submitted), decide, params.requestId, ASKS.get(action, ())
        )
        text = receipt.text + (" (replayed: same requestId)" if receipt.replayed else "")
        if receipt.ok:
            text += hints.after(ctx, action, store.state)
        return ToolResult(receipt.ok, receipt.id, text, event=receipt.event)
    except ActionRefused as exc:
        return ToolResult(False, None, str(exc))
    except LockTimeoutError as exc:
        return ToolResult(False, None, str(exc))
    except OSError as exc:
        # What the store does not answer itself: a `.lock` that cannot be opened, a
        # ledger that cannot be read. Either way before any write, so nothing is lost.
        return ToolResult(False, None, unusable(exc))


def unusable(exc: OSError) -> str:
    """The one line for a `.horde/` file the call could not open or read."""
    where = exc.filename or ".horde/"
    if exc.errno == errno.EROFS:
        return (
            f"refused: {where} is on a read-only file system (a member's commands run in "
            "the sandbox, where .horde/ is read-only); write through the horde tool itself"
        )
    return (
        f"refused: cannot use {where} ({why(exc)}); nothing was recorded; make it a "
        "readable, writable file again (or move .horde/ aside), then retry"
    )
