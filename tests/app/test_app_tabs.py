"""Pilot tests of the run screen's ledger, Threads and Graph tabs.

The `.horde/` is written through the real `horde` tool (`ledger_scene.fill_run`) as the
fake supervisor's run; each test opens a tab by its digit and waits (`wait_for`) for
the rows, pages and lanes to appear; no test sleeps.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import Horde
from support.app import NOW, RUN_ID, FakeSupervisor, deterministic_app, wait_for
from support.ledger_scene import fake_run_with_ledgers, lifecycle
from textual.pilot import Pilot
from textual.widgets import Markdown, TabbedContent

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.entry import EntryScreen
from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.panes import GraphPane, LedgerPane
from horde_tui.widgets.ledger_table import HEADING, LedgerTable
from horde_tui.widgets.member_table import MemberTable
from horde_tui.widgets.swimlane import Swimlane

SIZE = (120, 36)


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSupervisor:
    """The fake run, with every ledger filled by the scene."""
    return fake_run_with_ledgers(tmp_path, monkeypatch)


def pane(app: HordeApp, tab: str) -> LedgerPane:
    return app.screen.query_one(f"#{tab} LedgerPane", LedgerPane)


def keys(table: LedgerTable) -> list[str]:
    """Row keys in display order (headings as `=group`)."""
    out = []
    for row in table.ordered_rows:
        key = str(row.key.value)
        out.append("=" + key.removeprefix(HEADING) if key.startswith(HEADING) else key)
    return out


async def open_tab(pilot: Pilot[Any], digit: str, tab: str, rows: int) -> LedgerTable:
    """Press the tab's digit; wait until its table holds `rows` rows (headings too)."""
    await pilot.press(digit)
    table = pane(pilot.app, tab).table
    await wait_for(pilot, lambda: table.row_count == rows)
    return table


async def test_every_ledger_tab_shows_its_rows_newest_first(scene: FakeSupervisor) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        expected = {
            ("1", "board"): ["P2", "P1"],
            ("2", "ideas"): ["#3", "#2", "#1"],
            ("3", "findings"): ["F3", "F2", "F1"],
            ("4", "facts"): ["=this run", "T1"],  # carried facts would follow
            ("5", "claims"): ["C1"],
            ("6", "resources"): ["R1"],
        }
        for (digit, tab), ids in expected.items():
            table = await open_tab(pilot, digit, tab, len(ids))
            assert keys(table) == ids, tab
        findings = pane(app, "findings").table
        assert [str(c.label) for c in findings.columns.values()][:4] == [
            "id", "status", "owner", "text"
        ]  # fmt: skip
        assert str(findings.get_cell("F2", "status")) == "limited"
        assert str(findings.get_cell("F3", "status")) == "disputed"
        assert "2 entries" in str(pane(app, "board").query_one(".ledger-status").render())
        assert "1 entry" in str(pane(app, "claims").query_one(".ledger-status").render())


async def test_v_cycles_the_views_with_group_headings(scene: FakeSupervisor) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_tab(pilot, "3", "findings", 3)
        table.focus()
        await pilot.press("v")
        await wait_for(pilot, lambda: keys(table) == ["F1", "F2", "F3"])
        assert pane(app, "findings").view_name == "oldest"
        await pilot.press("v")
        await wait_for(pilot, lambda: keys(table)[0] == "=member-1")
        assert keys(table) == ["=member-1", "F1", "=member-2", "F3", "F2"]
        await pilot.press("v")
        await wait_for(pilot, lambda: pane(app, "findings").view_name == "clusters")
        await wait_for(pilot, lambda: len(keys(table)) == 5 and keys(table)[1] == "F1")
        assert keys(table) == [
            "=F1 · full · sql-injection · 2 findings · 2 members",
            "F1",
            "F2",
            "=F3 · disputed · rate-limit · 1 finding · 1 member",
            "F3",
        ]
        assert table.selected_key == "F3", "the cursor stays on its entry across views"
        await pilot.press("up")
        assert table.selected_key is None, "a heading row"
        assert table.check_action("select_cursor", ()) is None, "nothing to open on a heading"
        await pilot.press("v")
        await wait_for(pilot, lambda: keys(table) == ["F3", "F2", "F1"])


async def test_enter_opens_the_whole_entry_not_the_member(scene: FakeSupervisor) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_tab(pilot, "3", "findings", 3)
        await wait_for(pilot, lambda: table.has_focus)  # the tab's key focuses its table
        await pilot.press("down")  # F2
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, EntryScreen))
        assert not any(isinstance(s, MemberDetailScreen) for s in app.screen_stack)
        page = app.screen.query_one(Markdown).source
        assert "The same injection is reachable via the sort parameter" in page
        assert "unchecked: whether the web layer whitelists sort values" in page
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EntryScreen))
        assert table.has_focus
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.query_one(MemberTable).has_focus)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MemberDetailScreen))


