"""`HordeApp`: the full-screen app. It hosts at most one run and one swarm, each in a
worker, and shows runs another process hosts; the screens do the showing.

A hosted run's supervisor (`horde-tui run`, or a test's fake with the same interface,
`view.source.HostedRun`) sends its events through a `TuiBridge`, which only wakes the
run screen: like a run another process hosts, it is read from its files
(`view.source.HostedSource`); when it ends the report opens. A hosted swarm (`H/M`)
only wakes its screen (`tui_bridge.swarm_sink`), which reads the swarm's files. An
attached run is read from its files (`watching.AttachedPoll`). With
nothing to host the app lists the runs on disk (or says how to start one,
`screens.home.first_screen`). Screens ask for what only the app does by message
(`OpenRun`, `LaunchRun`, `LaunchSwarm`); what `q` does and what follows a hosted
supervisor's return are decided in `quitting.py` and carried out by `leaving.QuitFlow`.
`hosting.host` decides between this app and headless.

`AppConfig` carries every non-deterministic input (clock, time zone, file polling, tick,
animation, cursor blink) so tests and snapshots can switch them all off at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from horde_tui.app.leaving import QuitFlow
from horde_tui.app.quitting import EndStep, Leaving, exit_status
from horde_tui.app.tui_bridge import SupervisorUpdate, SwarmStep, TuiBridge, swarm_sink
from horde_tui.app.watching import AttachedPoll, FileWatch
from horde_tui.protocol.outcome import RunSummary
from horde_tui.screens.base import AppConfig, LaunchRun, LaunchSwarm, OpenRun
from horde_tui.screens.home import first_screen
from horde_tui.screens.modals import ChoiceScreen, HelpScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen, run_screen_of
from horde_tui.screens.swarm import HostedSwarm, SwarmScreen
from horde_tui.store.runs import run_state
from horde_tui.view.source import AttachedSource, HostedRun, HostedSource

if TYPE_CHECKING:  # the supervisor and its settings load only when a run is hosted
    from horde_tui.common.settings import Settings
    from horde_tui.supervisor.setup import RunRequest

ENDED = (WorkerState.SUCCESS, WorkerState.ERROR)
PALETTE_TIP = "command palette: any member's actions by name"

__all__ = ["AppConfig", "HordeApp", "attach_app", "open_app", "styles_dir"]


def styles_dir() -> Path:
    """The package's `styles/` folder (a link to the top-level one in a source checkout)."""
    return Path(__file__).parent.parent / "styles"


