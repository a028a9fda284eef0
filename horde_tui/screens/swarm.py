"""The swarm screen: one line per horde, the partition and merge state, the swarm's files.

Everything shown is read from the swarm directory (`view.swarm.SwarmView`), whether
this app hosts the swarm or another process does: the watcher and a one-second interval
wake it, and a hosted swarm's lifecycle events wake it at once. Enter (or `1`-`4`, the
reference's `all | h1 | h2` tabs) opens a horde's run screen on its run directory, as
`attach` does; escape there comes back here.

In confirm mode, the commands waiting in every live horde are one queue under the
table (`ConfirmQueue`, as on a run screen, each line naming its horde): `y` allows the
first, `n` refuses it, `a` allows that horde's member for the rest of the run (while
nothing waits, `a` is the overview tab). Decisions go through the swarm's own
`control/` with a horde target (`h2:member-1`), hosted here or not, and the swarm
supervisor routes them to that horde's confirm desk (`ControlTaker.decide`).

Controls act on the horde under the cursor (target `hN`) or, from their dialogs and
the palette, on the whole swarm (`all`); a reset is of one member (`hN:member-K`, picked
from the horde's members), as the swarm supervisor takes it. A hosted swarm takes them as method calls
(`HostedSwarm`, the `SwarmSupervisor` API); another process's swarm gets them through
its own `control/` folder, from a thread worker (an answer can take up to 15 s), and
routes them as it routes method calls. Keys that do not apply (a finished swarm, a
horde not started or not live) are greyed out by `check_action`, and the palette
offers the same rule per horde.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Markdown,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from horde_tui.protocol.controls import HordeControls
from horde_tui.screens.base import HordeScreen, OpenRun
from horde_tui.screens.commands import SwarmCommands
from horde_tui.screens.describe import STOPPABLE_STATUSES, horde_applies
from horde_tui.screens.modals import ChoiceScreen, reset_screen
from horde_tui.screens.panes import MarkdownFilePane
from horde_tui.store.display import format_cost
from horde_tui.view.confirms import WaitingCommand, swarm_waiting
from horde_tui.view.ledgers import KINDS
from horde_tui.view.source import send_control
from horde_tui.view.swarm import HordeLine, SwarmView, overview_markdown
from horde_tui.widgets.confirm_queue import BADGE_STATUS, ConfirmQueue
from horde_tui.widgets.member_table import clip
from horde_tui.widgets.status_line import StatusLine

if TYPE_CHECKING:  # the supervisor loads only when a swarm is hosted
    from horde_tui.common.settings import Settings
    from horde_tui.supervisor.observe import Sink
    from horde_tui.supervisor.setup import RunRequest

COLUMNS = (
    ("horde", "horde"),
    ("state", "state"),
    ("outcome", "outcome"),
    ("members", "members"),
    ("findings", "findings"),
    ("accepted", "accepted"),
    ("cost", "cost"),
    ("workstream", "workstream"),
)
WORKSTREAM_MIN_WIDTH = 12
CELL_PADDING = 2
WIDE_LEDGERS = 160
"""Below this many columns the Ledgers tab shows id, status, owner and text only."""
REFRESH_S = 1.0
"""The screen re-reads the swarm at most this often when nothing wakes it."""
FILE_TABS = {
    "SWARM.md": "the prompt and the partition; the planner writes it before the hordes start",
    "REPORT.md": "per-horde members, turns, tokens, cost, findings and outcome; written when "
    "every horde has finished",
    "DELIVERABLE.md": "the hordes' deliverables merged, each claim attributed to its horde; "
    "written after the last horde's report",
}
TAB_KEYS = {
    "a": "overview",
    "l": "ledgers",
    "w": "swarm-md",
    "o": "report-md",
    "d": "deliverable-md",
}
"""Key -> tab: `a` (all) the overview, every horde's ledgers, then the swarm files; each
tab's label starts with its key, since the footer has no room for them at 80 columns."""
HORDE_KEYS = Binding.Group("hordes", compact=True)
TABS = Binding.Group("tabs", compact=True)
HORDE_ACTIONS = frozenset({"pause", "resume", "reset", "stop_clean", "stop_hard", "open_horde"})
CONFIRM_STATES = frozenset({"active", "finalizing"})
"""Hordes whose `control/` can hold a command waiting for a person (a live run)."""


class HostedSwarm(HordeControls, Protocol):
    """What the screen uses of a `SwarmSupervisor` hosted in this app (the swarm contract)."""

    swarm_id: str
    swarm_dir: Path
    count: int
    request: RunRequest
    settings: Settings
    sink: Sink

    def handoff(self) -> str: ...


