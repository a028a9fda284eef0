"""CLAIMS.md: assertions that can be confirmed, contested, retracted or superseded."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import one_line
from horde_tui.store.model import Claim, HistoryNote
from horde_tui.store.tables import Fold, LedgerTables

HEADER = (
    "# Claims\n\n"
    "Assertions (`C#`) and their state: asserted, confirmed, contested, retracted,\n"
    "superseded. Written only through the `horde` tool.\n"
)


def _assert(state: LedgerTables, rec: dict[str, Any]) -> None:
    claim = Claim(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        text=rec["text"],
        supersedes=rec.get("supersedes"),
    )
    state.claims[claim.id] = claim
    state.touch("claims", claim)
    state.claim_index.add_text(claim.id, claim.text)


def _move(state: LedgerTables, rec: dict[str, Any]) -> None:
    claim = state.claims[rec["id"]]
    state.touch("claims", claim)
    op = rec["op"]
    actor = rec["actor"]
    if op == "claim.confirm":
        claim.confirmers.append(actor)
        if claim.status == "asserted" or (claim.status == "contested" and not claim.contesters):
            claim.status = "confirmed"
    elif op == "claim.contest":
        claim.contesters.append(actor)
        claim.status = "contested"
    elif op == "claim.retract":
        claim.status = "retracted"
    elif op == "claim.supersede":
        claim.status = "superseded"
        claim.superseded_by = rec.get("newId")
    claim.history.append(
        HistoryNote(rec["seq"], rec["ts"], actor, op.split(".")[1], rec.get("text", ""))
    )


OPS: dict[str, Fold] = {
    "claim.assert": _assert,
    "claim.confirm": _move,
    "claim.contest": _move,
    "claim.retract": _move,
    "claim.supersede": _move,
}


def render_claim(claim: Claim) -> str:
    out = f"- {claim.id} **{claim.status}** {one_line(claim.text)} (by {claim.by}, run {claim.run}"
    if claim.supersedes:
        out += f"; supersedes {claim.supersedes}"
    if claim.superseded_by:
        out += f"; superseded by {claim.superseded_by}"
    out += ")"
    for note in claim.history:
        text = f": {one_line(note.text, 200)}" if note.text else ""
        out += f"\n    - {note.what} by {note.by}{text}"
    return out


def render(state: LedgerTables) -> str:
    lines = state.entry_texts("claims")
    return HEADER + "\n" + ("\n".join(lines) + "\n" if lines else "_No claims yet._\n")