class HordeApp(App[int]):
    """The horde-tui app: a hosted run or swarm, a run attached to, or the runs list."""

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
            priority=True,
            id="palette",
            tooltip=PALETTE_TIP,
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
        swarm: HostedSwarm | None = None,
    ) -> None:
        """`swarm`: a swarm supervisor to host (`horde-tui run H/M`, `resume SWARM`)."""
        super().__init__()
        self.sup = supervisor
        self.config = config = config or AppConfig()
        if horde_dir is None:
            run_dir = supervisor.run_dir if supervisor is not None else attach
            horde_dir = run_dir.parent.parent if run_dir is not None else Path.cwd() / ".horde"
        self.horde_dir = horde_dir
        self._first = (attach, swarm)
        self.changed_paths: set[Path] | None = set()
        """What the watcher saw change last (None: unknown, check everything)."""
        self.files = FileWatch(self, horde_dir, self.files_changed)
        every = max(config.attach_poll_s, 1.0 if config.watch_files else 0.0)
        self.attachment = AttachedPoll(self, every, self._attached_read)
        self.bridge = TuiBridge(self, config.coalesce_s)
        self.live = self.swarm_live = False
        """A hosted run's (swarm's) supervisor is running."""
        self.summary: RunSummary | None = None
        self.run_error: str | None = None
        self.swarm: HostedSwarm | None = None
        self.swarm_exit_code: int | None = None
        self.quitting = QuitFlow(self)
        if not config.animations:
            self.animation_level = "none"
        if supervisor is not None:
            self._label(
                f"run {supervisor.run_id}",
                supervisor.settings.gateway.model,
                supervisor.request.demo,
            )

    def _label(self, title: str, model: str, demo: bool) -> None:
        # The demo label goes first so a narrow terminal never cuts it off.
        self.title = title
        self.sub_title = f"{'DEMO MODEL · ' if demo else ''}{model or 'no model'}"

    @property
    def attached(self) -> AttachedSource | None:
        """The run shown from another process's files, if any."""
        return self.attachment.source

    @property
    def run_screen(self) -> RunScreen | None:
        return run_screen_of(self)

    def get_default_screen(self) -> Screen[object]:
        if self.sup is not None:
            return RunScreen(self._hosted(self.sup))
        if (attach := self._first[0]) is not None:
            return self._open_attached(attach)
        return first_screen(self.horde_dir)

    def on_mount(self) -> None:
        self.quitting.listen_for_hangup()
        if self.config.watch_files:
            self.files.start()
        if (swarm := self._first[1]) is not None:  # over the first screen, once mounted
            self.call_after_refresh(self.host_swarm, swarm)
        if self.sup is not None:
            self._start_hosting()
        self.attachment.poll()

    def on_unmount(self) -> None:
        self.quitting.stop_listening()
        self.files.stop()
        self.attachment.close()

    # -- hosting ------------------------------------------------------------------------

    def _start_hosting(self) -> None:
        """Run `self.sup` in a worker, its events coming through the bridge."""
        assert self.sup is not None
        self.sup.sink = self.bridge
        self.live = True
        self.run_worker(self.sup.run(), name="supervisor", group="supervisor", exit_on_error=False)

    def on_launch_run(self, message: LaunchRun) -> None:
        """Host a run the launch form checked, as `horde-tui run` does. The form's check
        refuses while a run is live here, so the app never hosts two at once."""
        from horde_tui.supervisor.run import Supervisor

        assert not self.live, "the launch check refuses a second live run"
        sup = Supervisor(self.horde_dir.parent, message.request, message.settings)
        self.sup, self.summary, self.run_error = sup, None, None
        self.quitting.leaving = Leaving.STAY
        self._label(f"run {sup.run_id}", sup.settings.gateway.model, sup.request.demo)
        self.push_screen(RunScreen(self._hosted(sup)))
        self._start_hosting()

    def on_launch_swarm(self, message: LaunchSwarm) -> None:
        self.start_swarm(message.request, message.settings, message.hordes)

    def start_swarm(self, request: RunRequest, settings: Settings, hordes: int) -> None:
        """Host a checked `H/M` launch; its module loads only when a swarm is hosted."""
        from horde_tui.supervisor.swarm import SwarmSupervisor

        self.host_swarm(SwarmSupervisor(self.horde_dir.parent, request, settings, hordes))

    def host_swarm(self, swarm: HostedSwarm) -> None:
        """Run a swarm supervisor (new or resumed) in a worker, its swarm screen on top.
        Its lifecycle steps (no member) wake the screen, which reads the hordes' files."""
        swarm.sink = swarm_sink(self)
        self.swarm, self.swarm_live = swarm, True
        self.quitting.leaving = Leaving.STAY
        self._label(f"swarm {swarm.swarm_id}", swarm.settings.gateway.model, swarm.request.demo)
        self.push_screen(SwarmScreen(swarm.swarm_dir))
        self.run_worker(swarm.run(), name="swarm", group="swarm", exit_on_error=False)

    def on_swarm_step(self, _message: SwarmStep) -> None:
        self.swarm_revision += 1

    def on_supervisor_update(self, message: SupervisorUpdate) -> None:
        if (screen := self.run_screen) is not None:
            screen.wake()
        self.revision += 1

    def _hosted(self, sup: HostedRun) -> HostedSource:
        """The hosted supervisor as the run screen's source, read from its files; a
        first wake reads what they hold already."""
        self.post_message(SupervisorUpdate())
        return HostedSource(sup)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A hosted supervisor returned: hand its run off, quit, or show how it ended."""
        worker, ok = event.worker, event.state == WorkerState.SUCCESS
        if worker.name not in ("supervisor", "swarm") or event.state not in ENDED:
            return
        error = None if ok else f"{type(worker.error).__name__}: {worker.error}"
        let_go = ok and worker.result is None  # the supervisor handed its run off
        if worker.name == "swarm" and (swarm := self.swarm) is not None:
            self.swarm_live = False
            step = self.quitting.ended("swarm", swarm.swarm_id, swarm.settings, let_go)
            if step is EndStep.HAND_OFF:
                return
            self.swarm_exit_code = getattr(worker.result, "exit_code", 0) if ok else 1
            if error:
                self.notify(f"the swarm supervisor failed: {error}", severity="error", timeout=30)
            self.swarm_revision += 1
            return self.exit(self.swarm_exit_code) if step is EndStep.EXIT else None
        if worker.name != "supervisor" or (sup := self.sup) is None:
            return
        self.bridge.flush()
        self.live = False
        step = self.quitting.ended("run", sup.run_id, sup.settings, let_go)
        if step is EndStep.HAND_OFF:
            return
        self.summary, self.run_error = (worker.result if ok else None), error
        if error:
            self.notify(f"the supervisor failed: {error}", severity="error", timeout=30)
        if (screen := self.run_screen) is not None:
            screen.run_ended(self.summary, self.run_error)
        if step is EndStep.EXIT:
            return self.exit(self.exit_code)
        if isinstance(self.screen, ChoiceScreen):
            self.screen.dismiss(None)
        if (sup.run_dir / "REPORT.md").is_file():
            self.push_screen(ReportScreen(sup.run_dir))

    @property
    def handed_off(self) -> str | None:
        """What to tell the shell after a detach: where the run goes on."""
        return self.quitting.handed_off

    @property
    def exit_code(self) -> int:
        """The status the shell gets (`quitting.exit_status`)."""
        return exit_status(self.summary, self.swarm_exit_code, self.run_error)

    # -- files and attached runs --------------------------------------------------------

    async def files_changed(self, paths: set[Path] | None) -> None:
        """Hand a batch of changed paths (None: unknown) to whatever shows them."""
        self.changed_paths = paths
        self.attachment.files_changed(paths)
        if (screen := self.run_screen) is not None:
            await screen.files_changed(paths)
        self.files_revision += 1

    def on_open_run(self, message: OpenRun) -> None:
        """This app's own live run is shown as hosted; any other is attached."""
        sup = self.sup
        if sup is not None and self.live and sup.run_id == message.run_dir.name:
            self.push_screen(RunScreen(self._hosted(sup)))
        else:
            self.push_screen(self._open_attached(message.run_dir))
            self.attachment.poll()

    def _open_attached(self, run_dir: Path) -> RunScreen:
        screen = self.attachment.open(run_dir)
        # A run that ended has nothing to drive: its screen only shows it.
        how = "attached" if run_state(run_dir) == "active" else "read-only"
        self.title, self.sub_title = f"run {run_dir.name} · {how}", ""
        return screen

    def _attached_read(self, source: AttachedSource) -> None:
        self._label(self.title, source.model, source.demo)
        self.revision += 1

    # -- quitting -----------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    async def action_quit(self) -> None:
        """Quit; with a live run or swarm, first ask whether to stop it or detach."""
        self.quitting.quit()


def open_app(no_mouse: bool = False) -> int:
    """`horde-tui app` / bare `horde-tui`: no run to host, show what is here."""
    app = HordeApp(horde_dir=Path.cwd() / ".horde")
    app.run(mouse=not no_mouse)
    if app.handed_off is not None:  # the terminal is the shell's again
        print(app.handed_off)
    return app.exit_code


def attach_app(run_dir: Path, no_mouse: bool = False) -> int:
    """`horde-tui attach [RUN]`: the run screen on a run another process hosts."""
    HordeApp(attach=run_dir).run(mouse=not no_mouse)
    return 0
