"""attach, review, reattest: evidence and revision-pinned checks of F# and A#.

A review names the revision it checked (the current one unless `revision` says
otherwise), what it `checked`, what it left `unchecked` inside the claim or criteria
(which keeps acceptance open), `limits` outside the criteria (recorded, never blocking),
a verdict and evidence. Only `refutes` opens a challenge (a Q# to the owner). A review
by the recipient of a pending review-request, or of a re-review blocker about the
sender's own work, resolves that thread.
"""

from __future__ import annotations

from typing import Any

from horde_tui.protocol.collab import (
    check_event_refs,
    lookup,
    parse_revision,
    require_evidence,
    reviewable,
)
from horde_tui.protocol.collab_params import AttachParams, ReattestParams, ReviewParams
from horde_tui.protocol.context import ActionContext
from horde_tui.protocol.evidence import checked_spans
from horde_tui.store.acceptance import NEED, is_qualifying, required_support
from horde_tui.store.ledgers.threads import threads_about
from horde_tui.store.model import Review
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision

EVIDENCE_RELATION = {
    "supports": "supports",
    "partially-supports": "extends",
    "refutes": "contradicts",
}
"""A review's verdict -> the relation of the evidence its `evidenceText` attaches."""
_NO_GAPS = {"", "none", "nothing", "-", "n/a", "na", "nil", "no gaps"}


def attach(ctx: ActionContext, p: AttachParams, state: LedgerState) -> Decision:
    target = lookup(state, p.target, "FAQV", "target")
    event_id = ctx.next_event_id()
    record = {"op": "evidence.add", "id": event_id, "target": target, "relation": p.relation}
    return Decision(
        True,
        f"ok {event_id} attached to {target} ({p.relation}); `inspect target={event_id}` "
        "shows it in full",
        event_id,
        [{**record, "text": p.text}],
        outcome="attached",
    )


def unchecked_text(raw: str) -> str:
    """`unchecked` as recorded: "none" and the like mean nothing was left unchecked."""
    return "" if raw.strip().lower().rstrip(".") in _NO_GAPS else raw.strip()


def review(ctx: ActionContext, p: ReviewParams, state: LedgerState) -> Decision:
    target = lookup(state, p.target, "FA", "target")
    item = reviewable(state, target)
    _check_reviewer(ctx, state, target)
    revision = parse_revision(p.revision)
    if revision is None:
        revision = item.revision
    if not 1 <= revision <= item.revision:
        raise ActionRefused(
            f"refused: review of {target} r{revision}, a revision that does not exist (reviews "
            f"are revision-pinned; {target} has r1..r{item.revision}); review r{item.revision}"
        )
    unchecked = unchecked_text(p.unchecked)
    if p.verdict == "partially-supports" and not unchecked:
        raise ActionRefused(
            "refused: a partially-supports verdict must name what it left `unchecked` (reviews "
            "rule); fill `unchecked`, or use verdict supports for a full-scope check"
        )
    require_evidence(p.evidence, p.evidenceText, "a review")
    check_event_refs(ctx, p.evidence)
    spans = checked_spans(f"{p.evidence}\n{p.evidenceText}", ctx.workdir)
    fields = {
        "verdict": p.verdict,
        "support": p.support,
        "checked": p.checked,
        "unchecked": unchecked,
        "limits": p.limits.strip(),
        "evidence": p.evidence,
    } | ({"spans": spans} if spans else {})
    return _record_review(ctx, state, target, revision, fields, p.evidenceText)


def _check_reviewer(ctx: ActionContext, state: LedgerState, target: str) -> None:
    item = reviewable(state, target)
    if item.by == ctx.actor:
        raise ActionRefused(
            f"refused: {target} is your own (reviews rule: the owner may not review its own "
            f"work); use `verify` for your finding, or ask another member with `message`"
        )
    superseded = getattr(item, "superseded_by", None)
    if superseded:
        raise ActionRefused(
            f"refused: {target} is superseded by {superseded} (reviews rule: review current "
            f"work); review {superseded} instead"
        )


