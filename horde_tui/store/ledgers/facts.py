"""FACTS.md: checkable facts about the target, some provisional on open work."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import indented, one_line
from horde_tui.store.model import Fact
from horde_tui.store.tables import Fold, LedgerTables

HEADER = (
    "# Facts\n\n"
    "Checkable facts about the target. A fact about something an open idea or a contested\n"
    "claim is still auditing is marked provisional until that work closes.\n"
)


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    fact = Fact(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        text=rec["text"],
        delta_of=rec.get("deltaOf"),
        provisional_on=rec.get("provisionalOn"),
    )
    state.facts[fact.id] = fact
    state.touch("facts", fact)
    if fact.provisional_on:
        # Whether it shows as provisional follows that idea or claim (`is_provisional`),
        # even one created later: re-render the fact whenever it is touched.
        state.watch("ideas", fact.provisional_on, "facts", fact.id)
        state.watch("claims", fact.provisional_on, "facts", fact.id)
    state.fact_index.add_text(fact.id, fact.text)


def _corroborate(state: LedgerTables, rec: dict[str, Any]) -> None:
    fact = state.facts[rec["id"]]
    if rec["actor"] not in fact.corroborators and rec["actor"] != fact.by:
        state.touch("facts", fact)
        fact.corroborators.append(rec["actor"])


OPS: dict[str, Fold] = {"fact.add": _add, "fact.corroborate": _corroborate}


def is_provisional(state: LedgerTables, fact: Fact) -> bool:
    """Still provisional while the idea it depends on is open or the claim is contested."""
    ref = fact.provisional_on
    if not ref:
        return False
    if ref in state.ideas:
        return not state.ideas[ref].closed
    if ref in state.claims:
        return state.claims[ref].status == "contested"
    return False


def render_fact(state: LedgerTables, fact: Fact) -> str:
    lines = fact.text.strip().splitlines() or [""]
    out = f"- {fact.id} {one_line(lines[0])} (by {fact.by}, run {fact.run}"
    if fact.delta_of:
        out += f"; extends {fact.delta_of}"
    if fact.corroborators:
        out += f"; confirmed by {', '.join(fact.corroborators)}"
    out += ")"
    if is_provisional(state, fact):
        out += f" **provisional on {fact.provisional_on}**"
    if len(lines) > 1:
        out += "\n" + indented("\n".join(lines[1:]), "    ")
    return out


def render(state: LedgerTables) -> str:
    lines = state.entry_texts("facts")
    return HEADER + "\n" + ("\n".join(lines) + "\n" if lines else "_No facts yet._\n")
