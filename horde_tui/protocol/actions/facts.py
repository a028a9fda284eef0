"""fact: checkable facts, deduplicated, provisional while their subject is being audited."""

from __future__ import annotations

import re

from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import FactParams
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision
from horde_tui.store.textmatch import TOKEN_OVERLAP, TextKey, similarity

_IDEA_REF = re.compile(r"(?<![\w&])#([0-9]+)\b")
_CLAIM_REF = re.compile(r"\bC([0-9]+)\b")


def provisional_subject(state: LedgerState, text: str, key: TextKey) -> str | None:
    """The open idea or contested claim this fact is about, if any.

    Explicit references win (`#3`, `C2`); otherwise an idea still open or claimed whose
    text shares an identifier with the fact, or overlaps it strongly.
    """
    for m in _IDEA_REF.finditer(text):
        idea = state.ideas.get(f"#{m.group(1)}")
        if idea is not None and not idea.closed:
            return idea.id
    for m in _CLAIM_REF.finditer(text):
        claim = state.claims.get(f"C{m.group(1)}")
        if claim is not None and claim.status == "contested":
            return claim.id
    for ident in state.idea_index.candidates(key):
        idea = state.ideas[ident]
        if idea.closed:
            continue
        other = state.idea_index.keys[ident]
        if (key.ids & other.ids) or similarity(key, other) >= TOKEN_OVERLAP:
            return idea.id
    for cid in state.claim_index.candidates(key):
        claim = state.claims[cid]
        if (
            claim.status == "contested"
            and similarity(key, state.claim_index.keys[cid]) >= TOKEN_OVERLAP
        ):
            return claim.id
    return None


def fact(ctx: ActionContext, p: FactParams, state: LedgerState) -> Decision:
    key = TextKey.of(p.text)
    delta_of = resolve(state, p.deltaOf, "facts", "deltaOf") if p.deltaOf else None
    if delta_of is None:
        dupes = state.fact_index.duplicates(key)
        if dupes:
            existing = state.facts[dupes[0]]
            records = []
            if ctx.actor != existing.by and ctx.actor not in existing.corroborators:
                records.append({"op": "fact.corroborate", "id": existing.id})
            who = "recorded you as confirming it" if records else "you already recorded it"
            return Decision(
                True,
                f"duplicate of {existing.id}; {who}; no new fact "
                f"(use deltaOf: {existing.id} to extend it)",
                existing.id,
                records,
                outcome="duplicate",
            )
    subject = provisional_subject(state, p.text, key)
    new_id = state.next_id("facts")
    record = {"op": "fact.add", "id": new_id, "text": p.text}
    if delta_of:
        record["deltaOf"] = delta_of
    if subject:
        record["provisionalOn"] = subject
    note = (
        f" Recorded as provisional on {subject}, which is still being audited; it firms up "
        "when that closes."
        if subject
        else ""
    )
    return Decision(True, f"ok {new_id} recorded.{note}", new_id, [record], outcome="created")
