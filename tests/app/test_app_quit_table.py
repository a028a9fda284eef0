"""The quit decision as a table: what `q` does for each combination of what is live, and
what the app does when a hosted supervisor returns, and the status the shell gets
(`horde_tui.app.quitting`).

The app's own tests (test_app_detach, test_app_attach, test_app_swarm) drive the same
paths through a terminal; this table names every case, including the orders of
precedence those tests cannot reach one by one.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from horde_tui.app.quitting import (
    EndStep,
    Leaving,
    QuitState,
    QuitStep,
    end_step,
    exit_status,
    quit_step,
)

STAY, AFTER, HANDING = Leaving.STAY, Leaving.AFTER_END, Leaving.HANDING_OFF

QUIT_TABLE = [
    # choosing, leaving, run live, swarm live, attached live -> step
    (False, STAY, False, False, False, QuitStep.EXIT),
    (False, STAY, True, False, False, QuitStep.ASK_RUN),
    (False, STAY, False, True, False, QuitStep.ASK_SWARM),
    (False, STAY, False, False, True, QuitStep.ASK_ATTACHED),
    # the hosted run before the swarm, the swarm before an attached horde of it
    (False, STAY, True, True, True, QuitStep.ASK_RUN),
    (False, STAY, False, True, True, QuitStep.ASK_SWARM),
    # a stop was chosen and the run is still finalizing: q asks again
    (False, AFTER, True, False, False, QuitStep.ASK_RUN),
    (False, AFTER, False, False, False, QuitStep.EXIT),
    # detaching: never quit before the detached resume has the run
    (False, HANDING, True, False, False, QuitStep.WAIT),
    (False, HANDING, False, True, False, QuitStep.WAIT),
    (False, HANDING, False, False, False, QuitStep.WAIT),
    # a dialog is open: q does nothing, whatever is live
    (True, STAY, True, False, False, QuitStep.IGNORE),
    (True, HANDING, False, False, False, QuitStep.IGNORE),
    (True, STAY, False, False, False, QuitStep.IGNORE),
]


@pytest.mark.parametrize(("choosing", "leaving", "run", "swarm", "attached", "step"), QUIT_TABLE)
def test_quit_step(
    choosing: bool, leaving: Leaving, run: bool, swarm: bool, attached: bool, step: QuitStep
) -> None:
    assert quit_step(QuitState(choosing, leaving, run, swarm, attached)) is step


def test_quit_exits_at_once_only_when_nothing_is_live_and_nothing_is_under_way() -> None:
    """Over every state: `EXIT` exactly when no dialog, no handoff and nothing live."""
    for choosing, leaving, run, swarm, attached in itertools.product(
        (False, True), Leaving, (False, True), (False, True), (False, True)
    ):
        state = QuitState(choosing, leaving, run, swarm, attached)
        idle = not (choosing or run or swarm or attached) and leaving is not HANDING
        assert (quit_step(state) is QuitStep.EXIT) == idle, state


END_TABLE = [
    # leaving, the supervisor let go (handed off) -> step
    (STAY, False, EndStep.STAY),  # the run ended by itself: the report opens
    (AFTER, False, EndStep.EXIT),  # a stop chosen from the quit dialog
    (HANDING, True, EndStep.HAND_OFF),
    (HANDING, False, EndStep.EXIT),  # it finished (or failed) before letting go
    (STAY, True, EndStep.STAY),  # let go without a handoff asked for: shown as ended
    (AFTER, True, EndStep.EXIT),  # a stop was chosen: quit whatever it returned
]


def test_the_end_table_names_every_case() -> None:
    assert {(leaving, let_go) for leaving, let_go, _ in END_TABLE} == {
        (leaving, let_go) for leaving in Leaving for let_go in (False, True)
    }


@pytest.mark.parametrize(("leaving", "let_go", "step"), END_TABLE)
def test_end_step(leaving: Leaving, let_go: bool, step: EndStep) -> None:
    assert end_step(leaving, let_go) is step


EXIT_TABLE = [
    # the hosted run's summary exit code, the hosted swarm's, the supervisor's error -> status
    (None, None, None, 0),  # nothing hosted, or handed off: the run goes on elsewhere
    (0, None, None, 0),
    (130, None, None, 130),  # stopped by the user
    (1, 130, None, 1),  # a run's summary speaks before a swarm's code
    (None, 130, None, 130),
    (None, 0, "RuntimeError: boom", 0),  # the swarm's own code (1 when its worker failed)
    (None, None, "RuntimeError: boom", 1),  # the run's supervisor failed
]


@pytest.mark.parametrize(("run", "swarm", "error", "status"), EXIT_TABLE)
def test_exit_status(run: int | None, swarm: int | None, error: str | None, status: int) -> None:
    summary = None if run is None else SimpleNamespace(exit_code=run)
    assert exit_status(summary, swarm, error) == status
