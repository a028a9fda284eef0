"""The member table alone: a repaint re-renders only the rows (and cells) that changed.

Each test hosts a `MemberTable` in a small app, shows rows, lets it paint, then changes
some rows and reads what the widget re-rendered: `lines_rendered` counts Textual's
`render_line` calls per member, and Textual asks again only for the lines a widget
refreshed, so an unchanged row's count stays put. No test sleeps.
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import replace
from typing import Any

from rich.cells import cell_len
from support.app import wait_for
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot

from horde_tui.widgets.member_table import COLUMNS, MemberRow, MemberTable, format_elapsed

ROWS = [
    MemberRow("member-1", "member", "running", "bash", "bash: rg -n x src/", 61.0, 3, 5200),
    MemberRow("member-2", "member", "running", "read", "read src/a.py", 50.0, 2, 3100),
    MemberRow("member-3", "member", "paused", "bash", "bash: pytest -q", 49.0, 4, 6900),
    MemberRow("member-4", "member", "exited", "", "", 46.0, 7, 12800, exit_cause="completed"),
    MemberRow("member-5", "member", "running", "horde", "horde claim 5", 45.0, 2, 2400, None, 1),
    MemberRow("member-6", "verifier", "waiting", "", "", None, 0, 0),
]


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []
        self.highlighted: list[str] = []

    def compose(self) -> ComposeResult:
        yield MemberTable(id="members")

    def on_member_table_selected(self, event: MemberTable.Selected) -> None:
        self.selected.append(event.member)

    def on_member_table_highlighted(self, event: MemberTable.Highlighted) -> None:
        self.highlighted.append(event.member)


async def painted(pilot: Pilot[Any], rows: list[MemberRow] = ROWS) -> MemberTable:
    """The table showing `rows`, fitted to its width, with every row painted once."""
    table = pilot.app.query_one(MemberTable)
    table.show(rows)
    await wait_for(pilot, lambda: all(table.lines_rendered[row.name] for row in rows))
    await wait_for(pilot, lambda: not table._fit())
    await pilot.pause()
    return table


def drawn(table: MemberTable) -> list[str]:
    """The table's lines as text (rendering them, which `lines_rendered` counts)."""
    return [table.render_line(y).text for y in range(table.row_count + 1)]


async def repainted(pilot: Pilot[Any], table: MemberTable, before: Counter[str]) -> Counter[str]:
    """Let the app repaint; return how many lines each member had rendered since."""
    await pilot.pause()
    await pilot.pause()
    return table.lines_rendered - before


async def test_a_status_change_re_renders_that_row_only() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)
        before = table.lines_rendered.copy()
        changed = table.show([*ROWS[:2], replace(ROWS[2], status="running"), *ROWS[3:]])
        assert changed == 1
        assert await repainted(pilot, table, before) == Counter({"member-3": 1})
        assert " running " in drawn(table)[3]

        # The same rows again (a batch of events that moved nothing shown): no repaint.
        before = table.lines_rendered.copy()
        assert table.show([*ROWS[:2], replace(ROWS[2], status="running"), *ROWS[3:]]) == 0
        assert await repainted(pilot, table, before) == Counter()


async def test_the_clock_tick_repaints_only_the_elapsed_cells_that_moved() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)
        x = drawn(table)[0].index(" time ")
        before = table.lines_rendered.copy()
        # A tick on: member-1 and member-5 cross a second, member-2 does not; member-3
        # is paused, member-4's time is frozen at its exit, member-6 has not started.
        ticked = [
            replace(ROWS[0], elapsed_s=62.0),
            replace(ROWS[1], elapsed_s=50.4),
            *ROWS[2:4],
            replace(ROWS[4], elapsed_s=46.0),
            ROWS[5],
        ]
        assert table.show(ticked) == 2
        # What Textual will repaint of the table: the time cell of those two lines
        # (Textual's own record of the widget's refreshed regions; textual is pinned).
        assert set(table._repaint_regions) == {Region(x, 1, 6, 1), Region(x, 5, 6, 1)}
        assert await repainted(pilot, table, before) == Counter({"member-1": 1, "member-5": 1})
        assert table.get_cell("member-1", "elapsed") == "1:02"
        assert table.get_cell("member-5", "elapsed") == "0:46"


async def test_moving_the_cursor_repaints_the_two_rows_it_left_and_entered() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)
        assert app.highlighted == ["member-1"]
        before = table.lines_rendered.copy()
        await pilot.press("down")
        assert table.selected_member == "member-2"
        assert await repainted(pilot, table, before) == Counter({"member-1": 1, "member-2": 1})
        assert app.highlighted == ["member-1", "member-2"]

        await pilot.press("enter")
        await wait_for(pilot, lambda: app.selected == ["member-2"])
        await pilot.press("end")
        assert table.selected_member == "member-6"


