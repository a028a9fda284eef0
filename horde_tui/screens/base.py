"""The contract between `HordeApp` and its screens, so that screens never import the app.

A screen reads what the app shares (`HordeHost`: its `AppConfig`, what the file watcher
saw change, the run screen, the hosted swarm) and asks for what only the app may do by
posting a message to it (`OpenRun`, `LaunchRun`, `LaunchSwarm`), as frogmouth's screens
do: the app imports the screens, a screen imports this module only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from textual.message import Message
from textual.screen import Screen

from horde_tui.widgets.event_log import default_clock_text

if TYPE_CHECKING:
    from horde_tui.common.settings import Settings
    from horde_tui.supervisor.setup import RunRequest


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


class RunControls(Protocol):
    """What a member's screen uses of the run screen under it."""

    live: bool

    def confirm_reset(self, name: str) -> None: ...


@runtime_checkable
class HordeHost(Protocol):
    """What screens read of `HordeApp`. The app's reactive `revision`,
    `files_revision` and `swarm_revision` are watched by name."""

    config: AppConfig
    changed_paths: set[Path] | None
    """What the watcher saw change last (None: unknown, check everything)."""
    swarm: Any
    """The swarm this app hosts (a `screens.swarm.HostedSwarm`), running or ended."""
    swarm_live: bool

    @property
    def run_screen(self) -> RunControls | None: ...


class OpenRun(Message):
    """Show a run: this app's own hosted run, else read from its files (attached while
    it is live, read-only once it ended)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir


class LaunchRun(Message):
    """Host a run the launch form checked, as `horde-tui run` hosts one."""

    def __init__(self, request: RunRequest, settings: Settings) -> None:
        super().__init__()
        self.request = request
        self.settings = settings


class LaunchSwarm(Message):
    """Host a swarm of `hordes` the launch form checked (`H/M`)."""

    def __init__(self, request: RunRequest, settings: Settings, hordes: int) -> None:
        super().__init__()
        self.request = request
        self.settings = settings
        self.hordes = hordes


class HordeScreen(Screen[None]):
    """A screen of `HordeApp`; `horde_app` gives what it shares (`HordeHost`)."""

    @property
    def horde_app(self) -> HordeHost:
        """The app as `HordeHost`, unchecked: screens read it every tick, and a protocol
        `isinstance` probes each member; tests check once that `HordeApp` is one."""
        return cast(HordeHost, self.app)


def shown_path(path: Path) -> str:
    """A path as a screen shows it: relative to the working directory when inside it
    (`horde-tui` runs where its `.horde/` is), else with `~` for the home directory."""
    cwd, home = Path.cwd(), Path.home()
    if path.is_relative_to(cwd):
        return str(path.relative_to(cwd))
    if path.is_relative_to(home):
        return f"~/{path.relative_to(home)}"
    return str(path)
