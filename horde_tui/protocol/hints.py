"""Nudges appended to a member's tool results: idle, solved, verification, and the
verifier's pending reviews.

They are read from the state the write left (after the transaction), so a list never
names what the call itself just settled. They are guidance, not records: the receipt
in events.jsonl stays without them. Each fires only at the results where a member
decides what to do next (closing an idea, posting to the board, a verifier's review),
so a member that ignores one is told again at its next such point, not at every call.
"""

from __future__ import annotations

from horde_tui.protocol.context import ActionContext
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.findings import classify, pending_reviews
from horde_tui.store.model import Idea
from horde_tui.store.state import LedgerState

LIST_CAP = 10
"""Ids a nudge or refusal names before `...`."""

CLOSING = frozenset({"done", "rule-out"})
"""Results that close an idea: the idle nudge's moment."""

DECIDING = CLOSING | {"post"}
"""Results where a member wraps up (closing an idea, posting its summary): the solved and
verification nudges' moment."""

VERIFIER_ACTIONS = frozenset({"review", "reattest", "post"})
"""A verifier's results that carry what still awaits its review (the reference's
"Verifier" rule)."""


def ids(found: list[str]) -> str:
    """`F1, F2, ...`: at most LIST_CAP ids, for nudges and refusals alike."""
    return ", ".join(found[:LIST_CAP]) + (" ..." if len(found) > LIST_CAP else "")


def held_by(state: LedgerState, actor: str) -> list[Idea]:
    return [i for i in state.ideas.values() if i.status == "claimed" and i.owner == actor]


def idle_nudge(state: LedgerState, actor: str) -> str:
    """A member that holds no idea while others are still open is told to claim one."""
    if held_by(state, actor):
        return ""
    open_ids = [i.id for i in state.ideas.values() if i.status == "open"]
    if not open_ids:
        return ""
    shown = ", ".join(open_ids[:8]) + (" ..." if len(open_ids) > 8 else "")
    return f" You now hold no idea; {len(open_ids)} open idea(s) remain ({shown}): claim one before stopping."


def solved_nudge(state: LedgerState, actor: str, run: str) -> str:
    """An answer another member proposed waits for a second member: this one."""
    prop = answers.current(state, run)
    if prop is None or prop.status != "pending" or prop.by == actor:
        return ""
    return (
        f" {prop.by}'s answer (round {prop.round}) awaits validation by a second member: "
        "read it (`inspect target=answer`), check what it cites, then `confirm-solved` it "
        "or `contest-solved` it (naming the ideas still open) before you stop."
    )


def verification_nudge(state: LedgerState, actor: str, run: str) -> str:
    """The member's own critical findings that nobody has reviewed at their revision."""
    owed = [
        f.id
        for f in state.findings.values()
        if f.by == actor
        and f.run == run
        and f.importance == "critical"
        and classify(state, f) in ("unreviewed", "legacy")
    ]
    if not owed:
        return ""
    first = owed[0]
    noun = (
        f"Your critical finding {first} has no review at its current revision"
        if len(owed) == 1
        else f"Your critical findings {ids(owed)} have no review at their current revision"
    )
    return (
        f" {noun}: ask another member to check it with `message to=member-N "
        f"kind=review-request target={first} text=...` before you stop."
    )


def verifier_pending(state: LedgerState, actor: str, run: str) -> str:
    """What still awaits the verifier's review, as its claim refusal names it."""
    pending = pending_reviews(state, actor, run)
    if not pending:
        return " Nothing else awaits your review: you may claim ideas now."
    return f" Still awaiting your review: {ids(pending)}."


def after(ctx: ActionContext, action: str, state: LedgerState) -> str:
    """The nudges due after a successful write of `action` by a member."""
    if not ctx.is_member:
        return ""
    actor, run = ctx.actor, ctx.run
    parts = []
    if action in CLOSING:
        parts.append(idle_nudge(state, actor))
    if action in DECIDING:
        parts.append(solved_nudge(state, actor, run))
        parts.append(verification_nudge(state, actor, run))
    if ctx.role == "verifier" and action in VERIFIER_ACTIONS:
        parts.append(verifier_pending(state, actor, run))
    return "".join(parts)
