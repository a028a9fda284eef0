"""Evidence (E#) attached to an F#, A#, Q# or V#: supporting, contradicting or extending.

An evidence id is the E# of the event that carried its full submission (`attach`, or a
`review` with `evidenceText`), so `inspect target=E#` shows it in full. Event ids are
numbered per run, so evidence is keyed by `run/E#`.
"""

from __future__ import annotations

from typing import Any

from horde_tui.store.model import Evidence
from horde_tui.store.tables import Fold, LedgerTables


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    ev = Evidence(
        id=rec["id"],
        run=rec["run"],
        by=rec["actor"],
        target=rec["target"],
        relation=rec["relation"],
        text=rec.get("text", ""),
        seq=rec["seq"],
        ts=rec["ts"],
        review=rec.get("review", ""),
    )
    known = ev.key in state.evidence
    state.evidence[ev.key] = ev
    if not known:
        state.evidence_by_target.setdefault(ev.target, []).append(ev.key)


OPS: dict[str, Fold] = {"evidence.add": _add}


def evidence_about(state: LedgerTables, target: str) -> list[Evidence]:
    """Evidence attached to `target`, in ledger order."""
    return [state.evidence[k] for k in state.evidence_by_target.get(target, [])]
