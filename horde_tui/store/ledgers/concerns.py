"""CONCERNS.md: the slugs findings are filed under, each with its definition."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import one_line
from horde_tui.store.model import Concern
from horde_tui.store.tables import Fold, LedgerTables

HEADER = (
    "# Concerns\n\n"
    "Every finding names one of these slugs. A new slug needs a definition; a look-alike\n"
    "of an existing slug is refused unless filed with `concernNew: true`.\n"
)


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    concern = Concern(
        id=rec["slug"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        definition=rec.get("definition", ""),
    )
    state.concerns[concern.id] = concern
    state.touch("concerns", concern)


OPS: dict[str, Fold] = {"concern.add": _add}


def render_concern(concern: Concern) -> str:
    return f"- `{concern.id}`: {one_line(concern.definition)} (by {concern.by}, run {concern.run})"


def render(state: LedgerTables) -> str:
    lines = state.entry_texts("concerns")
    return HEADER + "\n" + ("\n".join(lines) + "\n" if lines else "_No concerns yet._\n")
