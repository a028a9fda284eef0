"""Confirm mode as the app sees it: the commands waiting for a person, read from the
run's `control/` folder, and the decisions sent back through it.

The waiting requests are files (`control/req-*.json`, action `confirm`) the supervisor's
`ConfirmDesk` keeps until they are decided, so a hosted run and an attached one read
the same queue, and a decision is a control request like any other (`send_control`):
one path whatever process hosts the run. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from horde_tui.supervisor import controls
from horde_tui.view.source import send_control

ACTIONS = {"allow": "approve", "refuse": "refuse", "allow-all": "allow-all"}
"""The app's decision -> the control action that carries it."""


@dataclass(frozen=True)
class WaitingCommand:
    """One member command waiting for a person."""

    id: str
    member: str
    command: str
    cwd: str


def waiting_commands(run_dir: Path) -> list[WaitingCommand]:
    """The commands waiting in `run_dir`, oldest first."""
    return [
        WaitingCommand(req.id, req.target, req.command or "", req.cwd or "")
        for _, req in controls.pending_requests(run_dir)
        if not isinstance(req, str) and req.action == "confirm"
    ]


def send_decision(run_dir: Path, decision: str, member: str) -> str:
    """Decide `member`'s waiting command (`allow`, `refuse`, `allow-all`); the answer's
    one line. Blocks until the supervisor answers: call it from a thread."""
    return send_control(run_dir, ACTIONS[decision], member)
