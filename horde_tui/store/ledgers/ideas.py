"""IDEAS.md: the checklist of ideas, open, claimed, done and ruled out."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import indented, one_line
from horde_tui.store.model import HistoryNote, Idea
from horde_tui.store.tables import Fold, LedgerTables

MARK = {"open": "[ ]", "claimed": "[~]", "done": "[x]", "ruled-out": "[-]"}

HEADER = (
    "# Ideas\n\n"
    "The horde's checklist. `[ ]` open, `[~]` claimed, `[x]` done, `[-]` ruled out.\n"
    "Written only through the `horde` tool; this file is regenerated from ledger.jsonl.\n"
)


def _changing(state: LedgerTables, rec: dict[str, Any]) -> Idea:
    """The idea `rec` changes, marked changed before anything about it is mutated."""
    idea = state.ideas[rec["id"]]
    state.touch("ideas", idea)
    return idea


def _note(idea: Idea, rec: dict[str, Any], what: str, text: str = "") -> None:
    idea.history.append(HistoryNote(rec["seq"], rec["ts"], rec["actor"], what, text))


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    idea = Idea(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        text=rec["text"],
    )
    state.ideas[idea.id] = idea
    state.touch("ideas", idea)
    state.idea_index.add_text(idea.id, idea.text)


def _claim(state: LedgerTables, rec: dict[str, Any]) -> None:
    idea = _changing(state, rec)
    idea.status, idea.owner = "claimed", rec["actor"]
    _note(idea, rec, "claimed")


def _done(state: LedgerTables, rec: dict[str, Any]) -> None:
    idea = _changing(state, rec)
    idea.status, idea.result = "done", rec.get("result", "")
    _note(idea, rec, "done", idea.result)


def _rule_out(state: LedgerTables, rec: dict[str, Any]) -> None:
    idea = _changing(state, rec)
    idea.status, idea.result = "ruled-out", rec.get("reason", "")
    _note(idea, rec, "ruled out", idea.result)


def _release(state: LedgerTables, rec: dict[str, Any]) -> None:
    """`drop` by the owner, or the parent returning an unfinished idea to the pool."""
    idea = _changing(state, rec)
    idea.status, idea.owner = "open", None
    _note(idea, rec, "dropped" if rec["op"] == "idea.drop" else "released", rec.get("reason", ""))


def _corroborate(state: LedgerTables, rec: dict[str, Any]) -> None:
    idea = state.ideas[rec["id"]]
    if rec["actor"] not in idea.corroborators:
        state.touch("ideas", idea)
        idea.corroborators.append(rec["actor"])


OPS: dict[str, Fold] = {
    "idea.add": _add,
    "idea.claim": _claim,
    "idea.done": _done,
    "idea.ruleout": _rule_out,
    "idea.drop": _release,
    "idea.release": _release,
    "idea.corroborate": _corroborate,
}


def render_idea(idea: Idea) -> str:
    text = idea.text.strip().splitlines() or [""]
    line = f"- {MARK[idea.status]} {idea.id} {one_line(text[0])}"
    tail = f" (by {idea.by}, run {idea.run}"
    if idea.status == "claimed":
        tail += f"; claimed by {idea.owner}"
    elif idea.status == "done":
        tail += f"; done by {idea.owner or idea.by}"
    elif idea.status == "ruled-out":
        tail += f"; ruled out by {idea.owner or idea.by}"
    if idea.corroborators:
        tail += f"; also raised by {', '.join(idea.corroborators)}"
    out = line + tail + ")"
    if len(text) > 1:
        out += "\n" + indented("\n".join(text[1:]), "    ")
    if idea.closed and idea.result:
        label = "result" if idea.status == "done" else "reason"
        out += f"\n    {label}: {one_line(idea.result)}"
    return out


def render(state: LedgerTables) -> str:
    lines = state.entry_texts("ideas")
    return HEADER + "\n" + ("\n".join(lines) + "\n" if lines else "_No ideas yet._\n")
