"""Pilot tests of the app around a run: quitting a live run, the report screen when the
run ends, the home screen with nothing to host, tabs that read files, and the pieces
underneath (the bridge's coalescing, the styles resolver, the `app` command)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import Horde
from support.app import FakeSupervisor, deterministic_app, play_six, wait_for
from textual.widgets import DataTable, Markdown, OptionList, Static, TabbedContent

from horde_tui.app.app import HordeApp
from horde_tui.app.tui_bridge import SupervisorUpdate, TuiBridge
from horde_tui.commands.cli import build_parser
from horde_tui.screens.home import HomeScreen
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.widgets.member_table import MemberTable

SIZE = (100, 30)


def static_text(app: HordeApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_q_on_a_live_run_asks_and_stop_clean_quits_after_the_report(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        play_six(fake)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert fake.calls == [] and app.is_running

        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("enter")  # the focused button is Cancel
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert fake.calls == []

        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#stop-clean")
        await wait_for(pilot, lambda: fake.calls == [("stop_clean", "all")])
        assert app.is_running, "a clean stop quits only once the report is written"
        fake.finish()
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0


async def test_quit_with_stop_hard_stops_the_whole_run(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#stop-hard")
        await wait_for(pilot, lambda: fake.calls == [("stop_hard", "all")])
        fake.finish("stopped by user")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 130


async def test_a_failing_control_is_shown_not_swallowed(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)

    async def refuse(target: str = "all") -> str:
        raise OSError("no such process group")

    fake.stop_hard = refuse  # type: ignore[method-assign]
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        play_six(fake)
        await wait_for(pilot, lambda: app.query_one(MemberTable).row_count == 6)
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#all")
        await wait_for(
            pilot, lambda: any("no such process group" in n.message for n in app._notifications)
        )


async def test_report_opens_when_the_run_ends_with_d_and_m_one_key_away(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        play_six(fake)
        fake.finish(documents=("DELIVERABLE.md",))
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        screen = app.screen
        await wait_for(pilot, lambda: "REPORT.md" in static_text(app, "#report-title"))
        assert screen.check_action("show", ("postmortem",)) is None, "no POSTMORTEM.md"
        await pilot.press("d")
        await wait_for(pilot, lambda: "DELIVERABLE.md" in static_text(app, "#report-title"))
        assert "The deliverable of" in screen.query_one(Markdown).source
        (fake.run_dir / "POSTMORTEM.md").write_text("# Post-mortem\n\nWhat went wrong.\n")
        await pilot.press("m")
        await wait_for(pilot, lambda: "POSTMORTEM.md" in static_text(app, "#report-title"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.run_screen
        assert run is not None and not run.live and run.has_class("-ended")
        assert run.check_action("pause", ()) is False, "hidden: nothing to pause after the run"
        assert "ended: finished" in static_text(app, "#run-status")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0


async def test_ledger_tab_and_files_tab_read_the_run_files(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    assert Horde(tmp_path)("member-1", "idea", run=fake.run_id, text="Check users.py").ok
    (fake.run_dir / "TASK.md").write_text("# Task\n\nReview the sample target.\n")
    (fake.run_dir / "PLAN.md").write_text("# Plan\n")
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        ideas = app.screen.query_one("#ideas LedgerTable", DataTable)
        await wait_for(pilot, lambda: ideas.row_count == 1)
        assert str(ideas.get_cell("#1", "text")) == "Check users.py"
        await pilot.press("1")
        board = app.screen.query_one("#board .ledger-pane")
        await wait_for(pilot, lambda: board.has_class("-empty"))
        await pilot.press("0")
        listing = app.screen.query_one("#file-list", OptionList)
        await wait_for(pilot, lambda: listing.option_count == 2)
        names = [str(listing.get_option_at_index(i).prompt) for i in range(2)]
        assert names == ["TASK.md", "PLAN.md"]
        view = app.screen.query_one("#file-view Markdown", Markdown)
        await wait_for(pilot, lambda: "Review the sample target" in view.source)
        assert app.query_one(TabbedContent).active == "files"


async def test_home_screen_explains_how_to_start_when_there_is_no_run(tmp_path: Path) -> None:
    app = HordeApp(horde_dir=tmp_path / ".horde")
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, HomeScreen)
        text = static_text(app, "#home-text")
        assert "No runs in" in text and "horde-tui run" in text and "horde-tui demo" in text
        assert app.screen.check_action("open_report", ()) is False, "hidden: no run at all"
        await pilot.press("q")
    assert app.return_value == 0


class Recorder:
    """Stands in for the app: keeps what the bridge posts."""

    def __init__(self) -> None:
        self.updates: list[SupervisorUpdate] = []

    def post_message(self, message: SupervisorUpdate) -> bool:
        self.updates.append(message)
        return True


async def test_bridge_only_wakes_at_a_coalesced_rate() -> None:
    """The bridge only wakes the screen (messages that replace each other) and keeps
    no events: the screen reads what happened from the run's files."""
    recorder = Recorder()
    bridge = TuiBridge(recorder, interval_s=0.05)  # type: ignore[arg-type]
    assert not hasattr(bridge, "take"), "the events are read from disk, not handed over"
    bridge(SupervisorEvent("run-start"))
    await asyncio.sleep(0.01)
    assert len(recorder.updates) == 1, "a lone event after a quiet spell wakes at once"
    for i in range(500):
        bridge(SupervisorEvent("member-status", "member-1", {"type": "usage", "i": i}))
    await asyncio.sleep(0.12)
    assert len(recorder.updates) == 2, "a burst within one interval is one wake"
    assert recorder.updates[1].can_replace(recorder.updates[0]), "a pending wake is replaced"
    bridge(SupervisorEvent("run-end"))
    bridge.flush()
    assert len(recorder.updates) == 3, "the run's end wakes at once"


def test_app_subcommand_is_registered() -> None:
    args = build_parser().parse_args(["app", "--no-mouse"])
    assert args.command == "app" and args.no_mouse is True
