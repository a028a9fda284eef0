"""The runs list: every run under `.horde/runs`, newest first, with its state.

What bare `horde-tui` (and `horde-tui app`) opens when the app hosts no run and there
is at least one run on disk. Enter opens a finished run's report, or attaches to a live
run hosted by another process. The list polls `RunsIndex` once a second, which reads
only what each event log gained, so a long history stays cheap.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header, Static

from horde_tui.screens.base import HordeScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.view.run import LIVE_STATES, RunRow, RunsIndex

if TYPE_CHECKING:
    pass

COLUMNS = (
    ("run", "run"),
    ("state", "state"),
    ("started", "started"),
    ("members", "members"),
    ("model", "model"),
    ("outcome", "outcome"),
    ("prompt", "prompt"),
)
REFRESH_S = 1.0
"""The list re-reads the index at most this often."""


def started_text(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def row_cells(row: RunRow) -> tuple[str, ...]:
    return (
        row.run_id,
        row.state,
        started_text(row.started),
        str(row.members or "-"),
        row.model or "-",
        row.outcome or "-",
        row.prompt,
    )


class RunsScreen(HordeScreen):
    """Every run in a `.horde/`; enter opens its report or attaches to it."""

    AUTO_FOCUS = "#runs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_run", "Open", id="runs-open", show=True),
    ]

    def __init__(self, horde_dir: Path, index: RunsIndex | None = None) -> None:
        super().__init__(id="runs-screen")
        self.horde_dir = horde_dir
        self.index = index or RunsIndex(horde_dir)
        self.rows: list[RunRow] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="runs-status", markup=False)
        table: DataTable[str] = DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        yield table
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.index.refresh()
        self.show()
        self.set_interval(REFRESH_S, self.poll)

    def poll(self) -> None:
        if self.index.refresh():
            self.show()

    def show(self) -> None:
        """Repaint: update changed cells in place, rebuild only when the runs differ."""
        table = self.query_one("#runs", DataTable)
        rows = self.index.rows()
        if [r.run_id for r in rows] != [r.run_id for r in self.rows]:
            selected = self.selected_row()
            table.clear()
            for row in rows:
                table.add_row(*row_cells(row), key=row.run_id)
            ids = [r.run_id for r in rows]
            if selected is not None and selected.run_id in ids:
                table.move_cursor(row=ids.index(selected.run_id))
        else:
            for old, new in zip(self.rows, rows, strict=True):
                if old == new:
                    continue
                for (key, _), a, b in zip(COLUMNS, row_cells(old), row_cells(new), strict=True):
                    if a != b:
                        table.update_cell(new.run_id, key, b)
        self.rows = rows
        live = sum(1 for r in rows if r.state in LIVE_STATES)
        self.query_one("#runs-status", Static).update(
            f"{len(rows)} runs in {self.horde_dir} · {live} live · "
            "enter: report of a finished run, attach to a live one"
        )
        self.refresh_bindings()

    def selected_row(self) -> RunRow | None:
        table = self.query_one("#runs", DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def open_run(self, row: RunRow) -> None:
        run_dir = self.index.runs_dir / row.run_id
        if row.state in LIVE_STATES:
            self.horde_app.attach_run(run_dir)
        elif "REPORT.md" in row.files:
            self.app.push_screen(ReportScreen(run_dir))
        else:
            hint = (
                f"horde-tui finalize {row.run_id} writes its report"
                if row.state == "interrupted"
                else "nothing to open yet"
            )
            self.notify(f"{row.run_id} is {row.state} and has no report: {hint}")

    def action_open_run(self) -> None:
        row = self.selected_row()
        if row is not None:
            self.open_run(row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_run()