def _record_review(
    ctx: ActionContext,
    state: LedgerState,
    target: str,
    revision: int,
    fields: dict[str, Any],
    evidence_text: str,
    reattests: str = "",
) -> Decision:
    """The records and receipt of one review: evidence, V#, challenge, auto-resolutions."""
    item = reviewable(state, target)
    review_id = state.next_id("reviews")
    records: list[dict[str, Any]] = []
    notes = [f"ok {review_id} {fields['verdict']} {target} r{revision} (pinned r{revision})"]
    record: dict[str, Any] = {
        "op": "review.add",
        "id": review_id,
        "target": target,
        "revision": revision,
        **fields,
    }
    if reattests:
        record["reattests"] = reattests
    if evidence_text:
        event_id = ctx.next_event_id()
        records.append(
            {
                "op": "evidence.add",
                "id": event_id,
                "target": target,
                "relation": EVIDENCE_RELATION[fields["verdict"]],
                "text": evidence_text,
                "review": review_id,
            }
        )
        record["evidenceId"] = event_id
        notes.append(f"{event_id} attached")
    records.append(record)
    probe = Review(review_id, target, revision, ctx.actor, run=ctx.run, seq=0, **fields)
    notes.append(_counts(state, target, probe))
    if fields["verdict"] == "refutes":
        challenge = _challenge(state, ctx.actor, target, revision, review_id, fields["checked"])
        if challenge:
            records.append(challenge)
            notes.append(f"{challenge['id']} challenge opened to {item.by}")
    for note in auto_resolutions(state, ctx.actor, target, probe):
        records.append(note)
        notes.append(f"{note['id']} resolved")
    return Decision(True, " · ".join(notes), review_id, records, outcome="reviewed")


def _counts(state: LedgerState, target: str, probe: Review) -> str:
    """Whether the review can accept the target on its own, and if not, why."""
    if is_qualifying(state, target, probe):
        return "counts toward acceptance" + (" (limits recorded)" if probe.limits else "")
    item = reviewable(state, target)
    if probe.revision != item.revision:
        why = f"r{item.revision} is current"
    elif probe.verdict != "supports":
        why = f"verdict {probe.verdict}"
    elif not probe.full_scope:
        why = "unchecked gaps keep it open"
    else:
        kind = state.artifacts[target].kind if target in state.artifacts else "finding"
        need = NEED.get(kind) or " or ".join(sorted(required_support(state, target)))
        why = f"a {kind} needs {need}"
    return f"does not accept it on its own ({why})"


def _challenge(
    state: LedgerState, reviewer: str, target: str, revision: int, review_id: str, checked: str
) -> dict[str, Any] | None:
    """The challenge thread a refuting review opens, unless the reviewer has one open."""
    item = reviewable(state, target)
    for t in threads_about(state, target):
        if t.kind == "challenge" and t.by == reviewer and not t.closed:
            return None
    return {
        "op": "thread.open",
        "id": state.next_id("threads"),
        "to": item.by,
        "kind": "challenge",
        "target": target,
        "targetRevision": revision,
        "review": review_id,
        "text": f"{review_id} refutes {target} r{revision}; checked: {checked.strip()[:300]}",
    }


def auto_resolutions(
    state: LedgerState, reviewer: str, target: str, probe: Review
) -> list[dict[str, Any]]:
    """Threads the reviewer's review of the current revision settles on the sender's behalf:
    a review-request to the reviewer (any verdict answers it), and a re-review blocker
    about the sender's own work (on a supporting review; full-scope for an A#)."""
    item = reviewable(state, target)
    if probe.revision != item.revision:
        return []
    supporting = probe.verdict == "supports" and (probe.full_scope or target in state.findings)
    out = []
    for t in threads_about(state, target):
        if t.closed or t.to != reviewer or t.repin:
            continue
        if t.kind == "review-request" or (t.kind == "blocker" and t.by == item.by and supporting):
            out.append(
                {
                    "op": "thread.note",
                    "id": t.id,
                    "what": "resolve",
                    "text": f"{probe.id} {probe.verdict} {target} r{probe.revision}",
                    "auto": probe.id,
                }
            )
    return out


