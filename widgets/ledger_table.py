"""`LedgerTable`: ledger rows (`view.rows.LedgerRow`) in a DataTable, repainted by diff.

The table renders the rows it is handed and nothing else (no files). `show(rows, view)`
removes rows that left, adds rows that came, rewrites only the cells whose text differs
(skipping rows whose version did not move), and when the order changed (newest first
puts a new entry on top; another view regroups) re-sorts the rows it has instead of
rebuilding them. Column widths are measured once per repaint (`_fit_columns`), not once
per rewritten cell. Grouped views (`owner`, `clusters`, carried facts) get a heading row
before each group; heading rows are not entries and open nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.binding import Binding, BindingType
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, ColumnKey, RowKey

from horde_tui.view.rows import LedgerRow
from horde_tui.widgets.member_table import clip

HEADING = "\x00group:"
"""Row-key prefix of a group heading (no ledger id starts with a NUL)."""
TEXT_CHARS = 64
"""The text column is cut here: Enter shows the whole entry."""
EXTRA_CHARS = 32
WIDER = {"baseline": 48}
"""Extra columns cut later: a baseline cell says how a finding persisted or resolved."""
STATUS_CLASS = {
    # findings
    "full": "good",
    "limited": "note",
    "disputed": "bad",
    "unreviewed": "quiet",
    "legacy": "note",
    "superseded": "quiet",
    # ideas and claims
    "open": "active",
    "claimed": "note",
    "done": "good",
    "ruled-out": "quiet",
    "confirmed": "good",
    "contested": "bad",
    "retracted": "quiet",
    # threads
    "acked": "active",
    "responded": "active",
    "deferred": "note",
    "resolved": "good",
}
"""Status -> how it is painted; statuses not listed (carried, reused x2) stay plain."""

LEDGER_KEYS = Binding.Group("open/view")
"""The group the ledger and thread tabs' keys are listed under (footer and F1 help)."""

Cells = tuple[tuple[str, str], ...]
"""(text, component class) per column."""


def cell_width(plain: str) -> int:
    """The width Textual measures a cell's text at (`Text.__rich_measure__`: its widest
    line)."""
    return max(map(cell_len, plain.splitlines()), default=0)


def heading_key(group: str) -> str:
    return HEADING + group


