"""What wakes the app's views besides the hosted supervisor: file changes under `.horde/`
(`FileWatch`) and an attached run's files re-read (`AttachedPoll`).

Both run on the app's loop (its workers and timers) but hold their own state, so the
app only says what to do with what they found.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import App

from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen, run_screen_of
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.view.coalesce import PacedWake, watch_dir
from horde_tui.view.source import AttachedSource
from horde_tui.widgets.event_log import BACKLOG_BYTES

WAKE_RATE = 3.0
"""Wake-ups a second at most from file changes: a screen following a busy run repaints
this often, and its idle CPU stays a few percent of a core."""


class FileWatch:
    """Wake the views when files under `.horde/` change, at most `WAKE_RATE` times a
    second: watchfiles groups a burst of writes, but a steady stream (twelve members
    writing) still yields about ten sets a second, and every wake costs a repaint. The
    app's one throttle (`PacedWake`) merges what arrives between wakes; the first change
    after a quiet spell wakes the views at once."""

    def __init__(
        self,
        app: App[Any],
        horde_dir: Path,
        changed: Callable[[set[Path] | None], Awaitable[None]],
    ) -> None:
        self.app = app
        self.horde_dir = horde_dir
        self.changed = changed
        """Called with each batch of changed paths (None: unknown, check everything)."""
        self._stop = asyncio.Event()
        self._pace = PacedWake(self._wake, WAKE_RATE)

    def start(self) -> None:
        self.app.run_worker(self._watch(), name="watcher", group="watcher", exit_on_error=False)

    def stop(self) -> None:
        self._stop.set()

    async def _watch(self) -> None:
        """Waits for `.horde/` to exist (the first run creates it). If the watcher cannot
        run (no inotify, too many watches) the views are polled once a second instead."""
        horde = self.horde_dir
        while not horde.is_dir():
            try:
                await asyncio.wait_for(self._stop.wait(), 1.0)
                return
            except TimeoutError:
                continue
        try:
            async for paths in watch_dir(horde, self._stop):
                self._pace.note(paths)
        except (OSError, RuntimeError) as exc:
            self.app.notify(
                f"watching {horde} failed ({exc}); checking it once a second instead",
                severity="warning",
                timeout=15,
            )
            self.app.set_interval(1.0, partial(self.changed, None))

    def _wake(self, paths: set[Path]) -> None:
        self.app.call_later(self.changed, paths)


class AttachedPoll:
    """The run shown from another process's files (`attach`, a live run opened from the
    runs list or the swarm screen): re-read on a timer and when its files change, shown
    on the run screen, the report opened when it ends. A large backlog (the first read
    of a long run's log) is read in a thread, and a poll asked for while one runs is
    done once it ends; the usual few appended lines cost well under a millisecond."""

    def __init__(
        self, app: App[Any], every_s: float, woke: Callable[[AttachedSource], None]
    ) -> None:
        self.app = app
        self.every_s = every_s
        self.woke = woke
        """Called after each batch shown (the app relabels and bumps its revision)."""
        self.source: AttachedSource | None = None
        self.seen_live = False
        """The followed run was live when read: its end opens the report (a run that
        had ended before it was opened shows its run screen, read-only)."""
        self._timer: object | None = None
        self._polling = False
        self._again = False

    def open(self, run_dir: Path) -> RunScreen:
        """The run screen on `run_dir`, followed from now on (the run followed before is
        let go). With the watcher on, the timer only notices what writes no file (the
        supervisor dying, elapsed times); without it, it is the only source."""
        self.close()
        self.source = source = AttachedSource(run_dir)
        self.seen_live = False
        if self._timer is None:
            self._timer = self.app.set_interval(self.every_s, self.poll)
        return RunScreen(source)

    def close(self) -> None:
        if self.source is not None:
            self.source.close()  # ends a control request's wait in its thread

    def files_changed(self, paths: set[Path] | None) -> None:
        """Poll now if the watcher saw the run's files change (None: it cannot tell)."""
        source = self.source
        if source is not None and (
            paths is None or any(p.is_relative_to(source.run_dir) for p in paths)
        ):
            self.poll()

    def shown(self, source: AttachedSource) -> bool:
        """A poll consumes what it reads: none is done while no screen shows the run."""
        screen = run_screen_of(self.app)
        return screen is not None and screen.source is source

    @property
    def live(self) -> AttachedSource | None:
        """The attached run on screen, if it is still live."""
        source = self.source
        return source if source is not None and self.shown(source) and source.live else None

    def poll(self) -> None:
        source = self.source
        if source is None or not self.shown(source):
            return
        if not self.app.is_running:  # quitting: the screens are being torn down
            return
        if self._polling:
            self._again = True
            return
        if source.backlog() < BACKLOG_BYTES:
            self._read(source, source.poll())
            return
        self._polling = True
        self.app.run_worker(
            partial(self._read_in_thread, source), thread=True, group="attach", exit_on_error=False
        )

    def _read_in_thread(self, source: AttachedSource) -> None:
        try:
            items: list[SupervisorEvent] | None = source.poll()
        except OSError:  # the source was closed under us (the app is quitting)
            items = None
        with suppress(RuntimeError):  # the app ended while this thread read
            self.app.call_from_thread(self._read, source, items)

    def _read(self, source: AttachedSource, items: list[SupervisorEvent] | None) -> None:
        self._polling = False
        screen = run_screen_of(self.app)
        if items is not None and source is self.source and screen and screen.source is source:
            screen.apply(items)
            self.woke(source)
            self.seen_live |= source.live
            if screen.live and not source.live:
                screen.run_ended(None, None, source.ended_text())
                report = (source.run_dir / "REPORT.md").is_file()
                if report and self.seen_live and self.app.screen is screen:
                    self.app.push_screen(ReportScreen(source.run_dir))
        if self._again:
            self._again = False
            self.poll()
