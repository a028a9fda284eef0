"""Turn what the supervisor knows into what the widgets show.

The widgets take plain rows and lines; this is the one place that knows what a
`MemberState` field or a `SupervisorEvent` kind means on screen, so the table, the event
log and the member detail screen agree.
"""

from __future__ import annotations

from typing import Any

from horde_tui.supervisor.processes import MemberState
from horde_tui.supervisor.run import SupervisorEvent
from widgets.event_log import EventLine
from widgets.member_table import FAILED_CAUSES, MemberRow

QUIET_STATUS = frozenset({"turn-start", "usage", "tool-end"})
"""Member status lines that change the table but would only be noise in the log."""

LIVE_STATUSES = frozenset({"starting", "running"})
"""A member in one of these can be paused."""

STOPPABLE_STATUSES = frozenset({"starting", "running", "paused"})

EVENT_LEVEL = {
    "run-start": "good",
    "run-end": "good",
    "solved": "good",
    "member-reset": "warn",
    "pause": "warn",
    "stop-clean": "warn",
    "stop-extended": "warn",
    "solved-unvalidated": "warn",
    "stop-hard": "error",
}


def elapsed(state: MemberState, now: float) -> float | None:
    """Seconds since the member's current session started (frozen once it ended)."""
    if state.started is None:
        return None
    end = state.ended if state.status == "exited" and state.ended else now
    return max(0.0, end - state.started)


def member_row(state: MemberState, now: float) -> MemberRow:
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
    )


def _value(value: Any) -> str:
    if isinstance(value, list | tuple | set):
        return ",".join(str(item) for item in value)
    return str(value)


def _extras(data: dict[str, Any]) -> str:
    return " ".join(f"{k}={_value(v)}" for k, v in data.items() if v not in (None, "", [], ()))


def event_line(event: SupervisorEvent) -> EventLine | None:
    """The log line for an event, or None for status lines the log leaves out."""
    data = event.data
    who = event.member or ""
    if event.kind in ("phase-start", "phase-end"):
        verb = "begins" if event.kind == "phase-start" else "ends"
        rest = {k: v for k, v in data.items() if k != "phase"}
        text = f"{data.get('phase', '?')} {verb} {_extras(rest)}".rstrip()
        return EventLine(event.ts, who, "phase", text)
    if event.kind != "member-status":
        level = EVENT_LEVEL.get(event.kind, "info")
        if event.kind == "member-exit":
            level = "error" if data.get("cause") in FAILED_CAUSES else "info"
        # The member column names the member, so "member-exit" reads as "exit".
        return EventLine(event.ts, who, event.kind.removeprefix("member-"), _extras(data), level)
    kind = str(data.get("type") or "?")
    if kind in QUIET_STATUS:
        return None
    if kind == "tool-start":
        tool = str(data.get("tool") or "")
        summary = str(data.get("summary") or "")
        return EventLine(event.ts, who, "tool", summary or tool)
    if kind == "message":
        return EventLine(event.ts, who, "says", str(data.get("text", "")))
    if kind == "exit":
        # The supervisor's own member-exit line gives the cause; keep only the last words.
        message = str(data.get("message") or "")
        return EventLine(event.ts, who, "says", message) if message.strip() else None
    return EventLine(event.ts, who, kind, _extras(data))
