"""`q` in `HordeApp` carried out: the quit dialogs, detach and the handoff to a detached
`horde-tui resume`.

What to do is decided by the pure functions of `quitting.py`; `QuitFlow` asks the
question they pick, acts on the answer, starts the handoff once a hosted supervisor has
let go (`ended`) and keeps the one `Leaving` state they read. It reaches the app only
through `QuitHost`, so it never imports the app.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any, NoReturn, Protocol

from textual.screen import Screen

from horde_tui.app.quitting import EndStep, Leaving, QuitState, QuitStep, end_step, quit_step
from horde_tui.app.watching import AttachedPoll
from horde_tui.common.settings import Settings
from horde_tui.launch.launch import HandoffFailed, hand_off
from horde_tui.screens.modals import ChoiceScreen, quit_screen
from horde_tui.screens.run import RunScreen
from horde_tui.screens.swarm import HostedSwarm, swarm_quit_screen
from horde_tui.view.source import AttachedSource, HostedRun

DEMO_STAYS = (
    "refused: the demo cannot be detached: its model runs inside this app and ends with "
    "it; stop the {what} (s) or keep the app open"
)
"""A handed-off demo would lose its model and fail: refused, in one line."""


def gone(status: int) -> NoReturn:
    """End this process after its terminal hung up, once nothing it hosts needs it: an
    orderly exit would first restore the terminal, and writing to a hung-up terminal
    blocked the app for good (seen in tmux), holding its pid in the run's way."""
    os._exit(status)


class QuitHost(Protocol):
    """What `QuitFlow` uses of the app: what it hosts and shows, and Textual's calls."""

    horde_dir: Path
    sup: HostedRun | None
    live: bool
    swarm: HostedSwarm | None
    swarm_live: bool
    attachment: AttachedPoll

    @property
    def screen(self) -> Screen[Any]: ...
    @property
    def run_screen(self) -> RunScreen | None: ...
    @property
    def exit_code(self) -> int: ...
    def notify(self, message: str, *, severity: Any = ..., timeout: float | None = ...) -> None: ...
    def push_screen(self, screen: Any, callback: Callable[[Any], None]) -> Any: ...
    def exit(self, result: int | None = ...) -> None: ...
    def run_worker(
        self, work: Any, *, thread: bool = ..., group: str = ..., exit_on_error: bool = ...
    ) -> Any: ...
    def call_from_thread(self, callback: Callable[..., Any], *args: Any) -> Any: ...


