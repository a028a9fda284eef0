"""The run screen: the member table above, the run's tabs below.

The screen shows and drives a `view.source.RunSource`, hosted in this process or
attached from another's files: one path for both, read from the run's files. The app
wakes it (`wake`, after the supervisor's events or an attached run's files changed) and
it folds the lifecycle events the source's `poll()` read (`apply`); the table repaints
from the source's `MemberState`s (diffed cell by cell: only the changed cells' lines
are repainted), the Events tab catches up with `events.jsonl` (reading only the
appended bytes) and the visible tab reloads if its files moved (`files_changed`).
Controls are the source's coroutines, awaited in a worker; each answer comes back as a
notification. Keys act on the member under the table cursor and are greyed out
(`check_action` -> None) when they do not apply to it now.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.widgets import Footer, Header, TabbedContent, TabPane

from horde_tui.protocol.outcome import RunSummary
from horde_tui.screens.ask import AskScreen
from horde_tui.screens.base import HordeScreen
from horde_tui.screens.commands import MemberCommands
from horde_tui.screens.cost import CostLine
from horde_tui.screens.describe import (
    LIVE_STATUSES,
    STOPPABLE_STATUSES,
    member_tally,
)
from horde_tui.screens.member import MemberDetailScreen, reset_applies
from horde_tui.screens.modals import reset_screen, stop_clean_screen, stop_hard_screen
from horde_tui.screens.panes import (
    FOCUSABLE_TABS,
    RELOADABLE,
    EventsPane,
    FilesPane,
    GraphPane,
    LedgerPane,
    LedgerSource,
    ThreadsPane,
)
from horde_tui.screens.report import ReportScreen
from horde_tui.store.asks import ASKS_FILE
from horde_tui.store.display import MemberRow, format_elapsed
from horde_tui.store.members import MemberState
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.view.events import EventView
from horde_tui.view.phase import RunPhase
from horde_tui.view.source import RunSource
from horde_tui.widgets.confirm_queue import ConfirmQueue
from horde_tui.widgets.event_log import EventTail
from horde_tui.widgets.member_table import MemberTable
from horde_tui.widgets.status_line import StatusLine

LEDGER_TABS = ("board", "ideas", "findings", "facts", "claims", "resources")
TAB_KEYS = {
    "1": "board",
    "2": "ideas",
    "3": "findings",
    "4": "facts",
    "5": "claims",
    "6": "resources",
    "7": "events",
    "8": "threads",
    "9": "graph",
    "0": "files",
}
"""Digit -> tab, in the order the tabs are shown."""

TABS = Binding.Group("tabs", compact=True)
MEMBER_ACTIONS = frozenset({"pause", "resume", "reset", "stop_hard", "member_detail", "transcript"})
KEYED_ACTIONS = ("pause", "resume", "reset", "stop_hard", "member_detail", "stop_clean")
"""The actions whose greying follows the run and the selected member."""
RUN_CONTROLS = frozenset(KEYED_ACTIONS) - {"member_detail"}
"""Keys that act on a live run: shown greyed while they do not apply to the selected
member, hidden once the run has ended."""
ASK_IN_FOOTER = 90
"""A live run's footer shows `a Ask` from this width: at 80 columns the member keys,
help and quit fill it (`a` works there all the same, and F1 lists it)."""


def run_screen_of(app: App[Any]) -> RunScreen | None:
    """The run screen the app wakes and the attached poll feeds: the lowest one on
    `app`'s stack, if any."""
    return next((s for s in app.screen_stack if isinstance(s, RunScreen)), None)


