"""`MemberTable`: one row per member of a run, repainted cell by cell.

The table renders `MemberRow`s it is handed and nothing else (no supervisor, no files).
`show(rows)` compares each formatted cell with what is on screen and updates only the
cells that differ, so a repaint after an event or a clock tick touches a handful of
cells, never the whole table. Status colours come from component classes styled with
theme variables, so the table reads the same in 256 colours over SSH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from horde_tui.view.members import FAILED_CAUSES

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("name", "member", 9),
    ("role", "role", 8),
    ("status", "status", 8),
    ("tool", "tool", 0),
    ("elapsed", "time", 5),
    ("turns", "turns", 5),
    ("tokens", "tokens", 6),
    ("cost", "cost", 7),
    ("resets", "resets", 6),
)
"""Column key, header and minimum width, in display order. Cells are padded to these
widths (the tool column to whatever the others leave), so columns do not shift sideways
as values change length ten times a second."""


STATUS_CLASS = {
    "running": "running",
    "paused": "paused",
    "stopped": "paused",
    "pending": "waiting",
    "starting": "waiting",
    "waiting": "waiting",
}


@dataclass(frozen=True)
class MemberRow:
    """What one table row shows, as plain values; the table formats them."""

    name: str
    role: str
    status: str
    tool: str = ""
    summary: str = ""
    elapsed_s: float | None = None
    turns: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0
    """None means the provider did not say what a call cost: shown as `unknown`."""
    resets: int = 0
    exit_cause: str | None = None


def status_class(status: str, exit_cause: str | None) -> str:
    """The state a status is painted as: running, paused, waiting, done or failed."""
    if status == "exited":
        return "failed" if exit_cause in FAILED_CAUSES else "done"
    return STATUS_CLASS.get(status, "waiting")


def format_elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_tokens(tokens: int) -> str:
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "unknown"
    return f"${cost:.3f}" if cost < 10 else f"${cost:.2f}"


def clip(text: str, width: int) -> str:
    """One line of at most `width` characters, with an ellipsis when cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    return flat[: max(0, width - 1)] + "…"


class MemberTable(DataTable[Text]):
    """The run's members, one row each; the cursor row is the selected member."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {
        "member-table--running",
        "member-table--paused",
        "member-table--waiting",
        "member-table--done",
        "member-table--failed",
        "member-table--note",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        # DataTable's own enter binding is hidden; this one says what enter does here.
        Binding("enter", "select_cursor", "Detail", id="member-detail"),
    ]

    DEFAULT_CSS = """
    MemberTable {
        height: auto;
        max-height: 50%;
        & > .member-table--running { color: $success; }
        & > .member-table--paused { color: $warning; }
        & > .member-table--waiting { color: $primary; }
        & > .member-table--done { color: $text-muted; }
        & > .member-table--failed { color: $error; text-style: bold; }
        & > .member-table--note { color: $warning; }
    }
    """

    MIN_TOOL_WIDTH = 12

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        # No cell padding: each cell carries one leading space instead, which halves the
        # gaps and gives the tool column ~9 more characters in an 80-column terminal.
        super().__init__(id=id, classes=classes, cursor_type="row", cell_padding=0)
        self._shown: dict[str, dict[str, tuple[str, str]]] = {}
        self._rows: dict[str, MemberRow] = {}
        self._tool_width = 30
        self.cells_updated = 0
        """Cells rewritten since mount (tests check that a repaint is a diff)."""

    def on_mount(self) -> None:
        for key, label, _width in COLUMNS:
            self.add_column(Text(f" {label}"), key=key)
        self.watch(self.app, "theme", self._on_theme_change, init=False)

    @property
    def selected_member(self) -> str | None:
        """The member under the cursor, if any."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return row_key.value

    def show(self, rows: Sequence[MemberRow]) -> int:
        """Bring the table up to `rows`; return how many cells changed."""
        changed = 0
        for row in rows:
            self._rows[row.name] = row
            cells = self._cells(row)
            shown = self._shown.get(row.name)
            if shown is None:
                self.add_row(*(self._text(*cells[key]) for key, _, _ in COLUMNS), key=row.name)
                self._shown[row.name] = cells
                changed += len(cells)
                # A new row may bring a vertical scrollbar, which narrows the tool column.
                self.call_after_refresh(self._fit)
                continue
            for key, cell in cells.items():
                if shown[key] != cell:
                    # Cells are padded to their column's width: a recount (which
                    # re-measures the whole table) only when that width moved (`_fit`).
                    resized = len(cell[0]) != len(shown[key][0])
                    self.update_cell(row.name, key, self._text(*cell), update_width=resized)
                    shown[key] = cell
                    changed += 1
        self.cells_updated += changed
        return changed

    def _cells(self, row: MemberRow) -> dict[str, tuple[str, str]]:
        """Each column's padded text and component class (empty for the default style)."""
        if row.tool:
            # A member's summary already names its tool ("bash: rg -n x", "read a.py").
            tool = row.summary or row.tool
        elif row.status == "exited" and row.exit_cause:
            tool = f"({row.exit_cause})"
        else:
            tool = ""
        state = status_class(row.status, row.exit_cause)
        cells = {
            "name": (row.name, ""),
            "role": (row.role, ""),
            "status": (row.status, f"member-table--{state}"),
            "tool": (clip(tool, self._tool_width), ""),
            "elapsed": (format_elapsed(row.elapsed_s), ""),
            "turns": (str(row.turns), ""),
            "tokens": (format_tokens(row.tokens), ""),
            "cost": (
                format_cost(row.cost_usd),
                "member-table--note" if row.cost_usd is None else "",
            ),
            "resets": (str(row.resets), "member-table--note" if row.resets else ""),
        }
        widths = {key: width or self._tool_width for key, _, width in COLUMNS}
        return {key: (text.ljust(widths[key]), style) for key, (text, style) in cells.items()}

    def _text(self, plain: str, component: str) -> Text:
        style = self.get_component_rich_style(component, partial=True) if component else ""
        return Text(f" {plain}", style=style, no_wrap=True, overflow="ellipsis")

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        """Give the tool column the width the others leave, then repaint its cells."""
        others = sum(
            column.get_render_width(self)
            for key, column in self.columns.items()
            if key.value != "tool"
        )
        width = max(self.MIN_TOOL_WIDTH, self.scrollable_content_region.width - others - 1)
        if width != self._tool_width:
            self._tool_width = width
            self.show(list(self._rows.values()))

    def _on_theme_change(self) -> None:
        """A theme change restyles the colours baked into cells: repaint them all."""
        self._shown = {name: dict.fromkeys(cells, ("", "")) for name, cells in self._shown.items()}
        self.show(list(self._rows.values()))
