"""Turn what the supervisor knows into what the widgets show.

The widgets take plain rows; this is the one place that knows what a `MemberState`
field means on screen, so the table, the keys and the member detail screen agree.
(The Events tab reads `events.jsonl`; its columns come from `view.events.event_parts`.)
"""

from __future__ import annotations

from collections.abc import Iterable

from horde_tui.store import activity as activities
from horde_tui.store.members import MemberState
from horde_tui.view.run import LIVE_STATES
from horde_tui.view.swarm import HordeLine
from horde_tui.widgets.member_table import MemberRow

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


def elapsed(state: MemberState, now: float) -> float | None:
    """Seconds since the member's current session started (frozen once it ended)."""
    if state.started is None:
        return None
    end = state.ended if state.status == "exited" and state.ended else now
    return max(0.0, end - state.started)


ACTIVITY_TONES = {
    activities.RATE_LIMITED: "note",
    activities.LOOPING: "note",
    activities.BLOCKED: "note",
    activities.IDLE: "quiet",
}
"""How the table paints a state: held back or looping stands out, idle recedes."""


def member_row(state: MemberState, now: float) -> MemberRow:
    doing = activities.activity(state, now)
    return MemberRow(
        name=state.name,
        role=state.role,
        status=state.status,
        tool=state.current_tool,
        summary=state.tool_summary,
        elapsed_s=elapsed(state, now),
        turns=state.turns,
        tokens=state.prompt_tokens + state.completion_tokens,
        cost_usd=state.cost_usd,
        resets=state.resets,
        exit_cause=state.exit_cause,
        activity=doing.text(now) if doing else "",
        activity_short=doing.text(now, short=True) if doing else "",
        activity_tone=ACTIVITY_TONES.get(doing.state, "") if doing else "",
        ledger_s=now - state.last_write if doing and state.last_write else None,
    )


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
