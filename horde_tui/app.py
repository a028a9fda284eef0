"""`HordeApp`: the full-screen app, hosting one supervisor as a background worker.

The caller builds the supervisor (`horde-tui run`) or a test builds a fake with the same
interface (`view.source.HostedRun`); the app swaps the supervisor's sink for a
`TuiBridge`, runs `supervisor.run()` in a worker on its own event loop, and applies each
coalesced batch of events to the run screen. When the run ends the report screen opens.
With no run to host it lists the runs on disk (or says how to start one); `attach`
shows a run hosted by another process, polled from its files (`view/source.py`).
A swarm (`H/M`, from the launch form) is hosted the same way (`start_swarm`), but its
screen reads everything from the swarm's files, so it shows a hosted swarm and another
process's alike; only its controls differ (`screens/swarm.py`).

`AppConfig` carries every non-deterministic input (clock, time zone, file polling, tick,
animation, cursor blink) so tests and snapshots can switch them all off at once.
"""

from __future__ import annotations

import asyncio
import os
import sysconfig
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from horde_tui.runcli import swarm_watch_lines, watch_lines
from horde_tui.screens.home import HomeScreen
from horde_tui.screens.modals import ChoiceScreen, HelpScreen, quit_screen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.screens.runs import RunsScreen
from horde_tui.screens.swarm import HostedSwarm, SwarmScreen, swarm_quit_screen
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.outcome import RunSummary
from horde_tui.tui_bridge import SupervisorUpdate, TuiBridge
from horde_tui.view.coalesce import Coalescer, watch_dir
from horde_tui.view.source import AttachedSource, HostedRun, HostedSource
from horde_tui.view.swarm import RunsAndSwarms
from widgets.event_log import BACKLOG_BYTES, default_clock_text

if TYPE_CHECKING:  # the supervisor and its settings load only when a run is hosted
    from horde_tui.settings import Settings
    from horde_tui.supervisor.setup import RunRequest

WAKE_RATE = 3.0
"""Wake-ups a second at most from file changes: a screen following a busy run repaints
this often, and its idle CPU stays a few percent of a core."""


def styles_dir() -> Path:
    """The top-level `styles/` folder, in a source checkout or an installed wheel.

    The wheel force-includes `styles` beside the `horde_tui` package in site-packages, so
    the package's parent holds it in both layouts; purelib/platlib are asked as well in
    case the package was imported from elsewhere (a zipapp, a vendored copy).
    """
    paths = sysconfig.get_paths()
    candidates = [
        Path(__file__).resolve().parent.parent / "styles",
        Path(paths["purelib"]) / "styles",
        Path(paths["platlib"]) / "styles",
    ]
    for folder in candidates:
        if (folder / "app.tcss").is_file():
            return folder
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(
        f"horde-tui: styles/app.tcss not found (looked in {searched}); reinstall horde-tui"
    )


def utc_clock_text(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts))


def local_date_text(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def utc_date_text(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts))


@dataclass(frozen=True)
class AppConfig:
    """The app's sources of change that tests must be able to pin."""

    clock: Callable[[], float] = time.time
    clock_text: Callable[[float], str] = default_clock_text
    """Wall-clock time of an event as shown in the log (local time by default)."""
    date_text: Callable[[float], str] = local_date_text
    """A run's start as the runs list shows it (local time by default)."""
    watch_files: bool = True
    """Watch `.horde/` with watchfiles and refresh the views it changes (off: views
    change only with the supervisor's events, and tabs load when opened)."""
    tick_s: float = 1.0
    """Repaint elapsed times this often (0: only when events arrive)."""
    coalesce_s: float = 0.1
    """At most one UI update per this many seconds from the supervisor's events."""
    animations: bool = True
    cursor_blink: bool = True
    attach_poll_s: float = 0.2
    """An attached run's files are re-read this often (at most 10 a second)."""

    @classmethod
    def deterministic(cls, now: float) -> AppConfig:
        """A frozen clock in UTC, no polling, no ticks, no animation, no blinking cursor."""
        return cls(
            clock=lambda: now,
            clock_text=utc_clock_text,
            date_text=utc_date_text,
            watch_files=False,
            tick_s=0.0,
            animations=False,
            cursor_blink=False,
        )


