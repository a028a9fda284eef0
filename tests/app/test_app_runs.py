"""The runs list: bare `horde-tui` shows every run with its state; enter opens a run's
screen (read-only once it ended), `o` its report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.app import NOW, wait_for
from support.processes import dead_pid
from support.rundir import RunDir
from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable, Markdown
from textual.widgets._footer import FooterKey

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.home import HomeScreen
from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.screens.runs import RunsScreen
from horde_tui.view.source import AttachedSource

SIZE = (140, 30)
FINISHED = "20260102-120000-aaaa"
INTERRUPTED = "20260102-120100-bbbb"
MANUAL = "20260102-120200-cccc"
ACTIVE = "20260102-120300-dddd"


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    """A `.horde/` with a finished, an interrupted, a manual and an active run."""
    horde = tmp_path / ".horde"
    done = RunDir(horde, FINISHED)
    done.event(0, "run-start", members=3, model="openai/stub")
    done.event(9, "run-end", outcome="solved", diagnosis="F1 verified")
    (done.path / "REPORT.md").write_text("# Report\n\nThe finished run's report.\n")
    broken = RunDir(horde, INTERRUPTED, members=2)
    broken.event(10, "run-start", members=2, model="openai/stub")
    broken.live(dead_pid())
    manual = horde / "runs" / MANUAL
    manual.mkdir(parents=True)
    (manual / "TASK.md").write_text("# Task\n\nBy hand.\n")
    live = RunDir(horde, ACTIVE)
    live.event(30, "run-start", members=3, model="openai/stub")
    live.event(31, "member-spawn", "member-1", attempt=1, pid=os.getpid())
    live.live(os.getpid())
    return horde


def cells(app: HordeApp) -> dict[str, list[str]]:
    table = app.screen.query_one("#runs", DataTable)
    out = {}
    for row_key in table.rows:
        row = [str(c) for c in table.get_row(row_key)]
        out[row[0]] = row
    return out


def app_for(horde: Path) -> HordeApp:
    return HordeApp(horde_dir=horde, config=AppConfig.deterministic(NOW))


async def test_runs_list_shows_every_run_with_its_state(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunsScreen)
        rows = cells(app)
        assert set(rows) == {FINISHED, INTERRUPTED, MANUAL, ACTIVE}
        assert rows[FINISHED][1] == "finished" and rows[FINISHED][5] == "solved"
        assert rows[FINISHED][3] == "3" and rows[FINISHED][4] == "openai/stub"
        assert rows[INTERRUPTED][1] == "interrupted" and rows[INTERRUPTED][3] == "2"
        assert rows[MANUAL][1] == "manual"
        assert rows[ACTIVE][1] == "active"
        assert rows[FINISHED][6] == "-R---"  # files: its REPORT.md
        assert rows[FINISHED][7] == "Find the SQL injections in app/"
        await pilot.press("q")
    assert app.return_value == 0


async def test_o_on_a_finished_run_opens_its_report(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index(FINISHED))
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        view = app.screen.query_one(Markdown)
        await wait_for(pilot, lambda: "The finished run's report." in view.source)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_enter_on_an_active_run_attaches_and_quit_leaves_it(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index(ACTIVE))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert (
            isinstance(screen, RunScreen)
            and isinstance(screen.source, AttachedSource)
            and screen.live
        )
        await wait_for(pilot, lambda: screen.table.row_count == 3)
        await pilot.press("escape")  # table focused: back to the list
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("q")
    assert app.return_value == 0
    assert (horde / "runs" / ACTIVE / ".live").is_file(), "quitting leaves the run alone"


async def test_enter_on_an_interrupted_run_says_how_to_finalize(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index(INTERRUPTED))
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app._notifications))
        assert isinstance(app.screen, RunsScreen)
        texts = [n.message for n in app._notifications]
        assert any(f"horde-tui finalize {INTERRUPTED}" in t for t in texts), texts


async def test_no_runs_shows_the_empty_state(tmp_path: Path) -> None:
    app = app_for(tmp_path / ".horde")
    async with app.run_test(size=SIZE):
        assert isinstance(app.screen, HomeScreen)


async def test_the_cursor_starts_on_the_newest_run(tmp_path: Path) -> None:
    """Runs without events sort by id, newest first: enter reads the newest report."""
    runs = tmp_path / ".horde" / "runs"
    for run, report in (("20240101-000000-aaaa", "old"), ("20250101-000000-bbbb", "newest")):
        (runs / run).mkdir(parents=True)
        (runs / run / "TASK.md").write_text("# Task\n")
        (runs / run / "MANIFEST.json").write_text(json.dumps({"run": run}))
        (runs / run / "REPORT.md").write_text(f"# Report\n\nThe {report} run.\n")
    app = app_for(tmp_path / ".horde")
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        view = app.screen.query_one(Markdown)
        await wait_for(pilot, lambda: "The newest run." in view.source)


async def test_enter_on_a_finished_run_opens_its_run_screen_read_only(horde: Path) -> None:
    """Tabs, member detail and transcripts of a run that ended, not only its report;
    the footer and the palette name both, `o` opens the report."""
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index(FINISHED))
        await pilot.pause()
        footer = {k.key: k.description for k in app.screen.query(FooterKey)}
        assert footer.get("enter") == "Open run" and footer.get("o") == "Report", footer
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert isinstance(screen, RunScreen) and isinstance(screen.source, AttachedSource)
        await wait_for(pilot, lambda: not screen.live and screen.table.row_count >= 1)
        await pilot.pause(0.3)
        assert app.screen is screen, "the report does not cover the run screen"
        assert "read-only" in app.title
        for action in ("pause", "resume", "reset", "stop_clean", "stop_hard"):
            assert screen.check_action(action, ()) is False, f"{action} on an ended run"
        await pilot.press("enter")  # member detail of member-1
        await wait_for(pilot, lambda: isinstance(app.screen, MemberDetailScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        titles = await palette_titles(pilot, "aaaa")
        assert f"Open run {FINISHED}" in titles and f"Report of {FINISHED}" in titles, titles


async def palette_titles(pilot, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Every command the palette lists for `query`."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))
    await pilot.press(*query)
    commands = pilot.app.screen.query_one(CommandList)
    await wait_for(pilot, lambda: commands.option_count > 0)
    titles = [
        str(commands.get_option_at_index(i).prompt).split("\n")[0]
        for i in range(commands.option_count)
    ]
    await pilot.press("escape")
    return titles