class RunScreen(HordeScreen):
    """A run, hosted or attached, live or ended."""

    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {MemberCommands}
    AUTO_FOCUS = "#members"
    ask_in_footer_from: ClassVar[int | None] = ASK_IN_FOOTER
    """The width from which a live run's footer shows `a Ask` (None: never)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause", "Pause", id="pause", tooltip="pause the selected member"),
        Binding("r", "resume", "Resume", id="resume", tooltip="resume the selected member"),
        Binding("x", "reset", "Reset", id="reset", tooltip="reset the selected member (asks)"),
        Binding("s", "stop_clean", "Stop", id="stop-clean", tooltip="stop the run clean (asks)"),
        Binding("S", "stop_hard", "Hard stop", id="stop-hard", tooltip="stop hard (asks first)"),
        Binding("enter", "member_detail", "Detail", id="member-detail"),
        Binding("t", "transcript", "Transcript", id="transcript", tooltip="open the transcript"),
        Binding("E", "export", "Export", show=False, id="export", tooltip="export the run as HTML"),
        Binding("o", "report", "Report", id="run-report", tooltip="the ended run's REPORT.md"),
        # Events-tab keys stay out of the footer (80 columns hold the member keys only).
        Binding("slash", "filter", "Filter events", show=False, id="filter", key_display="/"),
        Binding("f", "follow", "Follow the event tail", show=False, id="follow"),
        Binding("escape", "back", "Back", show=False, id="back"),
        # Before confirm mode's `a`: the ask pane while no command waits (`check_action`);
        # in the footer only when it has room (a live run's 80 columns hold `q` last).
        Binding("a", "ask('footer')", "Ask", id="ask", tooltip="ask the run a question"),
        Binding("a", "ask", "Ask", show=False, id="ask-narrow", tooltip="ask the run a question"),
        Binding("y", "confirm('allow')", "Allow the waiting command", show=False, id="allow"),
        Binding("n", "confirm('refuse')", "Refuse the waiting command", show=False, id="refuse"),
        Binding(
            "a", "confirm('allow-all')", "Allow all from its member", show=False, id="allow-all"
        ),
        *(
            Binding(
                key,
                f"tab('{tab}')",
                f"{tab.capitalize()} tab",
                show=False,
                id=f"tab-{tab}",
                group=TABS,
            )
            for key, tab in TAB_KEYS.items()
        ),
    ]

    def __init__(self, source: RunSource) -> None:
        super().__init__(id="run-screen")
        self.source = source
        self.live = True
        self.life = RunPhase()
        """Phase, canary and clean-stop countdown, folded from the lifecycle events
        (all of them: a resumed run's first poll replays its log from the start)."""
        self.phase = self.life.phase
        self.summary: RunSummary | None = None
        self._ready = False
        self._early: list[SupervisorEvent] = []
        """Events that arrived before the tabs finished mounting, applied once they have."""
        self._key_inputs: tuple[object, ...] = ()
        """What `check_action` last saw (`refresh_keys`)."""

    @property
    def table(self) -> MemberTable:
        return self.query_one(MemberTable)

    @property
    def event_log(self) -> EventTail:
        return self.query_one(EventTail)

    def compose(self) -> ComposeResult:
        config = self.horde_app.config
        horde_dir = self.source.run_dir.parent.parent
        ledgers = self.ledger_source(horde_dir)
        yield Header()
        yield StatusLine(id="run-status")
        yield CostLine(ledgers, self.source.run_dir, id="run-cost")
        yield MemberTable(id="members")
        yield ConfirmQueue(self.source.run_dir, id="confirm-queue")
        with TabbedContent(initial="events", id="tabs"):
            for tab in LEDGER_TABS:
                with TabPane(tab.capitalize(), id=tab):
                    yield LedgerPane(ledgers, tab)
            with TabPane("Events", id="events"):
                events = EventView(self.source.run_dir / "events.jsonl")
                log = EventTail(events, clock_text=config.clock_text, id="event-log")
                yield EventsPane(log, blink=config.cursor_blink)
            with TabPane("Threads", id="threads"):
                yield ThreadsPane(ledgers)
            with TabPane("Graph", id="graph"):
                yield self.graph_pane()
            with TabPane("Files", id="files"):
                yield FilesPane(self.source.run_dir)
        yield Footer(compact=True, show_command_palette=False)

    def ledger_source(self, horde_dir: Path) -> LedgerSource:
        """What the cost line, the ledger and Threads tabs read (a replay's reads them at
        its cursor)."""
        return LedgerSource(horde_dir, self.source.run_dir.name, self.source.baseline)

    def graph_pane(self) -> GraphPane:
        lanes = [(state.name, state.role) for state in self.source.members.values()]
        return GraphPane(self.source.run_dir, lanes)

    def on_mount(self) -> None:
        # TabbedContent mounts its panes a refresh later; events wait for them.
        self.call_after_refresh(self._become_ready)
        config = self.horde_app.config
        if config.tick_s > 0:
            self.set_interval(config.tick_s, self.tick)

    def tick(self) -> None:
        """The clock moved: elapsed times, the canary's wait and the stop countdown."""
        self.refresh_table()
        self.show_status()

    # -- the model -------------------------------------------------------------------------

    def _become_ready(self) -> None:
        self._ready = True
        early, self._early = self._early, []
        self.apply(early)
        self.event_log.catch_up()

    async def files_changed(self, paths: set[Path] | None) -> None:
        """The app's watcher saw `paths` change under `.horde/` (None: it cannot tell
        what, so check everything). The Events tab catches up with its log; the visible
        tab reloads if its files moved. Both cost a `stat` when nothing did."""
        if not self._ready:
            return
        if paths is None or any(p.name == "events.jsonl" for p in paths):
            self.event_log.catch_up()  # a stat when `wake` has read it already
        run_id = self.source.run_dir.name
        if paths is None or any(p.name == ASKS_FILE and p.parent.name == run_id for p in paths):
            self.query_one(CostLine).count_asks()
        await self.reload_visible_tab()

    def wake(self) -> None:
        """The source has news (the supervisor's events, an attached run's files):
        fold what it has gathered since the last wake."""
        self.apply(self.source.poll())

    def apply(self, events: Iterable[SupervisorEvent]) -> None:
        """Fold one coalesced batch of events; the Events tab catches up with the log
        file, where the supervisor wrote its lifecycle events before emitting them."""
        batch = list(events)
        if not self._ready:
            self._early.extend(batch)
            return
        self.event_log.catch_up()
        for event in batch:
            if event.kind != "member-status":
                before = self.life.phase
                self.life.apply(event.kind, event.member, event.data, event.ts)
                if self.life.phase != before:
                    self.phase = self.life.phase
        self.refresh_table()
        self.show_status()
        self.query_one(CostLine).show_cost(self.source.members.values(), self.life.forecast)
        self.refresh_keys()

    def refresh_keys(self) -> None:
        """Refresh the bindings only when what `check_action` answers changed: that
        rebuilds the footer, which costs more than the rest of a batch together, and a
        member going from one live status to another (thinking, a tool) changes no key."""
        answers = tuple(self.check_action(a, ()) for a in KEYED_ACTIONS)
        if answers != self._key_inputs:
            self._key_inputs = answers
            self.refresh_bindings()

    def run_ended(
        self, summary: RunSummary | None, error: str | None = None, text: str = ""
    ) -> None:
        """The run is over: `summary` when hosted, `error` when its supervisor failed,
        `text` (the run's state and outcome as read from disk) when attached."""
        self.live = False
        self.summary = summary
        if summary is not None:
            self.phase = f"ended: {summary.outcome}: {summary.diagnosis}"
        elif error is not None:
            self.phase = f"supervisor failed: {error}"
        else:
            self.phase = text or "ended"
        self.refresh_table()
        self.show_status()
        self.refresh_bindings()

    def refresh_table(self) -> None:
        """Repaint the member table from the source's states: after every batch of
        events (at most ~10 a second, the bridge's coalescing) and every clock tick. The
        table diffs each row and repaints only the lines (and cells) that changed, so
        this costs a line per changed member, never the table."""
        if not self._ready:
            return
        clock = self.horde_app.config.clock()
        rows = [MemberRow.of(state, clock) for state in self.source.members.values()]
        self.table.show(self.query_one(ConfirmQueue).badge(rows))

    def on_confirm_queue_changed(self, event: ConfirmQueue.Changed) -> None:
        self.refresh_table()
        self.refresh_bindings()  # `a` is the ask pane or confirm mode's allow-all

    def action_confirm(self, decision: str) -> None:
        """Confirm mode: decide the first command waiting (`y`, `n`, `a`)."""
        self.query_one(ConfirmQueue).decide(decision)

    def show_status(self) -> None:
        if not self._ready:
            return
        parts = [self.phase, member_tally(self.source.members.values())]
        now = self.horde_app.config.clock()
        # What is happening to the run comes before the tally (which the table shows
        # too), so 80 columns keep the countdown and the canary's wait in view.
        if canary := self.life.canary_text(now, format_elapsed):
            parts.insert(1, canary)
        reason = self.source.stop_reason
        stopping = self.live and reason is not None and not self.life.ended
        if stopping:
            countdown = self.life.stop_text(now, format_elapsed)
            parts.insert(1, countdown or f"stopping clean ({reason})")
        self.query_one("#run-status", StatusLine).show(" · ".join(parts))
        self.set_class(not self.live, "-ended")
        self.set_class(stopping, "-stopping")

    # -- tabs ----------------------------------------------------------------------------------

    async def reload_visible_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        pane = tabs.get_pane(tabs.active) if tabs.active else None
        if pane is None:
            return
        for child in pane.children:
            if isinstance(child, RELOADABLE):
                await child.reload_if_changed()

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        await self.reload_visible_tab()

    def action_tab(self, tab: str) -> None:
        """Show the tab; a ledger, Threads or Graph tab also takes the focus, so the
        arrows, `v` and Enter act on what is in view (escape goes back to the members)."""
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        pane = tabs.get_pane(tab)
        for child in pane.children if pane is not None else ():
            if isinstance(child, FOCUSABLE_TABS):
                # The pane becomes visible on the next refresh; focus it then.
                self.call_after_refresh(child.focus_content)

    # -- member actions (keys, the palette and the detail screen share these) --------------

    def selected_state(self) -> MemberState | None:
        name = self.table.selected_member
        return self.source.members.get(name) if name else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not self.live and action in RUN_CONTROLS:
            return False  # an ended run has nothing to pause, reset or stop: hide the keys
        if action == "ask":  # confirm mode's `a` (allow all) while a command waits
            if self.query_one(ConfirmQueue).waiting:
                return False
            if not parameters:
                return True
            room = self.ask_in_footer_from
            return room is not None and (not self.live or self.size.width >= room)
        if action == "report":  # shown once the run has ended with its report
            return not self.live and (self.source.run_dir / "REPORT.md").is_file()
        if action in MEMBER_ACTIONS:
            state = self.selected_state()
            if state is None:
                return None
            if state.external and action in ("pause", "resume", "reset"):
                return None  # an agent the run did not start: greyed, it cannot be paused
            if action == "pause":
                return True if self.live and state.status in LIVE_STATUSES else None
            if action == "resume":
                return True if self.live and state.status == "paused" else None
            if action == "reset":
                return True if reset_applies(self.live, self.source, state) else None
            if action == "stop_hard":
                return True if self.live else None
        if action == "stop_clean":
            return True if self.live and self.source.stop_reason is None else None
        return True

    def pause_member(self, name: str) -> None:
        self.run_control(f"pause {name}", self.source.pause(name))

    def resume_member(self, name: str) -> None:
        self.run_control(f"resume {name}", self.source.resume(name))

    def stop_run_clean(self) -> None:
        """Ask, then stop clean: a stopped run cannot be resumed, so one key must not."""

        def chosen(choice: str | None) -> None:
            if choice == "stop-clean":
                self.run_control("stop-clean", self.source.stop_clean("all"))

        self.app.push_screen(stop_clean_screen(self.source.run_id), chosen)

    def confirm_stop_hard(self, name: str | None) -> None:
        state = self.source.members.get(name) if name else None
        running = state is not None and state.status in STOPPABLE_STATUSES

        def chosen(choice: str | None) -> None:
            if choice == "member" and name:
                self.stop_hard(name)
            elif choice == "all":
                self.stop_hard("all")

        self.app.push_screen(stop_hard_screen(name, running), chosen)

    def stop_hard(self, target: str) -> None:
        self.run_control(f"stop-hard {target}", self.source.stop_hard(target))

    def run_control(self, what: str, control: Awaitable[str]) -> None:
        """Send a control from a worker: a hard stop or a reset waits for processes
        (up to 5 s), an attached run's answer comes through `control/` (up to 15 s), so
        none waits on the message loop. The answer (or the failure, which the worker
        would swallow) becomes a notification."""

        async def work() -> None:
            try:
                text = await control
            except Exception as exc:
                self.notify(f"{what} failed: {exc}", severity="error", timeout=30)
                return
            self.notify(text, severity="warning" if text.startswith("refused") else "information")
            self.after_control()

        self.run_worker(work(), group="controls", exit_on_error=False)

    def confirm_reset(self, name: str) -> None:
        """Ask, then reset: the member loses its session's unsaved work."""

        def chosen(choice: str | None) -> None:
            if choice == "reset":
                self.reset_member(name)

        self.app.push_screen(reset_screen(name), chosen)

    def reset_member(self, name: str) -> None:
        self.run_control(f"reset {name}", self.source.reset(name))

    def open_member(self, name: str) -> None:
        self.app.push_screen(MemberDetailScreen(self.source, name))

    def show_transcript(self, name: str) -> None:
        """The detail screen opens on the transcript (focused, following)."""
        self.open_member(name)

    def after_control(self) -> None:
        self.refresh_table()
        self.show_status()
        self.refresh_bindings()

    def _selected(self) -> str | None:
        return self.table.selected_member

    def action_pause(self) -> None:
        if name := self._selected():
            self.pause_member(name)

    def action_resume(self) -> None:
        if name := self._selected():
            self.resume_member(name)

    def action_reset(self) -> None:
        if name := self._selected():
            self.confirm_reset(name)

    def action_stop_clean(self) -> None:
        self.stop_run_clean()

    def action_stop_hard(self) -> None:
        self.confirm_stop_hard(self._selected())

    def action_member_detail(self) -> None:
        if name := self._selected():
            self.open_member(name)

    def action_transcript(self) -> None:
        if name := self._selected():
            self.show_transcript(name)

    def action_report(self) -> None:
        self.app.push_screen(ReportScreen(self.source.run_dir))

    def action_ask(self, _shown: str = "") -> None:
        cost = self.query_one(CostLine)
        self.app.push_screen(AskScreen(self.source.run_dir, answered=cost.count_asks))

    def on_resize(self) -> None:
        self.refresh_bindings()  # `a Ask` is in the footer from ASK_IN_FOOTER columns

    def action_export(self) -> None:
        """Write `horde-export-<run>/` here (`web.export`) from a thread; say where."""
        from horde_tui.web.export import export_run

        def work(run_dir: Path = self.source.run_dir) -> None:
            self.app.call_from_thread(self.notify, export_run(run_dir), timeout=20)

        self.run_worker(work, thread=True, group="export", exit_on_error=False)

    def on_member_table_selected(self, event: MemberTable.Selected) -> None:
        self.open_member(event.member)

    def on_member_table_highlighted(self, event: MemberTable.Highlighted) -> None:
        self.refresh_keys()

    # -- the event log -------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.action_tab("events")
        self.query_one(EventsPane).open_filter()

    def action_follow(self) -> None:
        self.action_tab("events")
        self.event_log.follow()

    def action_back(self) -> None:
        pane = self.query_one(EventsPane)
        if pane.has_class("-filtering"):
            pane.close_filter(clear=True)
        elif self.focused is not self.table:
            self.table.focus()
        elif len(self.app.screen_stack) > 1:
            self.app.pop_screen()  # opened from the runs list: back to it (the run goes on)
