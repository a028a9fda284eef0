"""The run screen's state line: the phase, the canary and the clean-stop countdown,
folded from lifecycle events (and the forecast, which the cost line shows).

A hosted supervisor's events and an attached run's (replayed from events.jsonl by
`view/source.py`) are the same `SupervisorEvent`s, so one fold serves both, and a
run read from disk shows what the hosting process showed. Pure: no I/O, and the clock
is an argument, so a countdown is the same on every machine under a frozen clock.

As in the reference, the deliverable and post-mortem helpers show as `synthesizing`
from the first helper's start until the run ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from horde_tui.supervisor.forecast import Forecast

Duration = Callable[[float], str]
"""Formats seconds for the line (`1:25`)."""

HELPER_PHASES = frozenset({"deliverable", "post-mortem"})
SYNTHESIZING = "synthesizing"
CANARY_WAITING = ("running", "retrying")
"""Canary states before its result is known."""


@dataclass
class RunPhase:
    """What the state line says, kept current by `apply`; see the module docstring."""

    phase: str = "starting"
    canary: str = ""
    """`""` before member-1 starts, `running` or `retrying` while it is alone, then the
    supervisor's result (`ok`, `ok after a retry`, `failed: ...`)."""
    canary_member: str = ""
    canary_since: float | None = None
    """When the canary's current attempt started (the line shows how long it has waited)."""
    stop_reason: str = ""
    stop_deadline: float | None = None
    """When a clean stop's grace (with any extension) runs out; None: no clean stop."""
    discovery_over: bool = False
    """Discovery ended (repair, finalize or a helper began): a clean stop's grace applies
    to discovery's members only, so the countdown ends here."""
    ended: bool = False
    forecast: Forecast | None = None
    """The supervisor's `forecast` event, once the canary passed (the run screen's cost
    line shows it)."""

    def apply(self, kind: str, member: str | None, data: dict[str, Any], ts: float) -> None:
        """Fold one lifecycle event (member status lines are ignored)."""
        if kind == "phase-start" and data.get("phase"):
            phase = str(data["phase"])
            self.phase = f"{SYNTHESIZING}: {phase}" if phase in HELPER_PHASES else phase
            self.discovery_over = self.discovery_over or phase != "discovery"
        elif kind == "phase-end" and data.get("phase"):
            phase = str(data["phase"])
            self.phase = SYNTHESIZING if phase in HELPER_PHASES else f"end of {phase}"
            self.discovery_over = True
        elif kind == "run-end":
            self.phase, self.ended = f"ended: {data.get('outcome', '?')}", True
        elif kind in ("member-spawn", "member-exit", "canary"):
            self._canary(kind, member, data, ts)
        elif kind == "forecast":
            with contextlib.suppress(KeyError, TypeError, ValueError):  # a damaged line
                self.forecast = Forecast.from_event(data)
        elif kind == "stop-clean":
            self.stop_reason = str(data.get("reason") or "stop-clean requested")
            self.stop_deadline = ts + _seconds(data.get("grace_s"))
        elif kind == "stop-extended" and self.stop_deadline is not None and "grace_s" in data:
            self.stop_deadline = ts + _seconds(data.get("grace_s"))

    def _canary(self, kind: str, member: str | None, data: dict[str, Any], ts: float) -> None:
        """member-1 starts alone; a failed attempt is retried once; the supervisor's
        `canary` event says how it went. Older logs have no such event: the fan-out (a
        second member's spawn during discovery) says the canary answered."""
        if kind == "canary":
            self.canary = str(data.get("result") or "ok")
        elif kind == "member-spawn" and member:
            if not self.canary and not self.discovery_over:
                self.canary, self.canary_member, self.canary_since = "running", member, ts
            elif self.canary in CANARY_WAITING and member == self.canary_member:
                self.canary_since = ts  # the retry's own wait
            elif self.canary in CANARY_WAITING and not self.discovery_over:
                self.canary = "ok"
        elif kind == "member-exit" and data.get("canary") and self.canary in CANARY_WAITING:
            self.canary = "retrying"

    def canary_text(self, now: float, duration: Duration) -> str:
        """While member-1 is alone `canary: member-1 alone until it answers (0:12)` (or
        `retrying`), then a result worth knowing (`canary ok after a retry`, `canary
        failed: model_error`). A first-try `ok` is left out: on a line that must fit 80
        columns it would say only that the run is running. `""` before the canary starts
        and when a run ended with no word of it."""
        if not self.canary or self.canary == "ok":
            return ""
        if self.canary not in CANARY_WAITING:
            return f"canary {self.canary}"
        if self.ended or self.discovery_over:
            return ""
        waited = duration(now - self.canary_since) if self.canary_since is not None else "-"
        if self.canary == "retrying":
            return f"canary: {self.canary_member} retrying ({waited})"
        return f"canary: {self.canary_member} alone until it answers ({waited})"

    def stop_text(self, now: float, duration: Duration) -> str:
        """The clean stop and its countdown: `stopping clean (reason): 1:25 left`, `grace
        over` once the deadline has passed, no countdown once discovery is over."""
        if self.stop_deadline is None or self.ended:
            return ""
        text = f"stopping clean ({self.stop_reason})"
        if self.discovery_over:
            return text
        left = self.stop_deadline - now
        return f"{text}: {duration(left)} left" if left > 0 else f"{text}: grace over"


def _seconds(value: Any) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return 0.0
