"""`LedgerTable.show`: a repaint measures the column widths once, not once per changed cell.

Textual's `update_cell(update_width=True)` re-measures the whole column whenever the
new cell is narrower than the column, so a repaint that changed many cells (a replay
jump on the Findings tab) measured the column once per cell. These tests count the
measurements Textual makes (its own `measure`, called through) and check that the
columns still come out as wide as before: grown to a longer new cell, shrunk when the
widest cell got shorter, unchanged otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rich.cells import cell_len
from textual import _two_way_dict
from textual.app import App, ComposeResult
from textual.widgets import _data_table

from horde_tui.view.rows import LedgerRow
from horde_tui.widgets import ledger_table
from horde_tui.widgets.ledger_table import LedgerTable

COLUMNS = ("id", "status", "owner", "text", "scope")
ROWS = 200


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LedgerTable(COLUMNS)


def finding(n: int, status: str = "unreviewed", owner: str = "m1", version: int = 1) -> LedgerRow:
    return LedgerRow(f"F{n}", f"F{n}", status, owner, f"finding {n}", ("src",), version=version)


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Each width Textual's DataTable measures (the call goes through)."""
    widths: list[int] = []
    real = _data_table.measure

    def counting(*args: Any, **kwargs: Any) -> int:
        width = real(*args, **kwargs)
        widths.append(width)
        return width

    monkeypatch.setattr(_data_table, "measure", counting)
    yield widths


async def test_a_repaint_of_many_changed_cells_measures_each_column_once(
    measured: list[int],
) -> None:
    """50 statuses narrower than the column change at once: not 50 column re-measures."""
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(LedgerTable)
        table.show([finding(n) for n in range(ROWS)])
        await pilot.pause()
        measured.clear()
        rows = [finding(n, "full", version=2) if n < 50 else finding(n) for n in range(ROWS)]
        assert table.show(rows) == 50
        await pilot.pause()
        assert len(measured) <= 2, f"{len(measured)} measurements for one repaint"
        assert table.columns["status"].content_width == cell_len("unreviewed")


async def test_a_column_widens_to_a_longer_new_cell(measured: list[int]) -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(LedgerTable)
        table.show([finding(n) for n in range(ROWS)])
        await pilot.pause()
        assert table.columns["owner"].content_width == cell_len("owner")
        longer = "a-member-with-a-long-name"
        measured.clear()
        table.show([finding(0, owner=longer, version=2), *(finding(n) for n in range(1, ROWS))])
        await pilot.pause()
        assert table.columns["owner"].content_width == cell_len(longer)
        assert len(measured) <= 2, "the new cell and the column's label, not the column"


async def test_a_column_narrows_when_its_widest_cell_gets_shorter() -> None:
    """As Textual's `update_width` does: the column fits its widest cell left."""
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(LedgerTable)
        rows = [finding(n) for n in range(ROWS)]
        table.show(
            [*rows[:-2], finding(ROWS - 2, owner="m-twelve"), finding(ROWS - 1, owner="m-thirteen")]
        )
        await pilot.pause()
        assert table.columns["owner"].content_width == cell_len("m-thirteen")
        table.show([*rows[:-2], finding(ROWS - 2, owner="m-twelve"), finding(ROWS - 1, version=2)])
        await pilot.pause()
        assert table.columns["owner"].content_width == cell_len("m-twelve")
        table.show([*rows[:-2], finding(ROWS - 2, version=2), finding(ROWS - 1, version=2)])
        await pilot.pause()
        assert table.columns["owner"].content_width == cell_len("owner"), "the label's width"


async def test_rows_that_leave_together_are_removed_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replay's minute back removes dozens of rows: Textual's `remove_row` rebuilds
    the row index (every row) for each, so the table walks it once for all of them;
    what is left is what `remove_row` one by one leaves."""
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(LedgerTable)
        rows = [finding(n) for n in range(ROWS)]
        table.show(rows)
        table.move_cursor(row=ROWS - 1)
        await pilot.pause()
        written: list[object] = []
        real = _two_way_dict.TwoWayDict.__setitem__

        def counting(self: Any, key: Any, value: Any) -> None:
            written.append(key)
            real(self, key, value)

        monkeypatch.setattr(_two_way_dict.TwoWayDict, "__setitem__", counting)
        leaving = set(range(0, ROWS, 4)) | set(range(ROWS - 20, ROWS))
        kept = [r for n, r in enumerate(rows) if n not in leaving]
        table.show(kept)
        monkeypatch.undo()
        await pilot.pause()
        assert len(written) <= ROWS, f"{len(written)} index writes to remove {len(leaving)} rows"
        assert [row.key.value for row in table.ordered_rows] == [r.key for r in kept]
        assert [table.get_row_at(i)[0].plain for i in range(len(kept))] == [r.id for r in kept]
        assert table.cursor_row == len(kept) - 1, "the cursor stays on the table"
        assert table.row_count == len(kept)
        table.show(rows)  # and they can come back
        await pilot.pause()
        assert [row.key.value for row in table.ordered_rows] == [r.key for r in rows]


async def test_a_repaint_builds_the_cells_of_the_rows_that_moved_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows whose version did not move are skipped before their cells are made (a
    Findings tab has thousands; a replay step moves one)."""
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(LedgerTable)
        rows = [finding(n) for n in range(ROWS)]
        table.show(rows)
        await pilot.pause()
        clipped: list[str] = []
        real = ledger_table.clip

        def counting(text: str, width: int) -> str:
            clipped.append(text)
            return real(text, width)

        monkeypatch.setattr(ledger_table, "clip", counting)
        assert table.show([finding(0, "full", version=2), *rows[1:]]) == 1
        assert len(clipped) == 2, f"{len(clipped)} cells clipped for one row that moved"
