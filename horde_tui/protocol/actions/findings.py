"""finding, verify, amend: evidence-backed results and their revisions."""

from __future__ import annotations

from typing import Any

from horde_tui.protocol.actions.solved import withdrawals
from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.evidence import checked_spans
from horde_tui.protocol.hints import held_by
from horde_tui.protocol.params import AmendParams, FindingParams, VerifyParams
from horde_tui.protocol.rules import check_new_concern, normalize_slug
from horde_tui.store.ledgers.artifacts import unregistered_runnables
from horde_tui.store.ledgers.findings import classify, independent_reporters, is_settled
from horde_tui.store.model import Finding
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision
from horde_tui.store.textmatch import SIMILAR_OVERLAP, TextKey, is_duplicate, similarity


def _parent(state: LedgerState, raw: str, field: str) -> Finding:
    ident = resolve(state, raw, "findings", field)
    parent = state.findings[ident]
    if parent.superseded_by:
        raise ActionRefused(
            f"refused: {ident} is superseded by {parent.superseded_by}; use {field}: "
            f"{parent.superseded_by} instead"
        )
    return parent


def _filing_idea(ctx: ActionContext, p: FindingParams, state: LedgerState) -> str:
    """The claimed idea the finding files under (defaults to the only one held)."""
    held = held_by(state, ctx.actor)
    if p.idea is None:
        if len(held) == 1:
            return held[0].id
        if not held:
            raise ActionRefused(
                "refused: no finding without a claimed idea (ownership rule); claim the idea "
                "this belongs to with `horde claim id=#N`, then pass idea=#N"
            )
        raise ActionRefused(
            f"refused: you hold {len(held)} ideas ({', '.join(i.id for i in held)}); pass "
            "`idea` to say which one this finding files under"
        )
    ident = resolve(state, p.idea, "ideas", "idea")
    target = state.ideas[ident]
    if target.status != "claimed" or target.owner != ctx.actor:
        state_note = f"held by {target.owner}" if target.owner else target.status
        raise ActionRefused(
            f"refused: {ident} is {state_note}, not claimed by you (ownership rule: findings "
            f"file under an idea you hold); claim it first or use deltaOf on an existing F#"
        )
    return ident


def _concern(p: FindingParams, state: LedgerState) -> tuple[str, list[dict[str, Any]]]:
    if not p.concern:
        known = ", ".join(sorted(state.concerns)) or "none yet; define one with concernDef"
        raise ActionRefused(
            f"refused: every finding names a `concern` slug (concerns rule); use one of: {known}"
        )
    slug = normalize_slug(p.concern)
    if slug in state.concerns:
        return slug, []
    check_new_concern(state, slug, p.concernDef or "", p.concernNew)
    return slug, [{"op": "concern.add", "slug": slug, "definition": p.concernDef}]


def finding(ctx: ActionContext, p: FindingParams, state: LedgerState) -> Decision:
    records: list[dict[str, Any]] = []
    delta_of = supersedes = None
    if p.deltaOf or p.supersedes:
        if p.deltaOf and p.supersedes:
            raise ActionRefused(
                "refused: pass deltaOf or supersedes, not both; a correction supersedes, new "
                "evidence is a delta"
            )
        parent = _parent(
            state, p.deltaOf or p.supersedes or "", "deltaOf" if p.deltaOf else "supersedes"
        )
        delta_of = parent.id if p.deltaOf else None
        supersedes = parent.id if p.supersedes else None
        # Deltas and corrections inherit the parent's slug and attach to its idea.
        concern, idea_id = parent.concern, parent.idea
        if supersedes:
            records += withdrawals(state, parent.id, "was superseded")
    else:
        idea_id = _filing_idea(ctx, p, state)
        concern, records = _concern(p, state)
        dup = _duplicate(ctx, p, state, concern)
        if dup is not None:
            return dup
    spans = checked_spans(f"{p.text}\n{p.evidence}", ctx.workdir)
    new_id = state.next_id("findings")
    record = {
        "op": "finding.add",
        "id": new_id,
        "idea": idea_id,
        "concern": concern,
        "text": p.text,
        "evidence": p.evidence,
        "support": p.support,
        "importance": p.importance,
        "confidence": p.confidence,
        "deltaOf": delta_of,
        "supersedes": supersedes,
        "spans": spans or None,
    }
    records.insert(0, {k: v for k, v in record.items() if v is not None})
    rel = (
        f" · delta of {delta_of}"
        if delta_of
        else f" · supersedes {supersedes}"
        if supersedes
        else ""
    )
    missing = [n for n in ("importance", "confidence") if getattr(p, n) is None]
    hint = f" Consider adding {' and '.join(missing)}." if missing and not rel else ""
    hint += register_warning(state, f"{p.text}\n{p.evidence}")
    return Decision(
        True,
        f"ok {new_id} filed under {idea_id or '-'} · concern {concern} · r1 · unreviewed{rel}.{hint}",
        new_id,
        records,
        outcome="created",
    )


