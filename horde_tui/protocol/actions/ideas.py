"""post, idea, claim, done, drop, rule-out: the checklist and the board."""

from __future__ import annotations

import re

from horde_tui.protocol.actions.solved import reopenings
from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.hints import held_by, ids
from horde_tui.protocol.params import (
    ClaimParams,
    DoneParams,
    DropParams,
    IdeaParams,
    PostParams,
    RuleOutParams,
)
from horde_tui.protocol.rules import is_confirmed_negative
from horde_tui.store.ledgers.findings import is_settled, pending_reviews
from horde_tui.store.model import Idea
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision
from horde_tui.store.textmatch import SIMILAR_OVERLAP, TextKey, is_duplicate, similarity

_PLAN = re.compile(r"^\s*(?:my\s+)?(?:plan|next steps?|i will|i'll|i am going to|going to)\b", re.I)


def post(ctx: ActionContext, p: PostParams, state: LedgerState) -> Decision:
    if ctx.is_member and _PLAN.match(p.text) and not held_by(state, ctx.actor):
        raise ActionRefused(
            "refused: a plan post before claiming (ownership rule); claim an idea first with "
            "`horde claim id=#N`, then post your plan"
        )
    return Decision(True, "ok: posted to BOARD.md", None, [{"op": "board.post", "text": p.text}])


def idea(ctx: ActionContext, p: IdeaParams, state: LedgerState) -> Decision:
    key = TextKey.of(p.text)
    dupes = state.idea_index.duplicates(key)
    if dupes:
        existing = state.ideas[dupes[0]]
        records = []
        if ctx.actor != existing.by and ctx.actor not in existing.corroborators:
            records.append({"op": "idea.corroborate", "id": existing.id})
        holder = f", claimed by {existing.owner}" if existing.status == "claimed" else ""
        # Say what was recorded: re-posting your own idea corroborates nothing.
        who = "recorded you as corroborator" if records else "you already raised it"
        return Decision(
            True,
            f"duplicate of {existing.id} ({existing.status}{holder}); {who}; no new idea added",
            existing.id,
            records,
            outcome="duplicate",
        )
    new_id = state.next_id("ideas")
    return Decision(
        True,
        f"ok {new_id} added (open); claim it to work it",
        new_id,
        [{"op": "idea.add", "id": new_id, "text": p.text}],
        outcome="created",
    )


def claim(ctx: ActionContext, p: ClaimParams, state: LedgerState) -> Decision:
    ident = resolve(state, p.id, "ideas")
    target = state.ideas[ident]
    if target.closed:
        raise ActionRefused(
            f"refused: {ident} is already {target.status} (only open ideas can be claimed); "
            "pick an open idea from `horde list` or add a new one"
        )
    if target.status == "claimed":
        if target.owner == ctx.actor:
            return Decision(True, f"ok {ident} is already yours", ident, outcome="unchanged")
        raise ActionRefused(
            f"refused: {ident} is claimed by {target.owner} (one owner per idea); pick another "
            f"open idea, or message {target.owner} to coordinate"
        )
    if ctx.role == "verifier":
        pending = pending_reviews(state, ctx.actor, ctx.run)
        if pending:
            raise ActionRefused(
                f"refused: the verifier claims ideas only when nothing awaits review "
                f"(verifier rule); review first: {ids(pending)}"
            )
    key = state.idea_index.keys[ident]
    warning = ""
    for other in state.ideas.values():
        if other.id == ident or other.status != "claimed" or other.owner == ctx.actor:
            continue
        other_key = state.idea_index.keys[other.id]
        if is_duplicate(key, other_key):
            raise ActionRefused(
                f"refused: {ident} is near-identical to {other.id} held by {other.owner} "
                f"(one owner per idea); pick a different idea or coordinate with {other.owner}"
            )
        if not warning and similarity(key, other_key) >= SIMILAR_OVERLAP:
            warning = f" Note: similar to {other.id} held by {other.owner}; avoid duplicate work."
    settled = [
        f.id
        for fid in state.finding_index.duplicates(key)
        if (f := state.findings[fid]).superseded_by is None and is_settled(state, f)
    ]
    if settled:
        warning += (
            f" Note: {settled[0]} already settles this; bring a new vector as a finding with "
            f"deltaOf: {settled[0]}, not a re-report."
        )
    return Decision(
        True,
        f"ok {ident} claimed.{warning}".rstrip(),
        ident,
        [{"op": "idea.claim", "id": ident}],
        outcome="claimed",
    )


def _owned(ctx: ActionContext, state: LedgerState, raw: str, verb: str) -> Idea:
    ident = resolve(state, raw, "ideas")
    target = state.ideas[ident]
    if target.closed:
        raise ActionRefused(
            f"refused: {ident} is already {target.status}; nothing to {verb} (ownership rule: "
            "a closed idea stays closed); add a new idea if more work remains"
        )
    if target.status != "claimed" or target.owner != ctx.actor:
        holder = f"held by {target.owner}" if target.owner else "open"
        raise ActionRefused(
            f"refused: you cannot {verb} {ident}, which is {holder} (ownership rule: only the "
            f"holder finishes an idea); claim it first if it is open"
        )
    return target


def done(ctx: ActionContext, p: DoneParams, state: LedgerState) -> Decision:
    target = _owned(ctx, state, p.id, "finish")
    if is_confirmed_negative(p.result):
        raise ActionRefused(
            f"refused: the result reads as a confirmed negative, so `done` is the wrong close "
            f"(done/rule-out rule); use `rule-out id={target.id} reason=...` instead"
        )
    reopen, note = reopenings(state, ctx.run, target.id)
    return Decision(
        True,
        f"ok {target.id} done.{note}",
        target.id,
        [{"op": "idea.done", "id": target.id, "result": p.result}, *reopen],
        outcome="done",
    )


def drop(ctx: ActionContext, p: DropParams, state: LedgerState) -> Decision:
    target = _owned(ctx, state, p.id, "drop")
    return Decision(
        True,
        f"ok {target.id} released to the open pool",
        target.id,
        [{"op": "idea.drop", "id": target.id, "reason": p.reason}],
        outcome="dropped",
    )


def rule_out(ctx: ActionContext, p: RuleOutParams, state: LedgerState) -> Decision:
    target = _owned(ctx, state, p.id, "rule out")
    reopen, note = reopenings(state, ctx.run, target.id)
    return Decision(
        True,
        f"ok {target.id} ruled out.{note}",
        target.id,
        [{"op": "idea.ruleout", "id": target.id, "reason": p.reason}, *reopen],
        outcome="ruled-out",
    )
