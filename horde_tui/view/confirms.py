"""Confirm mode as the app sees it: the commands waiting for a person, read from the
run's `control/` folder, and the decisions sent back through it.

The waiting requests are files (`control/req-*.json`, action `confirm`) the supervisor's
`ConfirmDesk` keeps until they are decided, so a hosted run and an attached one read
the same queue, and a decision is a control request like any other (`send_control`):
one path whatever process hosts the run. A swarm's queue is every live horde's, and
its decisions go to the swarm's own `control/` with a horde target (`h2:member-1`),
which the swarm supervisor routes as it routes a pause. No Textual here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from horde_tui.protocol import controls
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
    horde: str = ""
    """The swarm's horde it waits in (`h2`); "" in a run of its own."""

    @property
    def target(self) -> str:
        """Who a decision on it names: `member-1`, or `h2:member-1` in a swarm."""
        return f"{self.horde}:{self.member}" if self.horde else self.member


def waiting_commands(run_dir: Path, horde: str = "") -> list[WaitingCommand]:
    """The commands waiting in `run_dir` (of `horde`, in a swarm), oldest first."""
    return [
        WaitingCommand(req.id, req.target, req.command or "", req.cwd or "", horde)
        for _, req in controls.pending_requests(run_dir)
        if not isinstance(req, str) and req.action == "confirm"
    ]


def swarm_waiting(run_dirs: Mapping[str, Path]) -> list[WaitingCommand]:
    """The commands waiting in every horde of `run_dirs` (horde -> its run directory),
    oldest first across hordes (a request's id starts with when it was made)."""
    found = [w for horde, d in run_dirs.items() for w in waiting_commands(d, horde)]
    return sorted(found, key=lambda w: w.id)


def send_decision(folder: Path, decision: str, target: str) -> str:
    """Decide the command waiting from `target` (`allow`, `refuse`, `allow-all`) through
    `folder`'s `control/` (a run's, or a swarm's with a horde target); the answer's one
    line. Blocks until the supervisor answers: call it from a thread."""
    return send_control(folder, ACTIONS[decision], target)
