"""What `q` does now, and what the app does when what it hosts has ended: pure decisions.

The app hosts at most one run and one swarm and may show a run another process hosts;
quitting must never leave a hosted run with no supervisor. `quit_step` picks the dialog
(or none) from what is live; `end_step` says whether a supervisor that has returned
hands its run to a detached `horde-tui resume`, ends the app, or leaves it open;
`exit_status` is what the shell gets when the app ends. The app only carries them out,
so the whole table is tested without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class Leaving(Enum):
    """Where the app is in leaving: the one state behind quit, detach and handoff."""

    STAY = "stay"
    """Nothing asked: the app stays open when what it hosts ends."""
    AFTER_END = "after-end"
    """A stop was chosen in the quit dialog: quit once the run or swarm has ended."""
    HANDING_OFF = "handing-off"
    """Detach was chosen: once the supervisor has let go, a detached resume takes over
    and the app quits."""


class QuitStep(Enum):
    IGNORE = "ignore"
    """A dialog is already open."""
    WAIT = "wait"
    """A handoff is under way: quitting now would leave the run with no supervisor."""
    ASK_RUN = "ask-run"
    """The hosted run is live: stop it clean, stop it hard or detach (hand it off)."""
    ASK_SWARM = "ask-swarm"
    """The hosted swarm is live: its hordes die with the app unless handed off."""
    ASK_ATTACHED = "ask-attached"
    """A run another process hosts is on screen and live: leave it going or stop it."""
    EXIT = "exit"


@dataclass(frozen=True)
class QuitState:
    choosing: bool
    """A choice dialog is on top."""
    leaving: Leaving
    run_live: bool
    """This app hosts a run whose supervisor has not returned."""
    swarm_live: bool
    attached_live: bool
    """The run screen shows a live run hosted elsewhere."""


def quit_step(state: QuitState) -> QuitStep:
    """The hosted run comes first, then the hosted swarm (before the attached run: a
    swarm's hordes show as attached runs, yet they die with this app)."""
    if state.choosing:
        return QuitStep.IGNORE
    if state.leaving is Leaving.HANDING_OFF:
        return QuitStep.WAIT
    if state.run_live:
        return QuitStep.ASK_RUN
    if state.swarm_live:
        return QuitStep.ASK_SWARM
    if state.attached_live:
        return QuitStep.ASK_ATTACHED
    return QuitStep.EXIT


class EndStep(Enum):
    HAND_OFF = "hand-off"
    """Start the detached resume; the app quits once it has taken over."""
    EXIT = "exit"
    STAY = "stay"


def end_step(leaving: Leaving, let_go: bool) -> EndStep:
    """After a hosted supervisor returned; `let_go`: it returned no summary because it
    handed its run off (not a crash, not a finished run)."""
    if leaving is Leaving.HANDING_OFF and let_go:
        return EndStep.HAND_OFF
    return EndStep.STAY if leaving is Leaving.STAY else EndStep.EXIT


class HasExitCode(Protocol):
    @property
    def exit_code(self) -> int: ...


def exit_status(summary: HasExitCode | None, swarm_code: int | None, error: str | None) -> int:
    """The hosted run's status (its outcome's, `protocol.outcome.OUTCOME_TABLE`), else
    the hosted swarm's, else 1 when the run's supervisor failed; 0 with nothing hosted or
    a run handed off (it goes on in another process)."""
    if summary is not None:
        return summary.exit_code
    if swarm_code is not None:
        return swarm_code
    return 1 if error else 0