class HordeApp(App[int]):
    """The horde-tui app: a hosted run, or the newest run's report."""

    CSS_PATH: ClassVar[list[str | Path]] = [styles_dir() / "app.tcss"]
    TITLE = "horde-tui"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="help", key_display="F1"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="quit-ctrl"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            show=False,
            tooltip="command palette: any member's actions by name",
            priority=True,
            id="palette",
        ),
    ]

    revision: var[int] = var(0)
    """Bumped after each batch of supervisor events; live screens watch it to repaint."""
    files_revision: var[int] = var(0)
    """Bumped after each batch of file changes under `.horde/` (`changed_paths`)."""
    swarm_revision: var[int] = var(0)
    """Bumped when the hosted swarm reports a lifecycle step (the swarm screen re-reads)."""

    def __init__(
        self,
        supervisor: HostedRun | None = None,
        *,
        horde_dir: Path | None = None,
        config: AppConfig | None = None,
        attach: Path | None = None,
        swarm: tuple[RunRequest, Settings, int] | HostedSwarm | None = None,
    ) -> None:
        """`swarm`: (request, settings, hordes) of a checked `H/M` launch to host at once
        (`horde-tui run H/M` in a terminal), as the launch form's `start_swarm` does, or
        a swarm supervisor ready to host (`horde-tui resume SWARM` in a terminal)."""
        super().__init__()
        self.sup = supervisor
        self.config = config or AppConfig()
        if horde_dir is None:
            if supervisor is not None:
                horde_dir = supervisor.run_dir.parent.parent
            elif attach is not None:
                horde_dir = attach.parent.parent
            else:
                horde_dir = Path.cwd() / ".horde"
        self.horde_dir = horde_dir
        self.attached: AttachedSource | None = None
        """The run shown from another process's files, if any (`attach_run`)."""
        self._attach_first = attach
        self._attach_timer: object | None = None
        self.changed_paths: set[Path] | None = set()
        """What the watcher saw change last (None: unknown, check everything)."""
        self._watch_stop = asyncio.Event()
        self._polling = False
        self._poll_again = False
        self._changes = Coalescer(WAKE_RATE)
        """File changes seen since the views last woke."""
        self._wake_pending = False
        self.bridge = TuiBridge(self, self.config.coalesce_s)
        self.live = False
        self.summary: RunSummary | None = None
        self.run_error: str | None = None
        self.quit_when_done = False
        self.swarm: HostedSwarm | None = None
        """The swarm this app hosts (`start_swarm`), running or ended."""
        self.swarm_live = False
        self.swarm_exit_code: int | None = None
        """The hosted swarm's exit status once it ended (as its `SwarmSummary` says)."""
        self._swarm_first = swarm
        self.handing_off = False
        """Detach was chosen for the hosted run or swarm: once its supervisor has let go,
        a detached `horde-tui resume` takes it over and the app quits."""
        self.handed_off: str | None = None
        """What to tell the shell after a detach: where the run goes on."""
        if not self.config.animations:
            self.animation_level = "none"
        if supervisor is not None:
            self._label_hosted(supervisor)

    def _label_hosted(self, supervisor: HostedRun) -> None:
        # The demo label goes first so a narrow terminal never cuts it off.
        self.title = f"run {supervisor.run_id}"
        model = getattr(supervisor.settings, "model", "") or "no model"
        demo = "DEMO MODEL · " if getattr(supervisor.request, "demo", False) else ""
        self.sub_title = f"{demo}{model}"

    @property
    def run_screen(self) -> RunScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, RunScreen):
                return screen
        return None

    def get_default_screen(self) -> Screen[object]:
        if self.sup is not None:
            return RunScreen(HostedSource(self.sup, self.bridge.take))
        if self._attach_first is not None:
            return RunScreen(self._attach(self._attach_first))
        index = RunsAndSwarms(self.horde_dir)
        index.refresh()
        if index.rows():
            return RunsScreen(self.horde_dir, index)
        return HomeScreen(self.horde_dir)

    def on_mount(self) -> None:
        if self.config.watch_files:
            self.run_worker(self._watch(), name="watcher", group="watcher", exit_on_error=False)
        first = self._swarm_first
        if isinstance(first, tuple):  # over the first screen, once it has mounted
            self.call_after_refresh(self.start_swarm, *first)
        elif first is not None:
            self.call_after_refresh(self.host_swarm, first)
        if self.sup is None:
            if self.attached is not None:
                self.poll_attached()
            return
        self._start_hosting()

    def _start_hosting(self) -> None:
        """Run `self.sup` in a worker, its events coming through the bridge."""
        assert self.sup is not None
        self.bridge.attach()
        self.sup.sink = self.bridge
        self.live = True
        self.run_worker(self._host(), name="supervisor", group="supervisor", exit_on_error=False)

    def host_new_run(self, request: RunRequest, settings: Settings) -> None:
        """Host a run the launch form checked, exactly as `horde-tui run` hosts one, and
        show its run screen. The form's check refuses while a run is live here, so the
        app never hosts two at once."""
        from horde_tui.supervisor.run import Supervisor

        assert not self.live, "the launch check refuses a second live run"
        sup = Supervisor(self.horde_dir.parent, request, settings)
        self.sup, self.summary, self.run_error, self.quit_when_done = sup, None, None, False
        self._label_hosted(sup)
        self.push_screen(RunScreen(HostedSource(sup, self.bridge.take)))
        self._start_hosting()

    def start_swarm(self, request: RunRequest, settings: Settings, hordes: int) -> None:
        """Host a swarm the launch form checked (`H/M`): its `SwarmSupervisor` runs in a
        worker as `host_new_run`'s supervisor does, and the swarm screen shows it from
        its files. The supervisor's module loads only when a swarm is hosted."""
        from horde_tui.supervisor.swarm import SwarmSupervisor

        self.host_swarm(SwarmSupervisor(self.horde_dir.parent, request, settings, hordes))

    def host_swarm(self, swarm: HostedSwarm) -> None:
        """Run a swarm supervisor (new or resumed) in a worker, its swarm screen on top."""
        swarm.sink = self._swarm_event
        self.swarm, self.swarm_live, self.quit_when_done = swarm, True, False
        self.title = f"swarm {swarm.swarm_id}"
        demo = "DEMO MODEL · " if swarm.request.demo else ""
        self.sub_title = f"{demo}{swarm.settings.model or 'no model'}"
        self.push_screen(SwarmScreen(swarm.swarm_dir))
        self.run_worker(swarm.run(), name="swarm", group="swarm", exit_on_error=False)

    class SwarmStep(Message):
        """The hosted swarm reported a lifecycle step (posted from any thread)."""

    def _swarm_event(self, event: SupervisorEvent) -> None:
        """The hosted swarm's sink: lifecycle steps (no member) wake the swarm screen;
        member traffic is not needed, the screen reads the hordes' files."""
        if event.member is None:
            self.post_message(self.SwarmStep())

    def on_horde_app_swarm_step(self, _message: SwarmStep) -> None:
        self.swarm_revision += 1

    def _swarm_ended(self, worker: Worker[object], state: WorkerState) -> None:
        self.swarm_live = False
        success = state == WorkerState.SUCCESS
        if self.handing_off and success and worker.result is None and self.swarm is not None:
            swarm = self.swarm
            watch = swarm_watch_lines(swarm.swarm_id, swarm.count)
            self.run_worker(
                partial(self._resume_detached, "swarm", swarm.swarm_id, swarm.settings, watch),
                thread=True,
                group="handoff",
                exit_on_error=False,
            )
            return
        self.swarm_exit_code = getattr(worker.result, "exit_code", 0) if success else 1
        if state == WorkerState.ERROR:
            error = worker.error
            self.notify(
                f"the swarm supervisor failed: {type(error).__name__}: {error}",
                severity="error",
                timeout=30,
            )
        self.swarm_revision += 1
        if self.quit_when_done:
            self.exit(self.swarm_exit_code)

    async def _host(self) -> RunSummary | None:
        assert self.sup is not None
        return await self.sup.run()

    # -- file changes -----------------------------------------------------------------------

    async def _watch(self) -> None:
        """Wake the views when files under `.horde/` change, at most `WAKE_RATE` times a
        second: watchfiles groups a burst of writes, but a steady stream (twelve members
        writing) still yields about ten sets a second, and every wake costs a repaint.
        The `Coalescer` merges what arrives between wakes; the first change after a
        quiet spell wakes the views at once.

        Waits for `.horde/` to exist (the first run creates it). If the watcher cannot
        run (no inotify, too many watches) the views are polled once a second instead.
        """
        horde = self.horde_dir
        while not horde.is_dir():
            try:
                await asyncio.wait_for(self._watch_stop.wait(), 1.0)
                return
            except TimeoutError:
                continue
        try:
            async for paths in watch_dir(horde, self._watch_stop):
                self._changes.note(paths)
                if not self._wake_pending:
                    self._wake_pending = True
                    self._wake_when_due()
        except (OSError, RuntimeError) as exc:
            self.notify(
                f"watching {horde} failed ({exc}); checking it once a second instead",
                severity="warning",
                timeout=15,
            )
            self.set_interval(1.0, partial(self.files_changed, None))

    def _wake_when_due(self) -> None:
        delay = self._changes.delay() or 0.0
        if delay > 0:
            self.set_timer(delay, self._wake)
        else:
            self.call_later(self._wake)

    async def _wake(self) -> None:
        paths = self._changes.take()
        if paths is None:  # not due yet
            self._wake_when_due()
            return
        self._wake_pending = False
        await self.files_changed(paths)

    async def files_changed(self, paths: set[Path] | None) -> None:
        """Hand a batch of changed paths (None: unknown) to whatever shows them."""
        self.changed_paths = paths
        source = self.attached
        if source is not None and (
            paths is None or any(p.is_relative_to(source.run_dir) for p in paths)
        ):
            self.poll_attached()
        screen = self.run_screen
        if screen is not None:
            await screen.files_changed(paths)
        self.files_revision += 1

    # -- attached runs ---------------------------------------------------------------------

    def _attach(self, run_dir: Path) -> AttachedSource:
        if self.attached is not None:
            self.attached.close()
        source = self.attached = AttachedSource(run_dir)
        self.title = f"run {source.run_id} · attached"
        self.sub_title = ""
        if self._attach_timer is None:
            # With the watcher on, the timer only notices what writes no file (the
            # supervisor dying, elapsed times); without it, it is the only source.
            every = max(self.config.attach_poll_s, 1.0 if self.config.watch_files else 0.0)
            self._attach_timer = self.set_interval(every, self.poll_attached)
        return source

    def attach_run(self, run_dir: Path) -> None:
        """Show a run hosted by another process (from the runs list)."""
        source = self._attach(run_dir)
        self.push_screen(RunScreen(source))
        self.poll_attached()

    def poll_attached(self) -> None:
        """Re-read the attached run's files and show what changed; open the report at
        the end. A large backlog (the first read of a long run's log) is read in a
        thread, and a poll asked for while one runs is done once it ends; the usual
        few appended lines cost well under a millisecond and are read here."""
        source, screen = self.attached, self.run_screen
        if source is None or screen is None or screen.source is not source:
            return
        if not self.is_running:  # quitting: the screens are being torn down
            return
        if self._polling:
            self._poll_again = True
            return
        if source.backlog() < BACKLOG_BYTES:
            self._show_attached(source, source.poll())
            return
        self._polling = True
        self.run_worker(
            partial(self._read_attached, source), thread=True, group="attach", exit_on_error=False
        )

    def _read_attached(self, source: AttachedSource) -> None:
        try:
            items: list[SupervisorEvent] | None = source.poll()
        except OSError:  # the source was closed under us (the app is quitting)
            items = None
        with suppress(RuntimeError):  # the app ended while this thread read
            self.call_from_thread(self._show_attached, source, items)

    def _show_attached(self, source: AttachedSource, items: list[SupervisorEvent] | None) -> None:
        self._polling = False
        screen = self.run_screen
        if items is not None and source is self.attached and screen and screen.source is source:
            model = source.model or "no model"
            self.sub_title = f"{'DEMO MODEL · ' if source.demo else ''}{model}"
            screen.apply(items)
            self.revision += 1
            if screen.live and not source.live:
                screen.run_ended(None, None, source.ended_text())
                if (source.run_dir / "REPORT.md").is_file() and self.screen is screen:
                    self.push_screen(ReportScreen(source.run_dir))
        if self._poll_again:
            self._poll_again = False
            self.poll_attached()

    def on_unmount(self) -> None:
        self._watch_stop.set()
        if self.attached is not None:
            self.attached.close()  # ends a control request's wait in its thread

    def on_supervisor_update(self, message: SupervisorUpdate) -> None:
        screen = self.run_screen
        if screen is not None:
            screen.wake()
        else:
            self.bridge.take()  # no screen shows them
        self.revision += 1

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "swarm" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self._swarm_ended(event.worker, event.state)
            return
        if event.worker.name != "supervisor" or event.state not in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
        ):
            return
        self.bridge.flush()
        self.live = False
        if (
            self.handing_off
            and event.state == WorkerState.SUCCESS
            and event.worker.result is None
            and self.sup is not None
        ):
            sup = self.sup
            watch = watch_lines(sup.run_id)
            self.run_worker(
                partial(self._resume_detached, "run", sup.run_id, sup.settings, watch),
                thread=True,
                group="handoff",
                exit_on_error=False,
            )
            return
        if event.state == WorkerState.SUCCESS:
            self.summary = event.worker.result
        else:
            error = event.worker.error
            self.run_error = f"{type(error).__name__}: {error}"
            self.notify(f"the supervisor failed: {self.run_error}", severity="error", timeout=30)
        screen = self.run_screen
        if screen is not None:
            screen.run_ended(self.summary, self.run_error)
        if self.quit_when_done:
            self.exit(self.exit_code)
            return
        if isinstance(self.screen, ChoiceScreen):
            self.screen.dismiss(None)
        if self.sup is not None and (self.sup.run_dir / "REPORT.md").is_file():
            self.push_screen(ReportScreen(self.sup.run_dir))

    @property
    def exit_code(self) -> int:
        """The run's exit status (0 finished/solved, 130 stopped by the user, 1 else)."""
        if self.summary is not None:
            return self.summary.exit_code
        if self.swarm_exit_code is not None:
            return self.swarm_exit_code
        return 1 if self.run_error else 0

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    @property
    def attached_live(self) -> AttachedSource | None:
        """The attached run on screen, if it is still live."""
        screen, source = self.run_screen, self.attached
        if screen is None or source is None or screen.source is not source or not source.live:
            return None
        return source

    async def action_quit(self) -> None:
        """Quit; with a live run on screen, first ask whether to stop it or detach.

        Detaching an attached run just quits (another process hosts it); detaching a
        hosted one hands it to a detached supervisor first (`_detach_hosted`)."""
        if isinstance(self.screen, ChoiceScreen):
            return
        if self.handing_off:  # quitting now would leave the run with no supervisor at all
            self.notify("Detaching: the app quits once the background supervisor has the run.")
            return
        if self.live and self.sup is not None:
            self.push_screen(quit_screen(self.sup.run_id, hosted=True), self._quit_choice)
        elif self.swarm_live and self.swarm is not None:  # before attached: its hordes'
            # run screens are attached, yet they die with this app
            self.push_screen(swarm_quit_screen(self.swarm.swarm_id), self._quit_swarm)
        elif (attached := self.attached_live) is not None:
            self.push_screen(quit_screen(attached.run_id, hosted=False), self._quit_choice)
        else:
            self.exit(self.exit_code)

    def _quit_choice(self, choice: str | None) -> None:
        if choice is None:
            return
        attached = self.attached_live
        if attached is not None and not self.live:
            self._quit_attached(attached, choice)
            return
        screen = self.run_screen
        if screen is None or not self.live:
            return
        self.quit_when_done = True
        if choice == "detach":
            self._detach_hosted()
        elif choice == "stop-clean":
            screen.stop_run_clean()
            self.notify("Stopping clean: the app quits once the report is written.", timeout=30)
        elif choice == "stop-hard":
            screen.stop_hard("all")
            self.notify("Stopping hard: the app quits once the report is written.", timeout=30)

    def _quit_swarm(self, choice: str | None) -> None:
        """A hosted swarm dies with the app: stop it (every horde) and quit once its
        supervisor has returned."""
        swarm = self.swarm
        if choice is None or swarm is None or not self.swarm_live:
            return
        self.quit_when_done = True
        if choice == "detach":
            answer = swarm.handoff()
            if answer.startswith("refused"):
                self.notify(f"{answer}; the app quits once it has ended.", timeout=30)
                return
            self.handing_off = True
            self.notify(f"Detaching swarm {swarm.swarm_id}: {answer}.", timeout=60)
            return
        if choice == "stop-clean":
            self.notify(swarm.stop_clean("all", reason="stopped by user"))
        else:
            self.run_worker(swarm.stop_hard("all"), group="controls", exit_on_error=False)
        self.notify(
            f"Stopping swarm {swarm.swarm_id}: the app quits once it has ended.", timeout=30
        )

    def _detach_hosted(self) -> None:
        """Hand the hosted run off: its supervisor stops the members and the gateway
        without finalizing (`Supervisor.handoff`); when its worker ends, a detached
        `horde-tui resume` carries the sessions on and the app quits. A run already
        finalizing cannot be handed off: the app quits once its report is written."""
        assert self.sup is not None
        answer = self.sup.handoff()
        if answer.startswith("refused"):
            self.notify(f"{answer}; the app quits once the report is written.", timeout=30)
            return
        self.handing_off = True
        self.notify(f"Detaching run {self.sup.run_id}: {answer}.", timeout=60)

    def _resume_detached(self, what: str, run: str, settings: object, watch: str) -> None:
        """Thread worker: start the detached resume of the run or swarm (`what`) and
        wait until it has taken it over."""
        from horde_tui.runcli import resume_detached

        env = dict(os.environ)
        key = getattr(settings, "api_key", None)
        if key:  # given on this command line: never written down, so passed along
            env["HORDE_API_KEY"] = key
        started = resume_detached(self.horde_dir, run, env)
        if started.run_dir is None:
            message = (
                f"the {what} could not be handed off ({started.error.strip()}); it is "
                f"interrupted: carry it on with `horde-tui resume {run}`"
            )
            self.call_from_thread(self._handoff_failed, message)
            return
        self.handed_off = (
            f"{what} {run} goes on in the background (pid {started.pid}); "
            f"log: {started.log}\n{watch}"
        )
        self.call_from_thread(self.exit, 0)

    def _handoff_failed(self, message: str) -> None:
        self.handing_off = self.quit_when_done = False
        self.notify(message, severity="error", timeout=60)
        screen = self.run_screen
        if screen is not None:
            screen.run_ended(None, message)

    def _quit_attached(self, source: AttachedSource, choice: str) -> None:
        """Detach quits at once; a stop is sent through `control/` and the app quits
        when the run's supervisor has answered (or the answer timed out)."""
        if choice == "detach":
            self.exit(0)
            return
        action = choice.replace("-", "_")
        self.notify(f"Asking run {source.run_id} to {choice}; the app quits once it answers.")

        def send() -> None:
            source.send(action, "all")
            self.call_from_thread(self.exit, 0)

        self.run_worker(send, thread=True, group="controls", exit_on_error=False)

    def run_hosted(self, mouse: bool = True) -> int:
        """Run the app until the user quits; return the run's exit status. After a
        detach, say where the run goes on (the terminal is the shell's again)."""
        self.run(mouse=mouse)
        if self.handed_off is not None:
            print(self.handed_off)
        return self.exit_code


def open_app(no_mouse: bool = False) -> int:
    """`horde-tui app` / bare `horde-tui`: no run to host, show what is here."""
    return HordeApp(horde_dir=Path.cwd() / ".horde").run_hosted(mouse=not no_mouse)


def attach_app(run_dir: Path, no_mouse: bool = False) -> int:
    """`horde-tui attach [RUN]`: the run screen on a run another process hosts."""
    HordeApp(attach=run_dir).run(mouse=not no_mouse)
    return 0
