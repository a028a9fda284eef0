"""Targeted threads (Q#): question, blocker, review-request, challenge, handoff, decision.

A thread runs from its sender (`by`) to one recipient (`to`) and moves through ack,
respond, defer and resolve notes. Threads are not projected to a markdown ledger of
their own: `collaboration`, `inbox` and `inspect` read them, and acceptance
(`horde_tui.store.acceptance`) counts open blockers and challenges against their target.
The fold also keeps each member's inbox watermark (`inbox.deliver` receipts).
"""

from __future__ import annotations

from typing import Any

from horde_tui.store.model import Thread, ThreadNote
from horde_tui.store.tables import Fold, LedgerTables

NEXT_STATE = {"respond": "responded", "defer": "deferred", "resolve": "resolved"}
"""Note -> the thread state it leads to (`ack` only moves an `open` thread to `acked`)."""


def _open(state: LedgerTables, rec: dict[str, Any]) -> None:
    thread = Thread(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        to=rec["to"],
        kind=rec["kind"],
        text=rec.get("text", ""),
        target=rec.get("target"),
        target_revision=rec.get("targetRevision"),
        review=rec.get("review"),
        repin=rec.get("repin"),
    )
    state.stamp(thread)
    state.threads[thread.id] = thread
    if thread.target:
        state.threads_by_target.setdefault(thread.target, []).append(thread.id)


def _note(state: LedgerTables, rec: dict[str, Any]) -> None:
    thread = state.threads[rec["id"]]
    state.stamp(thread)
    what = rec["what"]
    thread.notes.append(
        ThreadNote(
            rec["seq"],
            rec["ts"],
            rec["actor"],
            what,
            rec.get("text", ""),
            rec.get("evidence", ""),
            rec.get("auto", ""),
        )
    )
    if what == "ack":
        if thread.state == "open":
            thread.state = "acked"
    else:
        thread.state = NEXT_STATE[what]  # type: ignore[assignment]


def _deliver(state: LedgerTables, rec: dict[str, Any]) -> None:
    member = rec["member"]
    state.delivered[member] = max(state.delivered.get(member, 0), int(rec["upto"]))


OPS: dict[str, Fold] = {
    "thread.open": _open,
    "thread.note": _note,
    "inbox.deliver": _deliver,
}


def threads_about(state: LedgerTables, target: str) -> list[Thread]:
    """Every thread whose target is `target`, in ledger order."""
    return [state.threads[q] for q in state.threads_by_target.get(target, [])]


def open_blockers(state: LedgerTables, target: str) -> list[Thread]:
    """Blockers and challenges on `target` that are not resolved (deferred ones count:
    `defer` keeps the debt visible)."""
    return [t for t in threads_about(state, target) if t.blocking]


def participants(thread: Thread) -> tuple[str, str]:
    return thread.by, thread.to


def open_threads_to(
    state: LedgerTables, member: str, kinds: frozenset[str] | None = None
) -> list[Thread]:
    """Unresolved threads addressed to `member` (of `kinds`, when given): its queue."""
    return [
        t
        for t in state.threads.values()
        if t.to == member and not t.closed and (kinds is None or t.kind in kinds)
    ]


def awaiting_resolution(state: LedgerTables, member: str) -> list[Thread]:
    """Threads `member` sent that were answered and wait for it to resolve them."""
    return [t for t in state.threads.values() if t.by == member and t.state == "responded"]
