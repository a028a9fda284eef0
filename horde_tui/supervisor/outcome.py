"""What a finished (or interrupted) run is, for the report writers.

`RunSummary` is everything finalize knows besides the ledgers and the event log: the
outcome, the canary result, each member's end, the timing. The report, summary and graph
writers are pure functions of it plus `LedgerState` and `events.jsonl`, so a run can be
finalized later from disk (`horde-tui finalize RUN`) with the same result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from horde_tui.store.members import MemberState

OUTCOMES = (
    "finished",
    "solved",
    "solved-unvalidated",
    "stopped by user",
    "stopped at deadline",
    "stopped at budget",
    "canary failed",
    "failed",
    "interrupted",
)


@dataclass
class RunSummary:
    run_id: str
    outcome: str
    diagnosis: str
    """One line: why the run ended the way it did."""
    canary: str
    """`ok`, `ok after a retry`, or `failed: <cause>`."""
    started: float
    ended: float
    model: str
    demo: bool = False
    members: list[MemberState] = field(default_factory=list)
    stop_clean_at: float | None = None
    """When a clean stop began: board posts after it are reported as late."""
    layers: list[str] = field(default_factory=list)
    resumed_at: list[float] = field(default_factory=list)
    """When `horde-tui resume` carried the run on after its supervisor stopped."""
    sandbox_note: str = ""
    """Set when members' commands ran without a sandbox: the report says so, once."""
    baseline: str = ""
    """`--baseline` as asked (a run id or `last`): REPORT.md's Delta section."""
    forecast: dict[str, Any] | None = None
    """The `forecast` event made after the canary (`supervisor.forecast`), if any."""

    @property
    def exit_code(self) -> int:
        """0 finished or solved, 130 stopped by the user, 1 anything else."""
        if self.outcome in ("finished", "solved", "solved-unvalidated"):
            return 0
        if self.outcome == "stopped by user":
            return 130
        return 1