def reattest(ctx: ActionContext, p: ReattestParams, state: LedgerState) -> Decision:
    earlier = _earlier_review(ctx, p, state)
    target = earlier.target
    item = reviewable(state, target)
    _check_reviewer(ctx, state, target)
    if earlier.revision >= item.revision:
        raise ActionRefused(
            f"refused: {earlier.id} already pins {target}'s current revision r{item.revision} "
            "(reattest rule: it carries a review to a newer revision); nothing to carry"
        )
    if earlier.verdict == "refutes":
        raise ActionRefused(
            f"refused: {earlier.id} refutes {target}; a refutation is not carried forward "
            f"(reattest rule); record a fresh `review` of r{item.revision}"
        )
    _check_unchanged(state, target, earlier.revision)
    require_evidence(p.evidence, p.evidenceText, "a reattest")
    check_event_refs(ctx, p.evidence)
    fields = {
        "verdict": earlier.verdict,
        "support": earlier.support,
        "checked": earlier.checked,
        "unchecked": earlier.unchecked,
        "limits": earlier.limits,
        "evidence": p.evidence,
    }
    decision = _record_review(
        ctx, state, target, item.revision, fields, p.evidenceText, reattests=earlier.id
    )
    decision.text += f" · carries {earlier.id} (r{earlier.revision}) forward"
    decision.outcome = "reattested"
    return decision


def _earlier_review(ctx: ActionContext, p: ReattestParams, state: LedgerState) -> Review:
    """The review to carry forward: `id` (V#), or the actor's latest review of `target`."""
    if p.id:
        review = state.reviews[lookup(state, p.id, "V", "id")]
        if review.by != ctx.actor:
            raise ActionRefused(
                f"refused: {review.id} is {review.by}'s review (reattest rule: you carry your "
                "own review forward); record your own `review` instead"
            )
        return review
    if not p.target:
        raise ActionRefused(
            "refused: reattest needs `id` (your V#) or `target` (the F# or A#) (reattest "
            "rule); name the review to carry forward"
        )
    target = lookup(state, p.target, "FA", "target")
    mine = [
        state.reviews[rid]
        for rid in state.reviews_by_target.get(target, [])
        if state.reviews[rid].by == ctx.actor
    ]
    if not mine:
        raise ActionRefused(
            f"refused: you have no earlier review of {target} to carry forward (reattest "
            f"rule); record a `review` of its current revision instead"
        )
    return max(mine, key=lambda r: (r.revision, r.seq))


def _check_unchanged(state: LedgerState, target: str, since: int) -> None:
    """Refuse across a changed artifact criteria or kind, a changed finding claim line, or
    a finding revision no `amend` started from."""
    if target in state.findings:
        f = state.findings[target]
        if since not in f.amended_from:
            raise ActionRefused(
                f"refused: {target} r{since} is a revision no amend started from (reattest "
                f"rule); review r{f.revision} afresh"
            )
        if any(line != f.claim_lines[since - 1] for line in f.claim_lines[since:]):
            raise ActionRefused(
                f"refused: {target}'s claim line changed since r{since} (reattest rule: only "
                f"an unchanged claim carries over); review r{f.revision} afresh"
            )
        return
    art = state.artifacts[target]
    base = art.revisions[since - 1]
    for rev in art.revisions[since:]:
        for name, old, new in (
            ("criteria", base.criteria, rev.criteria),
            ("kind", base.kind, rev.kind),
        ):
            if old != new:
                raise ActionRefused(
                    f"refused: {target}'s {name} changed at r{rev.n} (reattest rule: a changed "
                    f"{name} needs a fresh check); review r{art.revision} afresh"
                )