class QuitFlow:
    """Quit, stop or detach: never leaves a hosted run with no supervisor."""

    def __init__(self, app: QuitHost) -> None:
        self.app = app
        self.leaving = Leaving.STAY
        self.handed_off: str | None = None
        """What to tell the shell after a detach: where the run goes on."""
        self.hung_up = False
        """The terminal went (SIGHUP): there is no shell to tell."""

    def quit(self) -> None:
        """`q`: ask whether to stop or detach what is live (`quit_step`), else quit."""
        app = self.app
        state = QuitState(
            isinstance(app.screen, ChoiceScreen),
            self.leaving,
            app.live and app.sup is not None,
            app.swarm_live and app.swarm is not None,
            app.attachment.live is not None,
        )
        step = quit_step(state)
        if step is QuitStep.WAIT:
            app.notify("Detaching: the app quits once the background supervisor has the run.")
        elif step is QuitStep.ASK_RUN and app.sup is not None:
            dialog = quit_screen(app.sup.run_id, hosted=True, demo=app.sup.request.demo)
            app.push_screen(dialog, self._quit_run)
        elif step is QuitStep.ASK_SWARM and app.swarm is not None:
            app.push_screen(swarm_quit_screen(app.swarm.swarm_id), self._quit_swarm)
        elif step is QuitStep.ASK_ATTACHED and (source := app.attachment.live) is not None:
            dialog = quit_screen(source.run_id, hosted=False)
            app.push_screen(dialog, partial(self._quit_attached, source))
        elif step is QuitStep.EXIT:
            app.exit(app.exit_code)

    def listen_for_hangup(self) -> None:
        """Hand the hosted run off when the terminal goes (`hang_up`); nothing where the
        loop cannot take signals (not the main thread)."""
        with suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.hang_up)

    def stop_listening(self) -> None:
        with suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)

    def hang_up(self) -> None:
        """SIGHUP: the terminal is gone (a dropped SSH connection, a killed tmux). Nobody
        asked for a stop, so the hosted run or swarm goes on in the background as Detach
        does, and the app quits once it has been taken over. The demo cannot go on
        without this app (its model is here): it is stopped hard and the app quits."""
        app = self.app
        self.hung_up = True
        if self.leaving is Leaving.HANDING_OFF:
            return
        if app.live and app.sup is not None and app.sup.request.demo:
            self._quit_run("stop-hard")
        elif (app.live and app.sup is not None) or (app.swarm_live and app.swarm is not None):
            self.detach_run()
        else:
            gone(app.exit_code)

    def detach_run(self) -> None:
        """Detach the hosted run (or swarm) with no question asked: a hang-up of the
        terminal (SIGHUP, a dropped SSH connection) must not end the run."""
        app = self.app
        if app.live and app.sup is not None:
            self._quit_run("detach")
        elif app.swarm_live and app.swarm is not None:
            self._quit_swarm("detach")

    def _quit_run(self, choice: str | None) -> None:
        app, sup = self.app, self.app.sup
        if choice is not None and sup is not None and app.live:
            self._stop_or_detach(choice, sup, f"run {sup.run_id}", "the report is written")

    def _quit_swarm(self, choice: str | None) -> None:
        app, swarm = self.app, self.app.swarm
        if choice is not None and swarm is not None and app.swarm_live:
            self._stop_or_detach(choice, swarm, f"swarm {swarm.swarm_id}", "it has ended")

    def _stop_or_detach(
        self, choice: str, hosted: HostedRun | HostedSwarm, what: str, until: str
    ) -> None:
        """A hosted run or swarm dies with the app: hand it off (`handoff`: members and
        gateway stop without finalizing), or stop it, and quit once its supervisor has
        returned. Sent to the supervisor itself, whatever screen is on top."""
        app = self.app
        if choice == "detach" and hosted.request.demo:
            app.notify(DEMO_STAYS.format(what=what), severity="warning", timeout=30)
            return
        self.leaving = Leaving.AFTER_END
        if choice == "detach":
            self._detach(hosted.handoff(), what, until)
            return
        if choice == "stop-clean":
            app.notify(hosted.stop_clean("all", reason="stopped by user"))
        else:
            app.run_worker(hosted.stop_hard("all"), group="controls", exit_on_error=False)
        app.notify(f"Stopping {what}: the app quits once {until}.", timeout=30)

    def _detach(self, answer: str, what: str, until: str) -> None:
        """The supervisor's answer to `handoff`: a run already finalizing cannot be
        handed off, so the app quits once it has ended."""
        if answer.startswith("refused"):
            self.app.notify(f"{answer}; the app quits once {until}.", timeout=30)
            return
        self.leaving = Leaving.HANDING_OFF
        self.app.notify(f"Detaching {what}: {answer}.", timeout=60)

    def ended(self, what: str, run: str, settings: Settings, let_go: bool) -> EndStep:
        """A hosted supervisor returned (`let_go`: with no summary, having handed its
        run or swarm off): what the app does next (`end_step`). A handoff starts here:
        a detached `horde-tui resume` takes it over, then the app quits."""
        step = end_step(self.leaving, let_go)
        if step is EndStep.HAND_OFF:
            self._hand_off(what, run, settings.gateway.api_key)
        elif self.hung_up and step is EndStep.EXIT:  # the demo, stopped: its report is written
            gone(1)
        return step

    def _hand_off(self, what: str, run: str, api_key: str | None) -> None:
        """In a thread: it waits for the new process to take the run."""
        app = self.app

        def start() -> None:
            try:
                # attach, status and stop find the run by the folder they run in (a
                # demo's is a temporary one): name it.
                self.handed_off = (
                    f"{hand_off(app.horde_dir, what, run, api_key)}\n"
                    f"in:       {app.horde_dir.resolve().parent}   (run these there)"
                )
            except HandoffFailed as exc:
                if self.hung_up:  # nobody to tell: the run is interrupted, `resume` it
                    gone(1)
                app.call_from_thread(self._handoff_failed, str(exc))
                return
            if self.hung_up:
                gone(0)
            app.call_from_thread(app.exit, 0)

        app.run_worker(start, thread=True, group="handoff", exit_on_error=False)

    def _handoff_failed(self, message: str) -> None:
        self.leaving = Leaving.STAY
        self.app.notify(message, severity="error", timeout=60)
        if (screen := self.app.run_screen) is not None:
            screen.run_ended(None, message)

    def _quit_attached(self, source: AttachedSource, choice: str | None) -> None:
        """Detach quits at once (another process hosts the run); a stop is sent through
        `control/` and the app quits when its supervisor has answered (or timed out)."""
        app = self.app
        if choice is None or app.attachment.live is not source:
            return
        if choice == "detach":
            app.exit(0)
            return
        app.notify(f"Asking run {source.run_id} to {choice}; the app quits once it answers.")
        stop = source.stop_clean if choice == "stop-clean" else source.stop_hard

        async def send() -> None:
            await stop("all")
            app.exit(0)

        app.run_worker(send(), group="controls", exit_on_error=False)
