"""The runs list: every run under `.horde/runs` and every swarm under `.horde/swarms`,
newest first, with its state.

What bare `horde-tui` (and `horde-tui app`) opens when the app hosts no run and there
is at least one run on disk. Enter opens a run's screen (attached to a live run hosted
by another process; read-only for a run that ended: its tabs, member detail and
transcripts) or a swarm's screen (its hordes, `H/M` in the members column); `o` opens
a run's report. The palette offers both for every run. The list re-reads `RunsIndex` when the app's watcher sees
files change and once a second; the index reads only what each event log gained, so a
long history stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.widgets import DataTable, Footer, Header, Static

from horde_tui.screens.base import HordeScreen, OpenRun, shown_path
from horde_tui.screens.commands import RunsCommands
from horde_tui.screens.launch import LaunchCommands, open_launch_form
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.swarm import SwarmScreen
from horde_tui.store.runs import SWARM_LIVE_STATES
from horde_tui.view.run import LIVE_STATES, RunRow
from horde_tui.view.swarm import RunsAndSwarms
from horde_tui.widgets.member_table import clip

COLUMNS = (
    ("run", "run"),
    ("state", "state"),
    ("started", "started"),
    ("members", "count"),
    ("model", "model"),
    ("outcome", "outcome"),
    ("files", "files"),
    ("prompt", "prompt"),
)
FILE_FLAGS = (
    ("PLAN", "P"),
    ("REPORT", "R"),
    ("DELIVERABLE", "D"),
    ("POSTMORTEM", "M"),
    ("ANSWER", "A"),
)
"""The files column: one letter per document a person opens, `-` while it is absent, at
fixed places so the column scans like `ls -l` modes (`-RDM-`: report, deliverable and
post-mortem written). TASK (always there) and what comes with REPORT (SUMMARY,
ACCEPTANCE, GRAPH) have no letter; the detail line names every file present."""
NARROW_WIDTH = 100
"""Below this many columns the run id and the model are left out of the table so the
prompt keeps some room; the detail line under the table shows them."""
NARROW_LEAVES_OUT = frozenset({"run", "model"})
MODEL_WIDTH = 20
PROMPT_MIN_WIDTH = 12
CELL_PADDING = 2
"""DataTable's default padding: one space either side of every cell."""
REFRESH_S = 1.0
"""The list re-reads the index at most this often."""


def row_cells(row: RunRow, date_text: Callable[[float], str], prompt_width: int) -> dict[str, str]:
    """Every column's text for one run; long models and prompts are clipped (the detail
    line shows them whole)."""
    return {
        "run": row.run_id,
        "state": row.state,
        "started": date_text(row.started) if row.started else "-",
        "members": row.count,
        "model": clip(row.model or "-", MODEL_WIDTH),
        "outcome": row.outcome or "-",
        "files": file_flags(row.files),
        "prompt": clip(row.prompt, prompt_width),
    }


def file_stems(files: tuple[str, ...]) -> list[str]:
    """`REPORT.md` -> `REPORT`, once each (ACCEPTANCE is both .md and .json), in order."""
    return list(dict.fromkeys(name.split(".", 1)[0] for name in files))


def file_flags(files: tuple[str, ...]) -> str:
    """The files column's letters (`FILE_FLAGS`)."""
    present = set(file_stems(files))
    return "".join(letter if stem in present else "-" for stem, letter in FILE_FLAGS)


def detail_text(row: RunRow, date_text: Callable[[float], str]) -> str:
    """The highlighted run in full: what the table clips or leaves out."""
    started = f"started {date_text(row.started)}" if row.started else "not started"
    members = f"{row.hordes} hordes of {row.members or '?'}" if row.hordes else row.members or "?"
    facts = [row.run_id, row.state, started, f"{members} members"]
    facts += [row.model or "no model", row.outcome or "no outcome yet"]
    facts.append(f"files: {' '.join(file_stems(row.files))}" if row.files else "no files yet")
    return " · ".join(facts) + "\n" + (row.prompt or "(no prompt)")