def swarm_quit_screen(swarm_id: str) -> ChoiceScreen:
    """Asked when quitting while this app hosts a live swarm: its hordes' members are
    this process's children, so detaching it is a handoff (`SwarmSupervisor.handoff`):
    running hordes stop where they are and a detached `horde-tui resume` carries the
    whole swarm on (hordes not started yet start there, the merge happens there)."""
    return ChoiceScreen(
        f"Swarm {swarm_id} is hosted in this app.",
        "Stop clean: every horde wraps up and writes its report, the swarm merges them, "
        "then the app quits. Stop hard: members are terminated now.\nDetach: members "
        "pause their sessions, a background supervisor carries the swarm on, the app "
        "quits (horde-tui status watches it).",
        [
            ("stop-clean", "Stop clean", "primary", True),
            ("stop-hard", "Stop hard", "error", True),
            ("detach", "Detach", "warning", True),
            ("cancel", "Cancel", "default", True),
        ],
    )


def stop_screen(horde: str, horde_live: bool, hard: bool) -> ChoiceScreen:
    """Ask whether a stop is for the selected horde or the whole swarm (cancel focused)."""
    how = (
        "Terminates at once (SIGTERM, SIGKILL after 5 s); members lose unsaved work and "
        "each report is written from what is on disk."
        if hard
        else "Members wrap up (90 s grace), then each horde writes its report and "
        "deliverable; the swarm merges what the hordes delivered."
    )
    word = "hard" if hard else "clean"
    variant = "error" if hard else "warning"
    return ChoiceScreen(
        f"Stop {word}?",
        how,
        [
            ("horde", f"Stop {horde} {word}", "warning", horde_live),
            ("all", f"Stop the swarm {word}", variant, True),
            ("cancel", "Cancel", "default", True),
        ],
    )


