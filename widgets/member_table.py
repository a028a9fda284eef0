"""`MemberTable`: one row per member of a run, repainted cell by cell.

The table renders `MemberRow`s it is handed and nothing else (no supervisor, no files);
the row model and its formatters are `store.display`'s, which the pages and REPORT.md share.
It draws with the Line API (`render_line`) and keeps each row's rendered `Strip`.
`show(rows)` formats each row's cells and compares them with what is on screen; for a
row that differs it drops that row's strip and refreshes only the span of its line that
holds the changed cells, so Textual re-renders that one line and sends the terminal
only those cells. A status change or the elapsed clock's tick costs a line per changed
member, never the whole table (Textual's `DataTable`, which this replaced, re-renders
every row on any cell update: on a busy run that cost more than the rest of a wake).
Status colours come from component classes styled with theme variables, so the table
reads the same in 256 colours over SSH.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from horde_tui.store.activity import duration
from horde_tui.store.causes import status_class
from horde_tui.store.display import MemberRow, format_elapsed, format_tokens
from horde_tui.view.cells import cell_len, clip, pad

COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("name", "member", 9),
    ("role", "role", 8),
    ("status", "status", 8),
    ("tool", "activity", 0),
    ("elapsed", "time", 5),
    ("ledger", "ledger", 6),
    ("turns", "turns", 5),
    ("tokens", "tokens", 6),
    ("cost", "cost", 7),
    ("resets", "resets", 6),
)
"""Column key, header and minimum width, in display order. Cells are padded to these
widths (the tool column to whatever the others leave), so columns do not shift sideways
as values change length ten times a second; a value wider than its column (an hour of
elapsed time) widens it for good."""

MIN_TOOL_WIDTH = 12
ACTIVITY_ROOM = 52
"""The tool column's cells below which the `ledger` column is left out (up to about 125
columns): there the activity, a command line with it, says more than the time since the
last ledger write (the member detail's next step still says when a reset comes)."""

TONES = {"note": "note", "quiet": "last"}
"""An activity's tone -> the component class its cell is painted with."""

MOVE = Binding.Group("member table")
"""The cursor keys, one section of the F1 help."""

Cell = tuple[str, str]
"""A cell as drawn: its text (unpadded) and its component class ("" for the row's)."""


class MemberTable(ScrollView, can_focus=True):
    """The run's members, one row each under a fixed header; the cursor row is the
    selected member."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "member-table--header",
        "member-table--cursor",
        "member-table--running",
        "member-table--paused",
        "member-table--waiting",
        "member-table--done",
        "member-table--capped",
        "member-table--failed",
        "member-table--note",
        "member-table--last",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Detail", id="member-detail"),
        *(
            Binding(key, action, description, show=False, id=f"member-table-{key}", group=MOVE)
            for key, action, description in (
                ("up", "cursor(-1)", "Previous member"),
                ("down", "cursor(1)", "Next member"),
                ("pageup", "page(-1)", "A page of members up"),
                ("pagedown", "page(1)", "A page of members down"),
                ("home", "first", "First member"),
                ("end", "last", "Last member"),
            )
        ),
    ]

    DEFAULT_CSS = """
    MemberTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 50%;
        &:focus {
            background-tint: $foreground 5%;
            & > .member-table--header { background-tint: $foreground 5%; }
            & > .member-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        & > .member-table--header { background: $panel; color: $foreground; text-style: bold; }
        & > .member-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .member-table--running { color: $success; }
        /* $text-warning, not $warning: 16 colours turn $warning into red. */
        & > .member-table--paused { color: $text-warning; }
        & > .member-table--waiting { color: $primary; }
        & > .member-table--done { color: $text-muted; }
        & > .member-table--capped { color: $text-warning; }
        & > .member-table--failed { color: $error; text-style: bold; }
        & > .member-table--note { color: $text-warning; }
        & > .member-table--last { color: $text-muted; }
    }
    """

    class MemberMessage(Message):
        """Something happened to the row of `member`."""

        def __init__(self, table: MemberTable, member: str) -> None:
            super().__init__()
            self.table = table
            self.member = member

        @property
        def control(self) -> MemberTable:
            return self.table

    class Highlighted(MemberMessage):
        """The cursor came to rest on another member (or on the first one to arrive)."""

    class Selected(MemberMessage):
        """Enter, or a click on the cursor row: the member is to be opened."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._order: list[str] = []
        """Member names in row order (the order they first arrived)."""
        self._index: dict[str, int] = {}
        self._rows: dict[str, MemberRow] = {}
        self._shown: dict[str, dict[str, Cell]] = {}
        """Each row's cells as drawn, keyed by column: what `show` diffs against."""
        self._widths = {key: width for key, _, width in COLUMNS}
        self._widths["tool"] = 30  # until the first fit to the laid-out width (`_fit`)
        self._columns = COLUMNS
        """The columns drawn: all of them, or without `ledger` when narrow (`_fit`)."""
        self._strips: dict[tuple[str, bool], Strip] = {}
        """Rendered rows by (member, under the cursor), at full width, unscrolled."""
        self._header: Strip | None = None
        self.cursor_row = 0
        self._highlighted: str | None = None
        self.cells_updated = 0
        """Cells that differed since mount (tests check that a repaint is a diff)."""
        self.lines_rendered: Counter[str] = Counter()
        """`render_line` calls per member since mount: Textual asks again only for the
        lines refreshed, so this shows which rows a repaint touched (tests read it)."""

    # -- reading ---------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def selected_member(self) -> str | None:
        """The member under the cursor, if any."""
        return self._order[self.cursor_row] if self._order else None

    def get_row_index(self, member: str) -> int:
        return self._index[member]

    def get_cell(self, member: str, column: str) -> str:
        """A cell's text as shown (unpadded): tests and anything quoting the table."""
        return self._shown[member][column][0]

    # -- content ---------------------------------------------------------------------------

    def show(self, rows: Sequence[MemberRow]) -> int:
        """Bring the table up to `rows`; return how many cells changed."""
        changed = 0
        grown = False
        for row in rows:
            self._rows[row.name] = row
            cells = self._cells(row)
            shown = self._shown.get(row.name)
            if shown is None:
                self._index[row.name] = len(self._order)
                self._order.append(row.name)
                self._shown[row.name] = cells
                self._widen(cells)
                changed += len(cells)
                grown = True
                continue
            keys = [key for key, cell in cells.items() if shown[key] != cell]
            if not keys:
                continue
            changed += len(keys)
            self._shown[row.name] = cells
            if self._widen(cells):
                grown = True
            elif not grown:
                self._refresh_cells(row.name, keys)
        self.cells_updated += changed
        if grown:
            self._relayout()
            # A new row may bring a vertical scrollbar, which narrows the tool column.
            self.call_after_refresh(self._fit)
            self._highlight()
        return changed

    def _cells(self, row: MemberRow) -> dict[str, Cell]:
        """Each column's text and component class (empty for the row's own style)."""
        tool_class = ""
        if row.activity and row.status == "running":
            fits = cell_len(row.activity) <= self._widths["tool"]
            tool = row.activity if fits or not row.activity_short else row.activity_short
            tool_class = f"member-table--{TONES[row.activity_tone]}" if row.activity_tone else ""
        elif row.tool:
            # A member's summary already names its tool ("bash: rg -n x", "read a.py").
            tool = row.summary or row.tool
        elif row.status == "exited" and row.exit_cause:
            tool = f"({row.exit_cause})"
        else:
            # Between tools (a model call): the last tool, dimmed, so the column says
            # what the member is doing rather than flicker empty.
            tool, tool_class = row.summary, "member-table--last" if row.summary else ""
        state = status_class(row.status, row.exit_cause)
        cells = {
            "name": (row.name, ""),
            "role": (row.role, ""),
            "status": (row.status, f"member-table--{state}"),
            "tool": (clip(tool, self._widths["tool"]), tool_class),
            "elapsed": (format_elapsed(row.elapsed_s), ""),
            "ledger": ("-" if row.ledger_s is None else duration(row.ledger_s), ""),
            "turns": (str(row.turns), ""),
            "tokens": (format_tokens(row.tokens), ""),
            "cost": (row.cost, "member-table--note" if row.cost_usd is None and row.called else ""),
            "resets": (str(row.resets), "member-table--note" if row.resets else ""),
        }
        return {key: cells[key] for key, _, _ in self._columns}  # a column left out: none

    def _widen(self, cells: dict[str, Cell]) -> bool:
        """Widen the columns (other than the tool's) whose cell is wider than they are;
        return whether any was."""
        widened = False
        for key, (text, _) in cells.items():
            if key != "tool" and cell_len(text) > self._widths[key]:
                self._widths[key] = cell_len(text)
                widened = True
        return widened

    def _refresh_cells(self, member: str, keys: list[str]) -> None:
        """Forget the member's rendered row and repaint the span of its line that holds
        the cells `keys`, if the line is in view."""
        self._strips.pop((member, False), None)
        self._strips.pop((member, True), None)
        y = self._index[member] + 1 - round(self.scroll_y)
        spans = []
        x = 0
        for key, _, _ in self._columns:
            width = self._widths[key] + 1  # each cell leads with a space
            if key in keys:
                spans.append((x, x + width))
            x += width
        start, end = spans[0][0], spans[-1][1]
        view = self.scrollable_content_region.size.region
        span = Region(start - round(self.scroll_x), y, end - start, 1).intersection(view)
        if y >= 1 and span:
            self.refresh(span)

    def _refresh_row(self, index: int) -> None:
        if 0 <= index < len(self._order):
            self._refresh_cells(self._order[index], [key for key, _, _ in self._columns])

    def _relayout(self) -> None:
        """Column widths or the row count moved: every row is drawn afresh."""
        self._strips.clear()
        self._header = None
        width = self._row_width()
        self.virtual_size = Size(width, len(self._order) + 1)
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._fit()
        self._scroll_to_cursor()

    def _fit(self) -> bool:
        """Give the tool column the width the others leave (leaving the `ledger` column
        out when that is under `ACTIVITY_ROOM`), then re-clip its cells; return whether
        the layout moved."""
        room = self.scrollable_content_region.width - 1
        columns = COLUMNS
        if room - self._others(columns) < ACTIVITY_ROOM:
            columns = tuple(column for column in COLUMNS if column[0] != "ledger")
        width = max(MIN_TOOL_WIDTH, room - self._others(columns))
        if width == self._widths["tool"] and columns == self._columns:
            return False
        self._widths["tool"], self._columns = width, columns
        self._shown = {name: self._cells(row) for name, row in self._rows.items()}
        self._relayout()
        return True

    def _others(self, columns: Sequence[tuple[str, str, int]]) -> int:
        """Cells the columns other than the tool's take, each with its leading space."""
        return sum(self._widths[key] + 1 for key, _, _ in columns if key != "tool")

    # -- the cursor ------------------------------------------------------------------------

    def move_cursor(self, *, row: int) -> None:
        """Put the cursor on row `row` (clamped to the rows there are) and show it."""
        if not self._order:
            return
        row = max(0, min(row, len(self._order) - 1))
        if row != self.cursor_row:
            old, self.cursor_row = self.cursor_row, row
            self._refresh_row(old)
            self._refresh_row(row)
        self._scroll_to_cursor()
        self._highlight()

    def _highlight(self) -> None:
        member = self.selected_member
        if member is not None and member != self._highlighted:
            self._highlighted = member
            self.post_message(self.Highlighted(self, member))

    def _scroll_to_cursor(self) -> None:
        """Scroll the fewest rows that bring the cursor row under the header."""
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(row=self.cursor_row + step)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - 1)
        self.move_cursor(row=self.cursor_row + direction * page)

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self._order) - 1)

    def action_select_cursor(self) -> None:
        if (member := self.selected_member) is not None:
            self.post_message(self.Selected(self, member))

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; a click on the cursor row opens it."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = round(self.scroll_y) + offset.y - 1
        if row >= len(self._order):
            return
        if row == self.cursor_row:
            self.action_select_cursor()
        else:
            self.move_cursor(row=row)

    # -- rendering ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            if self._header is None:
                self._header = self._render_header(base)
            strip = self._header
        else:
            index = scroll_y + y - 1
            if index >= len(self._order):
                return Strip.blank(width, base)
            member = self._order[index]
            self.lines_rendered[member] += 1
            key = (member, index == self.cursor_row)
            strip = self._strips.get(key)
            if strip is None:
                strip = self._strips[key] = self._render_row(member, key[1], base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _render_header(self, base: Style) -> Strip:
        style = base + self.get_component_rich_style("member-table--header")
        text = "".join(f" {pad(label, self._widths[key])}" for key, label, _ in self._columns)
        return Strip([Segment(text, style)], self._row_width())

    def _render_row(self, member: str, cursor: bool, base: Style) -> Strip:
        """One row as segments built directly (a row is fixed columns on one line);
        under the cursor the cursor's style paints the whole row, as a DataTable's
        row cursor does."""
        cells = self._shown[member]
        if cursor:
            style = base + self.get_component_rich_style("member-table--cursor")
            text = "".join(
                f" {pad(cells[key][0], self._widths[key])}" for key, _, _ in self._columns
            )
            return Strip([Segment(text, style)], self._row_width())
        segments = []
        for key, _, _ in self._columns:
            text, component = cells[key]
            style = base
            if component:
                style += self.get_component_rich_style(component, partial=True)
            segments.append(Segment(f" {pad(text, self._widths[key])}", style))
        return Strip(segments, self._row_width())

    def _row_width(self) -> int:
        """Cells of a drawn row: every column's width and the space before it. Cells are
        padded and cut in cells (`view.cells`), so a row of wide characters is no wider."""
        return sum(self._widths[key] + 1 for key, _, _ in self._columns)

    def notify_style_update(self) -> None:
        """Focus, blur and a theme change restyle the rows: render them afresh."""
        super().notify_style_update()
        self._strips.clear()
        self._header = None
