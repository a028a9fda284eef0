"""Review assignment: every 30 s, hand each artifact revision that has been stable for a
minute and still awaits a qualifying review to a running member who does not own it.

The one with the fewest open review requests gets it, so the load spreads; an earlier
reviewer of the same artifact goes first, because it can `reattest` what did not change.
The request is an ordinary `message` of kind review-request from the parent, so it
reaches the member's context through the inbox and resolves when the member reviews.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from horde_tui.protocol import run_action
from horde_tui.store.acceptance import awaiting_review, prior_reviewers
from horde_tui.store.ledgers.findings import owner_and_revision
from horde_tui.store.ledgers.threads import open_threads_to
from horde_tui.store.timestamps import epoch

if TYPE_CHECKING:
    from horde_tui.supervisor.context import RunContext

INTERVAL_S = 30.0
STABLE_S = 60.0


def _age_s(ts: str, now: float) -> float:
    """Seconds since `ts`; 0 for an unreadable stamp (treated as just changed)."""
    when = epoch(ts)
    return 0.0 if when is None else now - when


def pick_reviewer(candidates: list[str], load: dict[str, int], earlier: list[str]) -> str | None:
    """Earlier reviewers first (most recent first), then the least loaded, then by name."""
    for name in earlier:
        if name in candidates:
            return name
    return min(candidates, key=lambda n: (load.get(n, 0), n)) if candidates else None


def assign_reviews(sup: RunContext, now: float | None = None) -> list[tuple[str, str]]:
    """One pass: returns the (artifact, member) pairs that were requested."""
    if sup.parent is None or sup.stop is not None:
        return []
    now = time.time() if now is None else now
    sup.parent.refresh()
    state = sup.parent.state
    running = [n for n in sup.running() if sup.members[n].status == "running"]
    load = {n: len(open_threads_to(state, n, frozenset({"review-request"}))) for n in running}
    assigned: list[tuple[str, str]] = []
    for target in awaiting_review(state, sup.run_id):
        art = state.artifacts[target]
        if _age_s(art.current.ts, now) < STABLE_S:
            continue
        owner, revision = owner_and_revision(state, target)
        candidates = [n for n in running if n != owner]
        member = pick_reviewer(candidates, load, prior_reviewers(state, target))
        if member is None:
            continue
        result = run_action(
            sup.parent,
            {
                "action": "message",
                "to": member,
                "kind": "review-request",
                "target": target,
                "text": f"Please review {target} r{revision} against its criteria "
                "(review target=... with checked/unchecked scope and evidence).",
            },
            run=sup.run_id,
        )
        if result.ok:
            load[member] = load.get(member, 0) + 1
            assigned.append((target, member))
            sup.emit("review-assigned", member, target=target, revision=revision)
    return assigned