async def test_an_appended_record_repaints_only_its_cells(
    scene: FakeSupervisor, tmp_path: Path
) -> None:
    """With file watching on, the app's watcher wakes the visible tab after the append."""
    config = replace(AppConfig.deterministic(NOW), watch_files=True)
    app = HordeApp(scene, config=config)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_tab(pilot, "2", "ideas", 3)
        before = table.cells_updated
        horde = Horde(tmp_path)
        assert horde("member-3", "claim", run=RUN_ID, id="#3").ok
        await wait_for(pilot, lambda: str(table.get_cell("#3", "status")) == "claimed")
        assert table.cells_updated - before == 2, "status and owner of #3, nothing else"
        before = table.cells_updated
        assert horde("member-3", "idea", run=RUN_ID, text="Audit src/cli.py").ok
        await wait_for(pilot, lambda: table.row_count == 4)
        assert keys(table) == ["#4", "#3", "#2", "#1"], "a new idea on top, by re-sorting"
        assert table.cells_updated - before == 8, "the new row's 8 cells, no other"


async def test_threads_tab_lists_threads_and_shows_the_selected_one(
    scene: FakeSupervisor,
) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_tab(pilot, "8", "threads", 2)
        assert app.query_one(TabbedContent).active == "threads"
        assert keys(table) == ["Q2", "Q1"]
        page = app.screen.query_one("#thread-page Markdown", Markdown)
        await wait_for(pilot, lambda: page.source.startswith("## Q2 question"))
        assert "**accepted** (r1)" in page.source
        table.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: page.source.startswith("## Q1 challenge"))
        assert "Opened by review V3." in page.source and "**blocked by Q1**" in page.source
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, EntryScreen))
        assert "## Q1 challenge" in app.screen.query_one(Markdown).source


async def test_graph_tab_draws_a_lane_per_member_with_phases_and_reviews(
    scene: FakeSupervisor,
) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("9")
        graph = app.screen.query_one(GraphPane)
        lane = graph.query_one(Swimlane)
        await wait_for(pilot, lambda: len(lane.layout_shown.lanes) == 7)
        names = [line.name for line in lane.layout_shown.lanes]
        assert names == ["parent", *(f"member-{n}" for n in range(1, 7))]
        assert not graph.has_class("-empty")
        lines = [lane.render_line(y).text for y in range(7)]
        assert lines[0].startswith("parent") and "[discovery" in lines[0]
        assert "F1" in lines[1] and "V3✗F3" in lines[1]
        assert "V1✓F1" in lines[3] and "V2~F2" in lines[3]
        assert lines[4].strip().endswith("│"), "member-4 did nothing: an empty lane"


async def test_an_empty_run_says_when_each_tab_fills(tmp_path: Path) -> None:
    app = deterministic_app(FakeSupervisor(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        findings = pane(app, "findings")
        await wait_for(pilot, lambda: findings.has_class("-empty"))
        assert "once it has evidence" in str(findings.query_one(".empty-state").render())
        assert findings.check_action("cycle_view", ()) is None, "no rows: no view to cycle"
        await pilot.press("9")
        graph = app.screen.query_one(GraphPane)
        await wait_for(pilot, lambda: len(graph.query_one(Swimlane).layout_shown.lanes) == 6)
        assert graph.has_class("-empty")


async def test_at_80_columns_the_lanes_follow_the_newest_marks_under_fixed_labels(
    scene: FakeSupervisor, tmp_path: Path
) -> None:
    app = deterministic_app(scene)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("9")
        lane = app.screen.query_one(Swimlane)
        await wait_for(pilot, lambda: len(lane.layout_shown.lanes) == 7)
        await wait_for(
            pilot, lambda: lane.max_scroll_x > 0 and lane.scroll_offset.x == lane.max_scroll_x
        )
        assert lane.following, "opened on the newest marks"
        newest = lane.render_line(2).text
        assert newest.startswith("member-2 · member") and "resolve Q2─post" in newest
        await wait_for(pilot, lambda: lane.has_focus)
        await pilot.press("left", "left", "left")
        await wait_for(pilot, lambda: lane.scroll_offset.x == lane.max_scroll_x - 3)
        assert not lane.following
        after = lane.render_line(2).text
        assert after.startswith("member-2 · member"), "labels stay while the marks scroll"
        assert after[26:] == newest[23:-3], "the marks moved three columns right"

        horde, x, widest = Horde(tmp_path), lane.scroll_offset.x, lane.max_scroll_x
        lifecycle(horde, "phase-end", phase="verify")  # a mark past the right edge
        await app.screen.reload_visible_tab()  # what the watcher does on a change
        await wait_for(pilot, lambda: lane.max_scroll_x > widest)
        assert lane.scroll_offset.x == x, "left where the user was"

        await pilot.press("ctrl+pagedown", "ctrl+pagedown")
        await wait_for(pilot, lambda: lane.scroll_offset.x == lane.max_scroll_x)
        assert lane.following, "back at the edge: following again"
        widest = lane.max_scroll_x
        lifecycle(horde, "phase-start", phase="repair")
        await app.screen.reload_visible_tab()
        await wait_for(pilot, lambda: lane.max_scroll_x > widest)
        await wait_for(pilot, lambda: lane.scroll_offset.x == lane.max_scroll_x)
        assert lane.render_line(0).text.rstrip().endswith("verify]─[repair")