class LedgerTable(DataTable[Text]):
    """One ledger's rows; the cursor row is the entry Enter opens."""

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {
        "ledger-table--heading",
        "ledger-table--good",
        "ledger-table--note",
        "ledger-table--bad",
        "ledger-table--quiet",
        "ledger-table--active",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="ledger-open",
            tooltip="the whole entry under the cursor",
            group=LEDGER_KEYS,
        ),
    ]

    DEFAULT_CSS = """
    LedgerTable {
        height: 1fr;
        & > .ledger-table--heading { color: $primary; text-style: bold; }
        & > .ledger-table--good { color: $success; }
        & > .ledger-table--note { color: $text-warning; }
        & > .ledger-table--bad { color: $error; text-style: bold; }
        & > .ledger-table--quiet { color: $text-muted; }
        & > .ledger-table--active { color: $primary; }
    }
    """

    def __init__(
        self, columns: Sequence[str], *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", cell_padding=1)
        self.column_names = tuple(columns)
        self._shown: dict[str, Cells] = {}
        self._stamps: dict[str, tuple[str, int]] = {}
        """Row key -> (view, version) of what is on screen: an unmoved version is skipped."""
        self._order: list[str] = []
        self._widths: list[Counter[int]] = [Counter() for _ in self.column_names]
        """Per column, how many cells on screen have each width (`_fit_columns`)."""
        self.cells_updated = 0
        """Cells written since mount (tests check that a repaint is a diff)."""

    def on_mount(self) -> None:
        for name in self.column_names:
            self.add_column(name, key=name)
        self.watch(self.app, "theme", self._on_theme_change, init=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select_cursor":  # a heading row (or no row) has nothing to open
            return True if self.selected_key else None
        return True

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()  # Open greys out on a heading row

    @property
    def selected_key(self) -> str | None:
        """The entry under the cursor (None on a heading or an empty table)."""
        if not self.row_count:
            return None
        row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        key = row_key.value
        return None if key is None or key.startswith(HEADING) else key

    def show(self, rows: Sequence[LedgerRow], view: str = "") -> int:
        """Bring the table up to `rows` (as `view` orders them); return cells written."""
        selected = self.selected_key
        wanted = self._with_headings(rows)
        changed = 0
        widest: dict[int, tuple[int, str]] = {}  # column -> its widest rewritten cell
        leaving = [k for k in self._shown if k not in wanted]
        self._remove_rows(leaving)
        for key in leaving:
            self._count_widths(self._shown.pop(key), -1)
            self._stamps.pop(key, None)
        if leaving:  # the rows left keep their order: no re-sort for that alone
            self._order = [k for k in self._order if k in wanted]
        for key, (item, stamp) in wanted.items():
            shown = self._shown.get(key)
            if shown is not None and stamp is not None and self._stamps.get(key) == stamp:
                continue  # its version did not move: its cells are on screen
            cells = self._cells(item) if isinstance(item, LedgerRow) else item
            if shown is None:
                self.add_row(*(self._text(*cell) for cell in cells), key=key)
                self._count_widths(cells, 1)
                changed += len(cells)
            else:
                for i, (name, old, new) in enumerate(
                    zip(self.column_names, shown, cells, strict=True)
                ):
                    if old != new:
                        self.update_cell(key, name, self._text(*new))
                        self._rewrite_width(i, old[0], new[0], key, widest)
                        changed += 1
            self._shown[key] = cells
            if stamp is not None:
                self._stamps[key] = stamp
        self._fit_columns(widest)
        order = list(wanted)
        if order != self._order:
            self._reorder(order)
        if selected in wanted:
            self.move_cursor(row=order.index(selected), animate=False)
        self.cells_updated += changed
        return changed

    def _remove_rows(self, keys: list[str]) -> None:
        """Remove the rows of `keys` with one pass over the row index.

        Textual's `remove_row` rebuilds the index of every row for each row it removes:
        a minute back in a replay removes dozens of rows from thousands. This is its body
        for a set of rows, so it reaches into `DataTable`'s internals (textual is pinned;
        `test_widgets_ledger_table` checks the result against the table's own reads).
        """
        if len(keys) < 2:
            for key in keys:
                self.remove_row(key)
            return
        gone = {RowKey(key) for key in keys}
        where = self._row_locations
        removed = sorted(index for key in gone if (index := where.get(key)) is not None)
        kept: TwoWayDict[RowKey, int] = TwoWayDict({})
        for row_key in where:
            index = where.get(row_key)
            if row_key not in gone and index is not None:
                kept[row_key] = index - bisect_left(removed, index)
        self._row_locations = kept
        for row_key in gone:
            for column_key in self._data.pop(row_key, {}):
                self._updated_cells.discard(CellKey(row_key, column_key))
            self.rows.pop(row_key, None)
        self._require_update_dimensions = True
        self.check_idle()
        self.cursor_coordinate = self.cursor_coordinate  # clamped to the rows left
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.refresh(layout=True)

    def _count_widths(self, cells: Cells, sign: int) -> None:
        for widths, (plain, _) in zip(self._widths, cells, strict=True):
            self._count(widths, cell_width(plain), sign)

    def _rewrite_width(
        self, column: int, old: str, new: str, key: str, widest: dict[int, tuple[int, str]]
    ) -> None:
        """Count a rewritten cell's width; keep the widest rewritten cell of its column."""
        widths, width = self._widths[column], cell_width(new)
        self._count(widths, cell_width(old), -1)
        self._count(widths, width, 1)
        if width > widest.get(column, (-1, ""))[0]:
            widest[column] = (width, key)

    @staticmethod
    def _count(widths: Counter[int], width: int, sign: int) -> None:
        widths[width] += sign
        if not widths[width]:
            del widths[width]

    def _fit_columns(self, widest: dict[int, tuple[int, str]]) -> None:
        """Size each column that had cells rewritten as `update_cell(update_width=True)`
        on every one of them would, but measuring at most once.

        Textual measures a rewritten cell, and when it is narrower than the column,
        every cell of the column again: once per cell, a repaint that rewrote hundreds
        of cells measured thousands. Either way the column ends as wide as its widest
        cell (or label). So only the widest rewritten cell goes to Textual's measure,
        and only when the column must change: it is wider than the column (the column
        grows to it), or the column's widest cell went (the column shrinks: Textual
        measures the column, once). Otherwise the column keeps its width, and rows
        added by this repaint widen it as they always do.
        """
        for column, (width, key) in widest.items():
            name = self.column_names[column]
            content = self.columns[ColumnKey(name)].content_width
            widest_cell = max(self._widths[column], default=0)
            if width > content or max(widest_cell, cell_len(name)) < content:
                cell = self.get_cell(key, name)
                self.update_cell(key, name, cell, update_width=True)

    def _with_headings(
        self, rows: Sequence[LedgerRow]
    ) -> dict[str, tuple[LedgerRow | Cells, tuple[str, int] | None]]:
        """Row key -> (the row, or a heading's cells; stamp) in display order, a heading
        before each group. A row's cells are made only if its stamp moved (`show`)."""
        out: dict[str, tuple[LedgerRow | Cells, tuple[str, int] | None]] = {}
        group: str | None = None
        blank = ("", "")
        width = len(self.column_names)
        for row in rows:
            if row.group and row.group != group:
                heading = [blank] * width
                # In the text column: in the id column it would widen that column.
                heading[min(3, width - 1)] = (row.group, "ledger-table--heading")
                out[heading_key(row.group)] = (tuple(heading), None)
            group = row.group
            out[row.key] = (row, (group or "", row.version))
        return out

    def _cells(self, row: LedgerRow) -> Cells:
        status = STATUS_CLASS.get(row.status)
        cells: list[tuple[str, str]] = [
            (row.id, ""),
            (row.status, f"ledger-table--{status}" if status else ""),
            (row.owner, ""),
            (clip(row.text, TEXT_CHARS), ""),
        ]
        names = self.column_names[4:]
        cells += [
            (clip(value, WIDER.get(name, EXTRA_CHARS)), "")
            for name, value in zip(names, row.extra, strict=False)
        ]
        return tuple(cells)

    def _text(self, plain: str, component: str) -> Text:
        style = self.get_component_rich_style(component, partial=True) if component else ""
        return Text(plain, style=style, no_wrap=True, overflow="ellipsis")

    def _reorder(self, order: list[str]) -> None:
        """Put the rows in `order` by sorting the ones on screen; no cell is rebuilt.

        `DataTable.sort` hands the key function a row's cells, not its key; the first
        cell of each row is a distinct object, so its identity finds the row's place.
        """
        first = self.column_names[0]
        place = {id(self.get_cell(key, first)): i for i, key in enumerate(order)}
        self.sort(key=lambda cells: place[id(cells[0])])
        self._order = order

    def _on_theme_change(self) -> None:
        """A theme change restyles the colours baked into cells: rewrite them all."""
        for key, cells in self._shown.items():
            for name, cell in zip(self.column_names, cells, strict=True):
                self.update_cell(key, name, self._text(*cell))
