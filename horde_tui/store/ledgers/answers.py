"""Solved proposals: folded from the ledger, rendered to the run's ANSWER.md.

Solved is two-phase. `solved` pins the revision of every finding and artifact it cites;
a different member validates (`confirm-solved`) or refutes (`contest-solved`) it. A later
change to a pinned finding or artifact withdraws a pending proposal so nobody validates a
stale answer, and a settled answer's status names what changed since its pins. A contest
that names ideas reopens the answer as a new round (`solved.reopen`) once they all close.
With --until-stop a validated round is banked: a later round does not hide it.
"""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import stamp
from horde_tui.store.ledgers.threads import threads_about
from horde_tui.store.model import Proposal, Thread
from horde_tui.store.tables import Fold, LedgerTables


def current(state: LedgerTables, run: str) -> Proposal | None:
    """The run's latest proposal, whatever its status."""
    props = state.proposals.get(run)
    return props[-1] if props else None


def _propose(state: LedgerTables, rec: dict[str, Any]) -> None:
    props = state.proposals.setdefault(rec["run"], [])
    props.append(
        Proposal(
            run=rec["run"],
            by=rec["actor"],
            text=rec["text"],
            cites=list(rec.get("cites", [])),
            pins={k: int(v) for k, v in rec.get("pins", {}).items()},
            seq=rec["seq"],
            ts=rec["ts"],
            round=len(props) + 1,
        )
    )


def _reopen(state: LedgerTables, rec: dict[str, Any]) -> None:
    """The contested round comes back as a new pending round with the same text and pins."""
    props = state.proposals.get(rec["run"], [])
    prior = props[-1] if props else None
    if prior is None or prior.status != "contested" or prior.round != rec.get("of"):
        return
    props.append(
        Proposal(
            run=prior.run,
            by=prior.by,
            text=prior.text,
            cites=list(prior.cites),
            pins=dict(prior.pins),
            seq=rec["seq"],
            ts=rec["ts"],
            round=len(props) + 1,
            reopened_from=prior.round,
        )
    )


def banked(state: LedgerTables, run: str) -> Proposal | None:
    """The latest validated round before the current one (--until-stop banks each validated
    answer and reopens the slot): it stands until a later round is validated too."""
    props = state.proposals.get(run, [])
    if not props or props[-1].status == "validated":
        return None
    return next((p for p in reversed(props[:-1]) if p.status == "validated"), None)


def reopened_note(state: LedgerTables, prop: Proposal) -> str:
    """`reopened from round 1 (contested by member-2; #2, #3 closed)`, or ''."""
    if prop.reopened_from is None:
        return ""
    prior = state.proposals[prop.run][prop.reopened_from - 1]
    return (
        f"reopened from round {prior.round} (contested by {prior.contested_by}; "
        f"{', '.join(prior.contest_ideas)} closed)"
    )


def _settle(state: LedgerTables, rec: dict[str, Any]) -> None:
    prop = current(state, rec["run"])
    if prop is None:
        return
    op = rec["op"]
    if op == "solved.confirm":
        prop.status, prop.validated_by = "validated", rec["actor"]
    elif op == "solved.contest":
        prop.status, prop.contested_by = "contested", rec["actor"]
        prop.contest_text = rec.get("text", "")
        prop.contest_ideas = list(rec.get("ideas", []))
    elif op == "solved.withdraw":
        prop.status, prop.withdrawn_reason = "withdrawn", rec.get("reason", "")


OPS: dict[str, Fold] = {
    "solved.propose": _propose,
    "solved.confirm": _settle,
    "solved.contest": _settle,
    "solved.withdraw": _settle,
    "solved.reopen": _reopen,
}


def changed_citations(state: LedgerTables, prop: Proposal) -> list[str]:
    """Cited findings whose revision moved, or that were superseded, and cited artifacts
    republished, since the pin."""
    changed = []
    for ref, rev in prop.pins.items():
        f = state.findings.get(ref)
        art = state.artifacts.get(ref)
        if f is not None and (f.revision != rev or f.superseded_by):
            changed.append(ref)
        elif art is not None and art.revision != rev:
            changed.append(ref)
    return changed


def open_requests(state: LedgerTables, run: str) -> list[Thread]:
    """Unresolved threads about `run`'s answer (`target=answer`): debt the report names,
    and work the repair phase serves with the blockers while the answer is pending."""
    return [t for t in threads_about(state, "answer") if t.run == run and not t.closed]


def render(state: LedgerTables, run: str) -> str:
    """ANSWER.md for `run` (empty string when the run has no proposal)."""
    prop = current(state, run)
    if prop is None:
        return ""
    reopened = reopened_note(state, prop)
    status = {
        "pending": f"{reopened or 'proposed'}, awaiting validation by another member",
        "validated": f"validated by {prop.validated_by}",
        "contested": f"contested by {prop.contested_by}",
        "withdrawn": f"withdrawn: {prop.withdrawn_reason}",
    }[prop.status]
    changed = changed_citations(state, prop)
    if changed and prop.status != "withdrawn":
        status += f"; changed since pinned: {', '.join(changed)}"
    bank = banked(state, run)
    if bank is not None:
        status += f"; round {bank.round}'s validated answer stays banked (below)"
    pins = ", ".join(f"{k}@r{v}" for k, v in prop.pins.items()) or "none"
    lines = [
        f"# Answer (run {run}, round {prop.round})",
        "",
        f"Status: {status}",
        f"Proposed by {prop.by} at {stamp(prop.ts)}. Cites: {', '.join(prop.cites) or 'none'}.",
        f"Pinned revisions: {pins}.",
        "",
        prop.text.strip(),
        "",
    ]
    if prop.status == "contested" and prop.contest_text:
        lines += ["## Contest", "", prop.contest_text.strip(), ""]
    if bank is not None:
        lines += [
            f"## Banked answer (round {bank.round}, validated by {bank.validated_by})",
            "",
            f"It stands unless round {prop.round} is validated too. Proposed by {bank.by} at "
            f"{stamp(bank.ts)}. Cites: {', '.join(bank.cites) or 'none'}.",
            "",
            bank.text.strip(),
            "",
        ]
    return "\n".join(lines)
