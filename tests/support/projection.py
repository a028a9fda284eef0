"""An oracle for the ledger projections: each one rendered the plain way, shared by the
projection tests (ordinary and odd ledgers)."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers import board, claims, concerns, facts, findings, ideas, resources
from horde_tui.store.state import LedgerState

SIMPLE = {
    "ideas": (ideas, ideas.render_idea),
    "claims": (claims, claims.render_claim),
    "resources": (resources, resources.render_resource),
    "concerns": (concerns, concerns.render_concern),
}


def full_render(state: LedgerState, kind: str) -> str:
    """A projection rendered the plain way, every entry afresh: an oracle independent
    of the incremental pieces (the fresh fold above renders through them too)."""
    if kind in SIMPLE or kind == "facts":
        module, one = SIMPLE.get(kind, (facts, lambda f: facts.render_fact(state, f)))
        lines = [one(e) for e in getattr(state, kind).values()]
        text = module.HEADER + "\n" + ("\n".join(lines) + "\n" if lines else f"_No {kind} yet._\n")
    else:
        entries = state.posts if kind == "board" else list(state.findings.values())
        groups: dict[str, list[Any]] = {run: [] for run in state.runs}
        for e in entries:
            groups.setdefault(e.run, []).append(e)
        text = (board if kind == "board" else findings).HEADER
        for run, members in groups.items():
            info = state.runs.get(run)
            head = "\n" + (board.run_heading(info) if info else f"## Run {run}\n")
            if kind == "findings":
                text += head + "\n" + "\n".join(findings.render_finding(state, f) for f in members)
            elif members:
                text += head + "\n" + "\n".join(board.render_post(p) for p in members) + "\n"
            else:
                text += head
        if not entries:
            text += "\n_No posts yet._\n" if kind == "board" else "\n_No findings yet._\n"
    if state.skipped:
        text += "\n## Skipped ledger lines\n\n" + "".join(f"- {s}\n" for s in state.skipped)
    return text