def register_warning(state: LedgerState, text: str) -> str:
    """A finding citing a runnable under `artifacts/` that no A# or R# covers is told to
    register it, so a reviewer can pin the exact bytes it relied on."""
    unregistered = unregistered_runnables(state, text)
    if not unregistered:
        return ""
    return (
        f" Warning: {', '.join(unregistered)} is cited but no A# or R# covers it "
        "(reproductions rule); register it with `horde artifact path=... "
        "artifactKind=runnable criteria=...`."
    )


def _duplicate(
    ctx: ActionContext, p: FindingParams, state: LedgerState, concern: str
) -> Decision | None:
    """Dedup within one concern: corroborate, drop a third report, or ask for a delta."""
    key = TextKey.of(f"{p.text}\n{p.evidence}")
    same_concern = [
        fid
        for fid in state.finding_index.candidates(key)
        if state.findings[fid].concern == concern and state.findings[fid].superseded_by is None
    ]
    best: tuple[Finding, float] | None = None
    for fid in same_concern:
        score = similarity(key, state.finding_index.keys[fid])
        if best is None or score > best[1]:
            best = (state.findings[fid], score)
    if best is None:
        return None
    existing, score = best

    duplicate = is_duplicate(key, state.finding_index.keys[existing.id])
    reporters = independent_reporters(existing)
    if duplicate and ctx.actor in reporters:
        return Decision(
            True,
            f"duplicate of {existing.id}, which you already reported or corroborated; "
            "nothing added",
            existing.id,
            outcome="duplicate",
        )
    if is_settled(state, existing):
        if duplicate:
            # Not written, but its event names the finding it re-found (a baseline's delta
            # counts it as persisting).
            return Decision(
                False,
                f"dropped: {existing.id} is already settled ({len(reporters)} independent "
                f"reports, {classify(state, existing)}) and a further duplicate adds nothing "
                f"(reproductions rule); if you have a new vector, file it with deltaOf: "
                f"{existing.id}",
                existing.id,
                outcome="dropped",
            )
        if score >= SIMILAR_OVERLAP:
            raise ActionRefused(
                f"refused: this overlaps settled {existing.id} (reproductions rule); bring a new "
                f"vector as a finding with deltaOf: {existing.id}"
            )
        return None
    if duplicate:
        return Decision(
            True,
            f"duplicate of {existing.id} (concern {existing.concern}); recorded you as an "
            f"independent corroborator; no new finding",
            existing.id,
            [{"op": "finding.corroborate", "id": existing.id, "support": p.support}],
            outcome="duplicate",
        )
    return None


def verify(ctx: ActionContext, p: VerifyParams, state: LedgerState) -> Decision:
    ident = resolve(state, p.id, "findings")
    target = state.findings[ident]
    if target.superseded_by:
        raise ActionRefused(
            f"refused: {ident} is superseded by {target.superseded_by}; verify "
            f"{target.superseded_by} instead"
        )
    return Decision(
        True,
        f"ok verification of {ident} at r{target.revision} recorded ({p.support}); a legacy "
        f"label: only `review target={ident}` with checked/unchecked counts as a review",
        ident,
        [{"op": "finding.verify", "id": ident, "support": p.support, "text": p.text}],
        outcome="verified",
    )


def amend(ctx: ActionContext, p: AmendParams, state: LedgerState) -> Decision:
    ident = resolve(state, p.id, "findings")
    target = state.findings[ident]
    if target.by != ctx.actor:
        raise ActionRefused(
            f"refused: {ident} belongs to {target.by} (amend rewrites only your own finding); "
            f"file a correction with supersedes: {ident} or message {target.by}"
        )
    if target.superseded_by:
        raise ActionRefused(
            f"refused: {ident} is superseded by {target.superseded_by} (amend rule: only a "
            f"current finding is rewritten); amend {target.superseded_by} instead"
        )
    if p.text.strip() == target.text.strip():
        raise ActionRefused(
            f"refused: the new text equals {ident}'s current text; nothing to amend (amend "
            "rule: a new revision needs changed prose); send the corrected text"
        )
    records = [{"op": "finding.amend", "id": ident, "text": p.text, "note": p.note}]
    records += withdrawals(state, ident, "was amended")
    return Decision(
        True,
        f"ok {ident} amended to r{target.revision + 1}; reviews of r{target.revision} stay "
        "pinned to it and corroborators were cleared",
        ident,
        records,
        outcome="amended",
    )
