"""The parent's writes: lifecycle events, released ideas, the wind-down notice.

The parent writes through the same store and tool as members (actor `parent`), so its
actions are audited in `events.jsonl` like everyone else's.
"""

from __future__ import annotations

from typing import Any

from horde_tui.protocol import run_action
from horde_tui.store import notices
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision, HordeStore


def append(parent: HordeStore, run_id: str, fields: dict[str, Any]) -> str:
    """One lifecycle event under actor `parent`; returns its E#."""
    return parent.append_event(run_id, fields)


def release_ideas(parent: HordeStore | None, run_id: str, member: str | None = None) -> list[str]:
    """Return claimed ideas to the open pool: one member's (a reset) or everyone's (finalize).

    At finalize every idea still claimed goes back to the pool: members of a finished run
    hold nothing, and a claim left by an interrupted earlier run would otherwise block
    the idea forever.
    """
    if parent is None:
        return []
    parent.refresh()
    ids = [
        i.id
        for i in parent.state.ideas.values()
        if i.status == "claimed" and (i.owner == member if member else True)
    ]
    if not ids:
        return []
    why = f"{member} was reset" if member else "the run ended with it unfinished"

    def decide(state: LedgerState) -> Decision:
        held = [i for i in ids if state.ideas[i].status == "claimed"]
        records = [{"op": "idea.release", "id": i, "reason": why} for i in held]
        return Decision(True, f"released {', '.join(held)}", None, records, "released")

    parent.transact(run_id, "release", {"ids": ids, "reason": why}, decide)
    return ids


def request_wind_down(parent: HordeStore | None, run_id: str, reason: str, grace_s: float) -> None:
    """Write the `.stop-clean` sentinel, send the wrap-up notice to the running members
    (as the supervisor's notice, which no member can write) and post it to the board
    (the run's record)."""
    if parent is None:
        return
    parent.paths.stop_clean_sentinel(run_id).write_text(f"{reason}\n")
    text = (
        f"WRAP UP ({reason}): the run stops in {grace_s:g}s. No new ideas or claims. "
        "File your findings, close your ideas with done or rule-out, post a summary."
    )
    notices.post(parent.paths.notices(run_id), "wrap-up", text)
    run_action(parent, {"action": "post", "text": text}, run=run_id)
