"""Command palette (ctrl+p) providers: the run screen's member actions for every member,
the swarm screen's horde actions for every horde, and the runs list's runs.

The keys act on the member (horde) under the cursor; the palette reaches any of them by
name ("pause member-4", "stop h2 hard") and offers only what applies to it now, the same
rule `check_action` uses to grey out keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from horde_tui.screens.describe import LIVE_STATUSES, STOPPABLE_STATUSES, horde_applies
from horde_tui.screens.member import reset_applies

if TYPE_CHECKING:
    from horde_tui.view.run import RunRow
    from horde_tui.view.source import RunSource
    from horde_tui.view.swarm import HordeLine, SwarmView


@runtime_checkable
class MemberActions(Protocol):
    """What the member palette uses of the run screen (which imports this module, so
    the palette knows it by its shape, not its class)."""

    live: bool
    source: RunSource

    def stop_run_clean(self) -> None: ...
    def confirm_stop_hard(self, name: str | None) -> None: ...
    def pause_member(self, name: str) -> None: ...
    def resume_member(self, name: str) -> None: ...
    def confirm_reset(self, name: str) -> None: ...
    def open_member(self, name: str) -> None: ...
    def show_transcript(self, name: str) -> None: ...


@runtime_checkable
class HordeActions(Protocol):
    """What the horde palette uses of the swarm screen."""

    view: SwarmView
    lines: list[HordeLine]

    def control(self, action: str, target: str) -> None: ...
    def confirm_stop(self, horde: str | None, hard: bool) -> None: ...
    def pause_horde(self, horde: str) -> None: ...
    def resume_horde(self, horde: str) -> None: ...
    def confirm_reset(self, target: str) -> None: ...
    def open_horde(self, horde: str) -> None: ...


@runtime_checkable
class RunsActions(Protocol):
    """What the runs palette uses of the runs list."""

    rows: list[RunRow]

    def openable(self, row: RunRow) -> bool: ...
    def open_run(self, row: RunRow) -> None: ...
    def open_report(self, row: RunRow) -> None: ...


class ListedCommands(Provider):
    """A provider whose commands are a short list computed now: `commands()` yields
    (title, callback, help) for what applies; the palette lists and fuzzy-matches them."""

    def commands(self) -> Iterator[tuple[str, Callable[[], None], str]]:
        raise NotImplementedError

    async def discover(self) -> Hits:
        for title, callback, help_text in self.commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class MemberCommands(ListedCommands):
    """Pause, resume, reset, stop hard, open any member or its transcript; stop the run."""

    def commands(self) -> Iterator[tuple[str, Callable[[], None], str]]:
        """(title, callback, help) for everything that applies now."""
        screen = self.screen
        if not isinstance(screen, MemberActions):
            return
        live = screen.live
        if live and screen.source.stop_reason is None:
            yield "Stop the run clean", screen.stop_run_clean, "asks first"
        if live:
            yield "Stop the run hard", partial(screen.confirm_stop_hard, None), "asks first"
        for name, state in screen.source.members.items():
            if live and state.status in LIVE_STATUSES:
                yield f"Pause {name}", partial(screen.pause_member, name), state.role
            if live and state.status == "paused":
                yield f"Resume {name}", partial(screen.resume_member, name), state.role
            if reset_applies(live, screen.source, state):
                yield f"Reset {name}", partial(screen.confirm_reset, name), "asks first"
            if live and state.status in STOPPABLE_STATUSES:
                yield (
                    f"Stop {name} hard",
                    partial(screen.confirm_stop_hard, name),
                    "asks first",
                )
            yield f"Open {name}", partial(screen.open_member, name), "live activity"
            yield f"Transcript of {name}", partial(screen.show_transcript, name), "paged inline"


class SwarmCommands(ListedCommands):
    """Per horde of a swarm: pause, resume, reset, stop clean or hard, open its run
    screen; stop the whole swarm. Only what applies now (`describe.horde_applies`)."""

    def commands(self) -> Iterator[tuple[str, Callable[[], None], str]]:
        screen = self.screen
        if not isinstance(screen, HordeActions):
            return
        live = screen.view.live
        if live:
            yield (
                "Stop the swarm clean",
                partial(screen.control, "stop_clean", "all"),
                "every horde",
            )
            yield "Stop the swarm hard", partial(screen.confirm_stop, None, True), "asks first"
        for line in screen.lines:
            h = line.horde
            if horde_applies("pause", live, line):
                yield f"Pause {h}", partial(screen.pause_horde, h), line.workstream
            if horde_applies("resume", live, line):
                yield f"Resume {h}", partial(screen.resume_horde, h), line.workstream
            if horde_applies("reset", live, line):
                for name, status in zip(line.names, line.statuses, strict=True):
                    if status in STOPPABLE_STATUSES:
                        target = f"{h}:{name}"
                        yield f"Reset {target}", partial(screen.confirm_reset, target), "asks"
            if horde_applies("stop_clean", live, line):
                yield f"Stop {h} clean", partial(screen.control, "stop_clean", h), "wrap up"
                yield f"Stop {h} hard", partial(screen.confirm_stop, h, True), "asks first"
            if horde_applies("open_horde", live, line):
                yield f"Open {h}", partial(screen.open_horde, h), "its run screen"


class RunsCommands(ListedCommands):
    """Every run and swarm of the list by id: its screen (read-only once it ended) and
    its report, where there is one."""

    def commands(self) -> Iterator[tuple[str, Callable[[], None], str]]:
        screen = self.screen
        if not isinstance(screen, RunsActions):
            return
        for row in screen.rows:
            what = "swarm" if row.hordes else "run"
            if screen.openable(row):
                yield f"Open {what} {row.run_id}", partial(screen.open_run, row), row.state
            if "REPORT.md" in row.files:
                yield f"Report of {row.run_id}", partial(screen.open_report, row), row.state
