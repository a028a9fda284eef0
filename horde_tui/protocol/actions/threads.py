"""message, ack, respond, resolve, defer: targeted threads between two members.

The sender opens a thread to one recipient; the recipient may `ack` (optional intent),
`respond` or `defer` (not now; the debt stays visible and still blocks), and the sender
`resolve`s it. Open blockers and challenges block acceptance of their target. Bodies
are other members' words: they are delivered as data, never as instructions.
"""

from __future__ import annotations

from typing import Any

from horde_tui.protocol.collab import (
    check_event_refs,
    known_members,
    not_a_participant,
    require_evidence,
    reviewable,
    thread_of,
    thread_target,
)
from horde_tui.protocol.collab_params import (
    AckParams,
    DeferParams,
    MessageParams,
    ResolveParams,
    RespondParams,
)
from horde_tui.protocol.context import ActionContext
from horde_tui.store.model import Thread
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision


def message(ctx: ActionContext, p: MessageParams, state: LedgerState) -> Decision:
    to = p.to.strip()
    if to == ctx.actor:
        raise ActionRefused(
            "refused: a message to yourself (threads rule: a thread has two participants); "
            "note it on the board with `post` instead"
        )
    members = known_members(ctx, state)
    if to not in members:
        raise ActionRefused(
            f"refused: no member named {to!r} (threads rule: messages go to a member of the "
            f"horde); known: {', '.join(sorted(members)) or 'none yet'}"
        )
    if p.kind == "challenge":
        raise ActionRefused(
            "refused: a challenge is opened only by a `review` with verdict refutes (reviews "
            "rule); record that review with your evidence, or send a question or blocker"
        )
    target = thread_target(ctx, state, p.target)
    revision = None
    if target and target != "answer":
        item = reviewable(state, target)
        revision = item.revision
        if p.kind == "review-request" and item.by == to:
            raise ActionRefused(
                f"refused: {to} owns {target} and may not review it (reviews rule: reviews "
                "come from non-owners); ask another member"
            )
    for t in state.threads.values():
        if (t.by, t.to, t.kind, t.target, t.text) == (ctx.actor, to, p.kind, target, p.text):
            if not t.closed:
                return Decision(
                    True, f"duplicate of open {t.id}; nothing sent", t.id, outcome="duplicate"
                )
    new_id = state.next_id("threads")
    record: dict[str, Any] = {
        "op": "thread.open",
        "id": new_id,
        "to": to,
        "kind": p.kind,
        "text": p.text,
    }
    if target:
        record["target"] = target
    if revision is not None:
        record["targetRevision"] = revision
    about = f" about {target}" + (f" r{revision}" if revision else "") if target else ""
    return Decision(
        True,
        f"ok {new_id} {p.kind} to {to}{about}; delivered at their next turn",
        new_id,
        [record],
        outcome="created",
    )


def _open_thread(state: LedgerState, p_id: str) -> Thread:
    thread = thread_of(state, p_id)
    if thread.closed:
        raise ActionRefused(
            f"refused: {thread.id} is already resolved (threads rule: a resolved thread is "
            f"closed); open a new thread with `message` to {thread.by}"
        )
    return thread


def _recipient_only(thread: Thread, actor: str, verb: str) -> None:
    if actor == thread.to:
        return
    if actor == thread.by:
        raise ActionRefused(
            f"refused: {thread.id} is your own {thread.kind} to {thread.to}; the recipient "
            f"{verb}s (threads rule); resolve it with `resolve` when it is settled"
        )
    raise not_a_participant(thread, actor)


def _note(thread: Thread, what: str, text: str, evidence: str = "") -> dict[str, Any]:
    record: dict[str, Any] = {"op": "thread.note", "id": thread.id, "what": what, "text": text}
    if evidence:
        record["evidence"] = evidence
    return record


def ack(ctx: ActionContext, p: AckParams, state: LedgerState) -> Decision:
    thread = _open_thread(state, p.id)
    _recipient_only(thread, ctx.actor, "ack")
    return Decision(
        True,
        f"ok {thread.id} acknowledged; answer it with `respond` when you can",
        thread.id,
        [_note(thread, "ack", p.text)],
        outcome="acked",
    )


def respond(ctx: ActionContext, p: RespondParams, state: LedgerState) -> Decision:
    thread = _open_thread(state, p.id)
    _recipient_only(thread, ctx.actor, "respond")
    check_event_refs(ctx, p.evidence)
    return Decision(
        True,
        f"ok {thread.id} response {thread.responses + 1} recorded; {thread.by} resolves it",
        thread.id,
        [_note(thread, "respond", p.text, p.evidence)],
        outcome="responded",
    )


def defer(ctx: ActionContext, p: DeferParams, state: LedgerState) -> Decision:
    thread = _open_thread(state, p.id)
    _recipient_only(thread, ctx.actor, "defer")
    still = " and still blocks its target" if thread.kind in ("blocker", "challenge") else ""
    return Decision(
        True,
        f"ok {thread.id} deferred; it stays open{still}; `respond` to it when you can",
        thread.id,
        [_note(thread, "defer", p.text)],
        outcome="deferred",
    )


def resolve(ctx: ActionContext, p: ResolveParams, state: LedgerState) -> Decision:
    thread = _open_thread(state, p.id)
    if ctx.actor != thread.by:
        if ctx.actor == thread.to:
            raise ActionRefused(
                f"refused: {thread.id} is {thread.by}'s request to you; the requester resolves "
                "it (threads rule); answer with `respond` instead"
            )
        raise not_a_participant(thread, ctx.actor)
    check_event_refs(ctx, p.evidence)
    if thread.responses == 0:
        _check_early_resolve(state, thread, p)
    records: list[dict[str, Any]] = []
    evidence = p.evidence
    if p.evidenceText:
        event_id = ctx.next_event_id()
        records.append(
            {
                "op": "evidence.add",
                "id": event_id,
                "target": thread.target if thread.target not in (None, "answer") else thread.id,
                "relation": "supports",
                "text": p.evidenceText,
            }
        )
        evidence = f"{evidence} {event_id}".strip()
    records.append(_note(thread, "resolve", p.text, evidence))
    attached = f"; {records[0]['id']} attached" if p.evidenceText else ""
    return Decision(
        True, f"ok {thread.id} resolved{attached}", thread.id, records, outcome="resolved"
    )


def _check_early_resolve(state: LedgerState, thread: Thread, p: ResolveParams) -> None:
    """Before any response: a challenger withdraws only on its own supporting review of
    the current revision, with evidence; a re-review request about the sender's own work
    resolves only on the recipient's supporting review."""
    target = thread.target
    if target is None or target == "answer":
        return
    item = reviewable(state, target)
    if thread.kind == "challenge":
        mine = [
            r
            for rid in state.reviews_by_target.get(target, [])
            if (r := state.reviews[rid]).by == thread.by
            and r.revision == item.revision
            and r.verdict == "supports"
        ]
        if not mine:
            raise ActionRefused(
                f"refused: withdrawing challenge {thread.id} before any response needs your "
                f"supporting review of {target}'s current revision r{item.revision} (reviews "
                f"rule); record `review target={target} verdict=supports` first"
            )
        require_evidence(p.evidence, p.evidenceText, f"withdrawing challenge {thread.id}")
    elif thread.kind == "blocker" and item.by == thread.by:
        raise ActionRefused(
            f"refused: {thread.id} asks {thread.to} to re-check your own {target}; it resolves "
            f"on their supporting review of r{item.revision} (reviews rule); wait for it, or "
            f"resolve after they respond"
        )