async def test_a_click_moves_the_cursor_and_a_click_on_it_opens_the_member() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)
        await pilot.click(MemberTable, offset=(3, 4))  # the 4th row under the header
        assert table.selected_member == "member-4" and app.selected == []
        await pilot.click(MemberTable, offset=(3, 4))
        await wait_for(pilot, lambda: app.selected == ["member-4"])
        await pilot.click(MemberTable, offset=(3, 0))  # the header: nothing
        assert table.selected_member == "member-4" and app.selected == ["member-4"]


async def test_a_value_wider_than_its_column_widens_it_and_keeps_rows_aligned() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)
        before = table.lines_rendered.copy()
        table.show([replace(ROWS[0], elapsed_s=3725.0), *ROWS[1:]])  # 1:02:05
        rendered = await repainted(pilot, table, before)
        assert set(rendered) == {row.name for row in ROWS}, "every row moves right"
        lines = drawn(table)
        column = lines[0].index(" time") + 1
        assert lines[1][column:].startswith("1:02:05 ")
        assert lines[2][column:].startswith("0:50    ")
        assert all(len(line) == len(lines[0]) == 100 for line in lines), "fits the width"


async def test_at_80_columns_the_tool_column_takes_what_the_others_leave() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 20)) as pilot:
        table = await painted(pilot)
        lines = drawn(table)
        assert all(len(line) == 80 for line in lines)
        assert lines[1].startswith(" member-1  member   running  bash: rg -n x sr… 1:01")
        # The time since the last ledger write is left out: the activity needs the room.
        assert lines[0].split() == [label for key, label, _ in COLUMNS if key != "ledger"]


async def test_the_ledger_column_shows_the_time_since_a_running_members_last_write() -> None:
    """Issue 28: the stall rule resets a member after the stall time without a ledger
    write, so its row says how long it has been (`-` before the first, or once it ended)."""
    rows = [replace(ROWS[0], ledger_s=245.0), replace(ROWS[1], ledger_s=None), *ROWS[2:]]
    app = TableApp()
    async with app.run_test(size=(140, 20)) as pilot:
        table = await painted(pilot, rows)
        lines = drawn(table)
        assert lines[0].split() == [label for _, label, _ in COLUMNS]
        assert table.get_cell("member-1", "ledger") == "4m05s"
        assert table.get_cell("member-2", "ledger") == "-"
        column = lines[0].index(" ledger") + 1
        assert lines[1][column:].startswith("4m05s ") and lines[2][column:].startswith("-     ")
        assert all(len(line) == 140 for line in lines)


async def test_a_theme_change_restyles_every_row() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot)

        def status_colours() -> tuple[object, object]:
            """Member-2's status cell ("running", not under the cursor): its colours."""
            cell = next(s for s in table.render_line(2) if s.text.strip() == "running")
            assert cell.style is not None
            return cell.style.color, cell.style.bgcolor

        dark = status_colours()
        app.theme = "nord"  # another $success, another $surface
        await wait_for(pilot, lambda: all(map(operator.ne, status_colours(), dark)))


async def test_a_wide_character_summary_keeps_later_columns_aligned() -> None:
    """Issue 12: widths were counted in code points, so a CJK or emoji summary from a
    model took twice its count in cells and pushed the time, turns and cost columns of
    its row to the right of everyone else's."""
    rows = [
        replace(ROWS[0], summary="bash: grep -rn 错误处理 src/ 🚀🚀"),
        replace(ROWS[1], summary="read 文档/设计说明书/第一章/概述/背景与目标/范围.md"),
        *ROWS[2:],
    ]
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = await painted(pilot, rows)
        lines = drawn(table)
        assert all(cell_len(line) == 100 for line in lines), [cell_len(x) for x in lines]
        column = cell_len(lines[0][: lines[0].index(" time") + 1])
        for line, row in zip(lines[1:], rows, strict=True):
            clock = format_elapsed(row.elapsed_s)
            assert cell_len(line[: line.index(f" {clock} ") + 1]) == column, line
        assert "错误处理" in lines[1] and lines[2].split()[4].startswith("文档/")
        assert "…" in lines[2], "the long summary is cut, by cells"


async def test_the_activity_column_says_the_state_in_fewer_words_when_narrow() -> None:
    """A running member's activity replaces its tool; where the full words do not fit
    the column (80 columns leave it 17 cells), the short ones do; held back or looping
    is painted as a warning."""
    row = MemberRow(
        "member-1",
        "member",
        "running",
        "bash",
        "bash: pytest -q",
        61.0,
        activity="rate-limited 12s (429, retry in 3s)",
        activity_short="limited 12s (429…",
        activity_tone="note",
    )
    for width, shown in ((140, "rate-limited 12s (429, retry in 3s)"), (80, "limited 12s (429…")):
        app = TableApp()
        async with app.run_test(size=(width, 10)) as pilot:
            table = await painted(pilot, [row])
            assert table.get_cell("member-1", "tool") == shown
            assert table._shown["member-1"]["tool"][1] == "member-table--note"