class MemberPickScreen(ModalScreen[str | None]):
    """A list of member names; Enter picks one, escape picks none (nothing happens)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="pick-cancel")
    ]

    def __init__(self, question: str, names: list[str]) -> None:
        super().__init__(classes="pick-screen")
        self.question = question
        self.names = names

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, classes="dialog-question", markup=False)
            yield OptionList(*(Option(name, id=name) for name in self.names), id="pick-list")
            yield Static("enter: pick · escape: cancel", classes="dialog-detail", markup=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SwarmScreen(HordeScreen):
    """One swarm; see the module docstring."""

    AUTO_FOCUS = "#hordes"
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {SwarmCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_horde", "Open", id="swarm-open", tooltip="the horde's run screen"),
        Binding("p", "pause", "Pause", id="swarm-pause", tooltip="pause the selected horde"),
        Binding("r", "resume", "Resume", id="swarm-resume", tooltip="resume the selected horde"),
        Binding("x", "reset", "Reset", id="swarm-reset", tooltip="reset a member of the horde"),
        Binding("s", "stop_clean", "Stop", id="swarm-stop-clean", tooltip="stop clean (asks)"),
        Binding("S", "stop_hard", "Hard stop", id="swarm-stop-hard", tooltip="stop hard (asks)"),
        Binding("escape", "back", "Back", show=False, id="swarm-back"),
        # Before the tab keys: `a` allows all only while a command waits (else skipped
        # on to the overview tab, its key since the swarm screen had one).
        Binding("y", "confirm('allow')", "Allow the waiting command", show=False, id="swarm-allow"),
        Binding(
            "n", "confirm('refuse')", "Refuse the waiting command", show=False, id="swarm-refuse"
        ),
        Binding(
            "a",
            "confirm('allow-all')",
            "Allow all from its member",
            show=False,
            id="swarm-allow-all",
        ),
        Binding(
            "v",
            "next_ledger",
            "Ledger",
            id="swarm-next-ledger",
            tooltip="the Ledgers tab: the next ledger (ideas, board, findings, ...)",
        ),
        *(
            Binding(
                str(n),
                f"horde('h{n}')",
                f"h{n}",
                show=False,
                id=f"swarm-h{n}",
                tooltip=f"h{n}'s run screen",
                group=HORDE_KEYS,
            )
            for n in range(1, 5)
        ),
        *(
            Binding(
                key,
                f"tab('{tab}')",
                tab.removesuffix("-md"),
                show=False,
                id=f"swarm-tab-{tab}",
                group=TABS,
            )
            for key, tab in TAB_KEYS.items()
        ),
    ]

    def __init__(self, swarm_dir: Path) -> None:
        super().__init__(id="swarm-screen")
        self.swarm_dir = Path(swarm_dir)
        self.view = SwarmView(self.swarm_dir)
        self.lines: list[HordeLine] = []
        self.columns: tuple[str, ...] = ()
        self.shown: dict[str, dict[str, str]] = {}
        """Each horde's cells as last painted: a repaint changes only what differs."""
        self._lock = asyncio.Lock()
        self._overview = ""
        self._stale = True
        """What was read is not on screen yet."""
        self.ledger = "findings"
        """The ledger the Ledgers tab shows (`v` moves on)."""
        self._ledgers_shown: tuple[str, bool] | None = None
        self.asking: frozenset[str] = frozenset()
        """Hordes with a command waiting for a person (confirm mode): their state cell
        says so."""

    # -- composing and reading ------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusLine(id="swarm-scope")
        yield StatusLine(id="swarm-status")
        yield DataTable(id="hordes", cursor_type="row", zebra_stripes=True)
        yield ConfirmQueue(self.swarm_dir, read=self.waiting_commands, id="confirm-queue")
        with TabbedContent(initial="overview", id="swarm-tabs"):
            with TabPane("a Overview", id="overview"):
                yield Markdown(open_links=False, id="swarm-overview", classes="markdown-pane")
            with TabPane("l Ledgers", id="ledgers"):
                yield StatusLine(id="swarm-ledger-status")
                yield Markdown(open_links=False, id="swarm-ledgers", classes="markdown-pane")
            for name, what in FILE_TABS.items():
                tab = name.removesuffix(".md")
                key = next(k for k, t in TAB_KEYS.items() if t == f"{tab.lower()}-md")
                with TabPane(f"{key} {tab}", id=f"{tab.lower()}-md"):
                    yield MarkdownFilePane(
                        self.swarm_dir / name, f"{name} is not written yet: {what}."
                    )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        app = self.horde_app
        self.watch(app, "files_revision", self._woken, init=False)
        self.watch(app, "swarm_revision", self._woken, init=False)
        self.set_interval(REFRESH_S, self.wake)
        self.call_after_refresh(self.wake)  # mounted by then: the first read is painted

    def _woken(self, _revision: int) -> None:
        self.wake()

    def wake(self) -> None:
        """Reload in a worker, not in the handler that woke us: a worker is cancelled
        cleanly when the screen or the app goes away mid-read, where an awaited thread
        inside a timer or watcher callback raised into Textual's shutdown."""
        self.run_worker(self.reload, group="reload", exit_on_error=False)

    async def reload(self) -> None:
        """Read what changed (in a thread: up to four hordes' logs and ledgers) and
        repaint; the lock keeps a wake and the interval from reading at once."""
        if self._lock.locked():
            return
        async with self._lock:
            self._stale = await asyncio.to_thread(self.view.refresh) or self._stale
            if not self.is_mounted:  # mounting (paint on the next wake) or gone
                return
            if self._stale:
                self._stale = False
                self._ledgers_shown = None
                await self.show()
            if self.query_one(TabbedContent).active == "ledgers":
                await self.show_ledgers()
            for pane in self.query(MarkdownFilePane):
                await pane.reload_if_changed()

    async def show(self) -> None:
        self.lines = self.view.lines()
        self.show_table()
        view, info = self.view, self.view.info
        names = [line.horde for line in self.lines]
        self.query_one("#swarm-scope", StatusLine).show(
            "[all] "
            + " ".join(f"{n + 1}:{h}" for n, h in enumerate(names))
            + " · enter or 1-4: a horde's run screen"
        )
        facts = [f"swarm {view.swarm_id}", view.state]
        if info is not None:
            facts += [info.count, info.model or "no model", f"merge {info.merge or 'pending'}"]
            if info.outcome:
                facts.append(info.outcome)
        if self.hosted is not None:
            facts.append("hosted here")
        self.query_one("#swarm-status", StatusLine).show(" · ".join(facts))
        self.set_class(not view.live, "-ended")
        overview = overview_markdown(view, self.horde_app.config.date_text)
        if overview != self._overview:
            self._overview = overview
            await self.query_one("#swarm-overview", Markdown).update(overview)
        self.refresh_bindings()

    async def show_ledgers(self) -> None:
        """The Ledgers tab: every horde's `self.ledger`, rebuilt only when the swarm or
        the choice of ledger changed (the caller holds the lock)."""
        wide = self.size.width >= WIDE_LEDGERS
        if self._ledgers_shown == (self.ledger, wide):
            return
        self._ledgers_shown = (self.ledger, wide)
        text = await asyncio.to_thread(self.view.ledgers_markdown, self.ledger, wide)
        following = KINDS[(KINDS.index(self.ledger) + 1) % len(KINDS)]
        status = f"{self.ledger} of every horde · v: next ledger ({following})"
        self.query_one("#swarm-ledger-status", StatusLine).show(status)
        await self.query_one("#swarm-ledgers", Markdown).update(text)

    def show_table(self) -> None:
        table: DataTable[str] = self.query_one("#hordes", DataTable)
        keys = tuple(key for key, _ in COLUMNS)
        cells = {line.horde: self.cells(line, WORKSTREAM_MIN_WIDTH) for line in self.lines}
        width = table.scrollable_content_region.width or self.size.width
        others = sum(
            max([len(label), *(len(c[key]) for c in cells.values())]) + CELL_PADDING
            for key, label in COLUMNS
            if key != "workstream"
        )
        room = max(WORKSTREAM_MIN_WIDTH, width - others - CELL_PADDING - 1)
        cells = {line.horde: self.cells(line, room) for line in self.lines}
        for horde in self.asking & set(cells):
            cells[horde]["state"] = BADGE_STATUS  # a command waits there for a person
        if keys != self.columns or list(cells) != list(self.shown):
            cursor = table.cursor_row
            table.clear(columns=keys != self.columns)
            if keys != self.columns:
                for key, label in COLUMNS:
                    table.add_column(label, key=key)
            for horde, row in cells.items():
                table.add_row(*(row[k] for k in keys), key=horde)
            if 0 <= cursor < len(cells):
                table.move_cursor(row=cursor)
        else:
            for horde, row in cells.items():
                for key in keys:
                    if row[key] != self.shown[horde][key]:
                        table.update_cell(horde, key, row[key], update_width=True)
        self.columns, self.shown = keys, cells

    @staticmethod
    def cells(line: HordeLine, workstream_width: int) -> dict[str, str]:
        started = line.run_dir is not None
        return {
            "horde": line.horde,
            "state": line.state,
            "outcome": line.outcome or "-",
            "members": str(line.members or "-"),
            "findings": str(line.findings) if started else "-",
            "accepted": str(line.accepted) if started else "-",
            "cost": format_cost(line.cost_usd, started),
            "workstream": clip(line.workstream or "-", workstream_width),
        }

    async def on_resize(self) -> None:
        if self.lines:
            self.show_table()
        self._ledgers_shown = None  # the next wake lays the Ledgers tab out again

    def waiting_commands(self) -> list[WaitingCommand]:
        """Confirm mode: the commands waiting in every live horde, oldest first."""
        live = {
            line.horde: line.run_dir
            for line in self.lines
            if line.run_dir is not None and line.state in CONFIRM_STATES
        }
        return swarm_waiting(live) if live else []

    def on_confirm_queue_changed(self, event: ConfirmQueue.Changed) -> None:
        event.stop()
        self.asking = frozenset(w.horde for w in self.query_one(ConfirmQueue).waiting)
        if self.lines:
            self.show_table()

    def action_confirm(self, decision: str) -> None:
        """Decide the first command waiting (`y`, `n`, `a`); with none, the key goes on
        to its next binding (`a`: the overview tab)."""
        if not self.query_one(ConfirmQueue).decide(decision):
            raise SkipAction()

    # -- selection and navigation ---------------------------------------------------------

    def selected_line(self) -> HordeLine | None:
        table = self.query_one("#hordes", DataTable)
        if not self.lines or not 0 <= table.cursor_row < len(self.lines):
            return None
        return self.lines[table.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_horde()

    def open_horde(self, horde: str) -> None:
        """The horde's run screen, read from its run directory (as `attach` does)."""
        line = self.view.line(horde)
        if line is None:
            self.notify(f"this swarm has no horde {horde}")
        elif line.run_dir is None:
            self.notify(f"{horde} has not started yet (hordes start a few seconds apart)")
        else:
            self.app.post_message(OpenRun(line.run_dir))

    def action_open_horde(self) -> None:
        if line := self.selected_line():
            self.open_horde(line.horde)

    def action_horde(self, horde: str) -> None:
        self.open_horde(horde)

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "ledgers":
            self.wake()
        self.refresh_bindings()

    def action_next_ledger(self) -> None:
        self.ledger = KINDS[(KINDS.index(self.ledger) + 1) % len(KINDS)]
        self.wake()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    # -- controls ------------------------------------------------------------------------------

    @property
    def hosted(self) -> HostedSwarm | None:
        """The swarm's supervisor when this app hosts it and it is still running."""
        app = self.horde_app
        swarm = app.swarm
        if swarm is None or not app.swarm_live:
            return None
        # resolved: the runs list names the swarm relative to the working directory
        return swarm if Path(swarm.swarm_dir).resolve() == self.swarm_dir.resolve() else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_ledger":
            return True if self.query_one(TabbedContent).active == "ledgers" else None
        if action == "horde" and parameters:
            line = self.view.line(str(parameters[0]))
            return True if line is not None and line.run_dir is not None else None
        if action in HORDE_ACTIONS:
            line = self.selected_line()
            if line is None or not horde_applies(action, self.view.live, line):
                return None
        return True

    def control(self, action: str, target: str) -> None:
        """Send `action` (pause, resume, stop_clean, stop_hard, reset) to `target` (`hN`
        or `all`): to the hosted supervisor, or through the live hordes' `control/`."""
        hosted = self.hosted
        if hosted is None:
            self.send_remote(action, target)
        elif action == "stop_hard":
            self.run_control(f"stop-hard {target}", hosted.stop_hard(target))
        elif action == "reset":
            self.run_control(f"reset {target}", hosted.reset(target))
        elif action == "stop_clean":
            self.answered(hosted.stop_clean(target, reason="stopped by user"))
        else:
            self.answered(getattr(hosted, action)(target))

    def run_control(self, what: str, control: Awaitable[str]) -> None:
        """A control that waits for processes, off the message loop; its answer (or its
        failure) becomes a notification."""

        async def work() -> None:
            try:
                text = await control
            except Exception as exc:
                self.notify(f"{what} failed: {exc}", severity="error", timeout=30)
                return
            self.answered(text)

        self.run_worker(work(), group="controls", exit_on_error=False)

    def send_remote(self, action: str, target: str) -> None:
        """Send to the swarm's own `control/` (as `horde-tui pause hN` does): its
        supervisor routes it to the hordes the target names and answers once."""

        def work() -> None:
            worker = get_current_worker()
            text = send_control(
                self.swarm_dir, action, target, cancelled=lambda: worker.is_cancelled
            )
            if not worker.is_cancelled:
                self.app.call_from_thread(self.answered, text)

        self.run_worker(work, thread=True, group="controls", exit_on_error=False)

    def answered(self, text: str) -> None:
        self.notify(text, severity="warning" if text.startswith("refused") else "information")
        self.wake()

    def pause_horde(self, horde: str) -> None:
        self.control("pause", horde)

    def resume_horde(self, horde: str) -> None:
        self.control("resume", horde)

    def confirm_stop(self, horde: str | None, hard: bool) -> None:
        """Ask whether to stop `horde` or the whole swarm (None: the swarm only)."""
        line = self.view.line(horde) if horde else None
        horde_live = line is not None and horde_applies("stop_hard", self.view.live, line)
        action = "stop_hard" if hard else "stop_clean"

        def chosen(choice: str | None) -> None:
            if choice == "horde" and horde:
                self.control(action, horde)
            elif choice == "all":
                self.control(action, "all")

        self.app.push_screen(stop_screen(horde or "the horde", horde_live, hard), chosen)

    def confirm_reset(self, target: str) -> None:
        """Ask, then reset one member (`hN:member-K`): the member loses its session."""

        def chosen(choice: str | None) -> None:
            if choice == "reset":
                self.control("reset", target)

        self.app.push_screen(reset_screen(target), chosen)

    def pick_reset(self, horde: str) -> None:
        """A reset is of one member (a whole horde is stopped, not reset): pick which of
        the horde's members whose session can be ended, then confirm."""
        line = self.view.line(horde)
        names = (
            [
                name
                for name, status in zip(line.names, line.statuses, strict=True)
                if status in STOPPABLE_STATUSES
            ]
            if line
            else []
        )

        def picked(name: str | None) -> None:
            if name:
                self.confirm_reset(f"{horde}:{name}")

        self.app.push_screen(MemberPickScreen(f"Reset which member of {horde}?", names), picked)

    def action_pause(self) -> None:
        if line := self.selected_line():
            self.pause_horde(line.horde)

    def action_resume(self) -> None:
        if line := self.selected_line():
            self.resume_horde(line.horde)

    def action_reset(self) -> None:
        if line := self.selected_line():
            self.pick_reset(line.horde)

    def action_stop_clean(self) -> None:
        line = self.selected_line()
        self.confirm_stop(line.horde if line else None, hard=False)

    def action_stop_hard(self) -> None:
        line = self.selected_line()
        self.confirm_stop(line.horde if line else None, hard=True)

    def on_unmount(self) -> None:
        self.view.close()