class RunsScreen(HordeScreen):
    """Every run and swarm in a `.horde/`; enter opens a report, a live run or a swarm;
    n starts one."""

    AUTO_FOCUS = "#runs"
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {
        LaunchCommands,
        RunsCommands,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        # Before the table's own (hidden) enter, so the footer names it.
        Binding(
            "enter",
            "open_run",
            "Open run",
            id="runs-open",
            priority=True,
            tooltip="the run's screen (read-only once it ended), or the swarm's",
        ),
        Binding("o", "open_report", "Report", id="runs-report", tooltip="the run's REPORT.md"),
        Binding("n", "new_run", "New run", id="runs-new", tooltip="the launch form"),
    ]

    def __init__(self, horde_dir: Path, index: RunsAndSwarms | None = None) -> None:
        super().__init__(id="runs-screen")
        self.horde_dir = horde_dir
        self.index = index or RunsAndSwarms(horde_dir)
        self.rows: list[RunRow] = []
        self.columns: tuple[str, ...] = ()
        """The column keys on screen now (`started` only when the terminal is wide)."""
        self.shown: dict[str, dict[str, str]] = {}
        """Each row's cells as last painted, so a repaint changes only what differs."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="runs-status", markup=False)
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static("", id="runs-detail", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.index.refresh()
        self.show()
        # The watcher wakes the list when files change; the interval still notices what
        # writes no file (a supervisor that died).
        self.watch(self.horde_app, "files_revision", self.on_files_changed, init=False)
        self.set_interval(REFRESH_S, self.poll)

    def on_files_changed(self, _revision: int) -> None:
        self.poll()

    def on_resize(self) -> None:
        self.show()

    def poll(self) -> None:
        if self.index.refresh():
            self.show()

    def show(self) -> None:
        """Repaint: update changed cells in place; rebuild only when the runs or the
        columns differ."""
        table: DataTable[str] = self.query_one("#runs", DataTable)
        rows = self.index.rows()
        date_text = self.horde_app.config.date_text
        width = table.scrollable_content_region.width or self.size.width
        keys = tuple(k for k, _ in COLUMNS if width >= NARROW_WIDTH or k not in NARROW_LEAVES_OUT)
        cells = {r.run_id: row_cells(r, date_text, PROMPT_MIN_WIDTH) for r in rows}
        others = sum(
            max([len(label), *(len(c[key]) for c in cells.values())]) + CELL_PADDING
            for key, label in COLUMNS
            if key in keys and key != "prompt"
        )
        prompt_width = max(PROMPT_MIN_WIDTH, width - others - CELL_PADDING - 1)
        cells = {r.run_id: row_cells(r, date_text, prompt_width) for r in rows}
        if keys != self.columns or list(cells) != list(self.shown):
            selected = self.selected_row()
            table.clear(columns=keys != self.columns)
            if keys != self.columns:
                for key, label in COLUMNS:
                    if key in keys:
                        table.add_column(label, key=key)
            for run_id, row in cells.items():
                table.add_row(*(row[k] for k in keys), key=run_id)
            if selected is not None and selected.run_id in cells:
                table.move_cursor(row=list(cells).index(selected.run_id))
        else:
            for run_id, row in cells.items():
                for key in keys:
                    if row[key] != self.shown[run_id][key]:
                        table.update_cell(run_id, key, row[key], update_width=True)
        self.columns, self.shown, self.rows = keys, cells, rows
        live = sum(1 for r in rows if r.state in LIVE_STATES | SWARM_LIVE_STATES)
        swarms = sum(1 for r in rows if r.hordes)
        counted = f"{len(rows) - swarms} runs" + (
            f" and {swarms} swarm{'s' if swarms != 1 else ''}" if swarms else ""
        )
        self.query_one("#runs-status", Static).update(
            f"{counted} in {shown_path(self.horde_dir)} · {live} live · "
            "enter: open · o: report · n: new run"
        )
        self.show_detail()
        self.refresh_bindings()

    def show_detail(self) -> None:
        row = self.selected_row()
        text = detail_text(row, self.horde_app.config.date_text) if row else ""
        self.query_one("#runs-detail", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_detail()
        self.refresh_bindings()

    def selected_row(self) -> RunRow | None:
        table = self.query_one("#runs", DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def open_run(self, row: RunRow) -> None:
        """A swarm's screen; a live run's screen (the app shows its own hosted run, else
        attaches); an ended run's screen, read-only, when it has a report."""
        if self.index.is_swarm(row):
            self.app.push_screen(SwarmScreen(self.index.swarm_dir(row)))
        elif self.openable(row):
            self.app.post_message(OpenRun(self.index.runs_dir / row.run_id))
        else:
            self.no_report(row)

    def openable(self, row: RunRow) -> bool:
        """A swarm, a live run, or a run that ended with its report written."""
        return self.index.is_swarm(row) or row.state in LIVE_STATES or "REPORT.md" in row.files

    def open_report(self, row: RunRow) -> None:
        if "REPORT.md" in row.files:
            run_dir = self.index.swarm_dir(row) if self.index.is_swarm(row) else None
            self.app.push_screen(ReportScreen(run_dir or self.index.runs_dir / row.run_id))
        else:
            self.no_report(row)

    def no_report(self, row: RunRow) -> None:
        hint = (
            f"horde-tui finalize {row.run_id} writes its report"
            if row.state == "interrupted"
            else "nothing to open yet"
        )
        self.notify(f"{row.run_id} is {row.state} and has no report: {hint}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_report":
            row = self.selected_row()
            return True if row is not None and "REPORT.md" in row.files else None
        return True

    def action_open_report(self) -> None:
        if (row := self.highlighted()) is not None:
            self.open_report(row)

    def highlighted(self) -> RunRow | None:
        """The row under the cursor, painting the list first if a key came before its
        first paint (the table's own enter used to wait for it)."""
        if not self.rows:
            self.index.refresh()
            self.show()
        return self.selected_row()

    def action_new_run(self) -> None:
        open_launch_form(self, self.horde_dir)

    def action_open_run(self) -> None:
        row = self.highlighted()
        if row is not None:
            self.open_run(row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_run()
