"""Turn what the supervisor knows into what the widgets show.

The widgets take plain rows (`store.display.MemberRow.of`, which the pages and REPORT.md
share); this says which controls apply to whom, so the keys and the palette agree.
(The Events tab reads `events.jsonl`; its columns come from `view.events.event_parts`.)
"""

from __future__ import annotations

from collections.abc import Iterable

from horde_tui.store.members import MemberState
from horde_tui.view.run import LIVE_STATES
from horde_tui.view.swarm import HordeLine

LIVE_STATUSES = frozenset({"starting", "running"})
"""A member in one of these can be paused."""

STOPPABLE_STATUSES = frozenset({"starting", "running", "paused"})

STOPS = frozenset({"stop_clean", "stop_hard"})
"""The horde controls that also reach a horde not started yet (it then never starts)."""

MEMBER_ROLES = frozenset({"member", "verifier"})
"""The horde's members; any other role (synthesis, postmortem) is a finalize helper."""


def member_tally(states: Iterable[MemberState]) -> str:
    """`4 members: 3 running, 1 exited · helpers: synthesis exited`: the header counts
    the run's members and names the finalize helpers apart (they are not members)."""
    counts: dict[str, int] = {}
    helpers = []
    for state in states:
        if state.role in MEMBER_ROLES:
            counts[state.status] = counts.get(state.status, 0) + 1
        else:
            helpers.append(f"{state.name} {state.status}")
    tally = ", ".join(f"{n} {status}" for status, n in counts.items())
    text = f"{sum(counts.values())} members: {tally}"
    return text + (f" · helpers: {', '.join(helpers)}" if helpers else "")


def horde_applies(action: str, swarm_live: bool, line: HordeLine) -> bool:
    """Whether a control applies to this horde now: the keys' `check_action` and the
    palette share it, so neither offers what the other greys out."""
    if action == "open_horde":
        return line.run_dir is not None
    if action in STOPS and swarm_live and line.run_dir is None:
        return True  # not started yet: a stop keeps it from starting
    if not swarm_live or line.state not in LIVE_STATES:
        return False
    if action == "pause":
        return any(s in LIVE_STATUSES for s in line.statuses)
    if action == "resume":
        return "paused" in line.statuses
    if action == "reset":
        return any(s in STOPPABLE_STATUSES for s in line.statuses)
    return action in ("stop_clean", "stop_hard")
