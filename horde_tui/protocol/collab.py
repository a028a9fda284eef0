"""Lookups shared by the collaboration actions: targets, threads, members, evidence refs.

Each raises `ActionRefused` with one line naming what was refused, the rule, and what to
do instead, like the foundation's `resolve`.
"""

from __future__ import annotations

import json
import re

from horde_tui.common.inputs import whole_number
from horde_tui.protocol.context import PARENT_ACTORS, ActionContext
from horde_tui.store.ledgers import answers
from horde_tui.store.model import Artifact, Finding, Thread
from horde_tui.store.runs import sessions_dir
from horde_tui.store.state import LedgerState, normalize_id
from horde_tui.store.store import ActionRefused

_EVENT_REF = re.compile(r"\bE([0-9]+)\b")
TABLES = {"F": "findings", "A": "artifacts", "Q": "threads", "V": "reviews"}
WHERE = {
    "F": "`horde findings`",
    "A": "`horde collaboration`",
    "Q": "`horde inbox` or `horde collaboration`",
    "V": "`horde collaboration`",
}


def lookup(state: LedgerState, raw: str | None, prefixes: str, field: str) -> str:
    """An existing id of one of `prefixes` (e.g. "FA"), or refuse naming what is accepted."""
    accepted = " or ".join(f"{p}#" for p in prefixes)
    text = (raw or "").strip()
    if not text:
        raise ActionRefused(f"refused: `{field}` is required; give the {accepted} to act on")
    head = text[:1].upper()
    prefix = head if head in prefixes else (prefixes if len(prefixes) == 1 else "")
    ident = normalize_id(text, prefix) if prefix else None
    if ident is None:
        raise ActionRefused(f"refused: `{field}`={text!r} is not an {accepted} id; give {accepted}")
    table = getattr(state, TABLES[prefix])
    if ident not in table:
        numbers = [n for k in table if (n := whole_number(k[1:])) is not None]
        last = f"{prefix}{max(numbers)}" if numbers else "none yet"
        raise ActionRefused(
            f"refused: {ident} does not exist (highest is {last}); check {WHERE[prefix]}"
        )
    return ident


def reviewable(state: LedgerState, target: str) -> Finding | Artifact:
    """The F# or A# a review, reattest or acceptance question is about."""
    if target in state.findings:
        return state.findings[target]
    return state.artifacts[target]


def thread_target(ctx: ActionContext, state: LedgerState, raw: str | None) -> str | None:
    """A message's `target`: an F#, an A#, or `answer` (this run's proposal), if any."""
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() == "answer":
        if answers.current(state, ctx.run) is None:
            raise ActionRefused(
                f"refused: target=answer, but no answer has been proposed in run {ctx.run} "
                "(threads rule); target the F# or A# concerned instead"
            )
        return "answer"
    return lookup(state, raw, "FA", "target")


def known_members(ctx: ActionContext, state: LedgerState) -> set[str]:
    """Members a message may go to: ledger writers, this run's sessions and manifest."""
    names = set(state.actors)
    run_dir = ctx.store.paths.run_dir(ctx.run)
    sessions = sessions_dir(run_dir)
    if sessions.is_dir():
        names |= {d.name for d in sessions.iterdir() if d.is_dir()}
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
        names |= {str(m.get("name")) for m in manifest.get("members", []) if m.get("name")}
    except (OSError, ValueError, AttributeError):
        pass
    return names - PARENT_ACTORS


def check_event_refs(ctx: ActionContext, text: str, field: str = "evidence") -> None:
    """Every E# cited as evidence must be an event of this run."""
    for m in _EVENT_REF.finditer(text):
        ident = f"E{m.group(1)}"
        if not ctx.event_exists(ident):
            raise ActionRefused(
                f"refused: `{field}` cites {ident}, which does not exist in run {ctx.run}'s "
                "events (evidence refs must exist); attach the evidence first with `attach` "
                "or pass it as evidenceText"
            )


def require_evidence(evidence: str, evidence_text: str, what: str) -> None:
    if not evidence.strip() and not evidence_text.strip():
        raise ActionRefused(
            f"refused: {what} without evidence (reviews rule: checks cite evidence); pass "
            "`evidence` (paths:lines, output, E# refs) or `evidenceText` to attach it"
        )


def thread_of(state: LedgerState, raw: str | None) -> Thread:
    return state.threads[lookup(state, raw, "Q", "id")]


def not_a_participant(thread: Thread, actor: str) -> ActionRefused:
    return ActionRefused(
        f"refused: {thread.id} is between {thread.by} and {thread.to}; {actor} is not a "
        f"participant (threads rule: only the sender and recipient reply); send your own "
        f"`message` to {thread.to} instead"
    )


def parse_revision(
    raw: str | None, field: str = "revision", rule: str = "reviews are revision-pinned"
) -> int | None:
    """`2`, `"2"` or `"r2"` -> 2; None when not given; refuse anything else."""
    if raw is None or not str(raw).strip():
        return None
    number = whole_number(str(raw).strip().lower().removeprefix("r"))
    if number is None:
        raise ActionRefused(
            f"refused: `{field}`={raw!r} is not a whole number ({rule}); give a number such as 2"
        )
    return number
