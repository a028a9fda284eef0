"""The empty state: what the app shows when it hosts no run and `.horde/runs/` holds none
(with runs on disk it opens the runs list, `screens/runs.py`, instead).

It explains how to start a run; given runs it still names the newest one's state (and
opens its report, one key away). It only reads `.horde/runs/`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.containers import Center, Vertical
from textual.widgets import Footer, Header, Static

from horde_tui.screens.base import HordeScreen, shown_path
from horde_tui.screens.launch import LaunchCommands, open_launch_form
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.runs import RunsScreen
from horde_tui.store.paths import HordePaths
from horde_tui.store.runs import run_ids, run_state
from horde_tui.view.run import RunsIndex
from horde_tui.view.swarm import RunsAndSwarms


@dataclass(frozen=True)
class NewestRun:
    """The newest run in a `.horde/` and what state it is in."""

    run_dir: Path
    state: str

    @property
    def has_report(self) -> bool:
        return (self.run_dir / "REPORT.md").is_file()


def newest_run(horde_dir: Path) -> NewestRun | None:
    """The newest supervised run (run ids start with a timestamp, so names sort by age)."""
    runs = HordePaths(horde_dir).runs
    for name in reversed(run_ids(horde_dir)):
        state = run_state(runs / name)
        if state not in ("manual", "not started"):
            return NewestRun(runs / name, state)
    return None


def home_text(horde_dir: Path, newest: NewestRun | None) -> str:
    start = (
        'Press n to start a run here (or  horde-tui run 3 "your task"  with any litellm '
        "model via --model), or see a whole run on a scripted model with  horde-tui demo."
    )
    if newest is None:
        return f"No runs in {shown_path(horde_dir)} yet.\n\n{start}"
    run = newest.run_dir.name
    if newest.state == "active":
        return (
            f"Run {run} is live in another process.\n\n"
            f"horde-tui status shows its members; horde-tui stop-clean (or pause, resume, "
            f"stop-hard) controls it from this shell.\n\n{start}"
        )
    if newest.state == "interrupted":
        return (
            f"Run {run} was interrupted (its supervisor died before the report).\n\n"
            f"horde-tui finalize {run} writes its report from what is on disk.\n\n{start}"
        )
    return f"Newest run: {run} ({newest.state}).\n\nPress enter to read its report.\n\n{start}"


class HomeScreen(HordeScreen):
    """No hosted run: the newest run's state, or how to start one."""

    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {LaunchCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_report", "Report", id="home-report"),
        Binding("n", "new_run", "New run", id="home-new", tooltip="the launch form"),
    ]

    def __init__(self, horde_dir: Path) -> None:
        super().__init__(id="home-screen")
        self.horde_dir = horde_dir
        self.newest = newest_run(horde_dir)

    def compose(self) -> ComposeResult:
        yield Header()
        with Center(), Vertical(id="home-box"):
            yield Static(home_text(self.horde_dir, self.newest), id="home-text", markup=False)
        yield Footer(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_report":
            if self.newest is None:
                return False  # nothing to open: keep the key out of the footer
            return True if self.newest.has_report else None
        return True

    def on_screen_resume(self) -> None:
        """Back from a run launched here: there are runs now, so list them."""
        index = RunsIndex(self.horde_dir)
        index.refresh()
        if index.rows():
            self.app.switch_screen(RunsScreen(self.horde_dir, index))

    def action_new_run(self) -> None:
        open_launch_form(self, self.horde_dir)

    def action_open_report(self) -> None:
        if self.newest is not None and self.newest.has_report:
            self.app.push_screen(ReportScreen(self.newest.run_dir))


def first_screen(horde_dir: Path) -> HomeScreen | RunsScreen:
    """What the app opens on with nothing to host or attach: the runs list (runs and
    swarms) when `.horde/` holds any, else the empty state that says how to start one."""
    index = RunsAndSwarms(horde_dir)
    index.refresh()
    return RunsScreen(horde_dir, index) if index.rows() else HomeScreen(horde_dir)
