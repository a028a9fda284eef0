"""Swarms in the app: the runs list, the swarm screen, its controls, the launch form's H/M.

Swarms are fixture directories (`swarm_scene`) read from disk, as the app reads any
swarm; a hosted swarm is `FakeSwarm`, the contract's `SwarmSupervisor` API, put where
the app's lazy import finds it. A swarm of another process answers its `control/`
requests through a real `SwarmSupervisor` whose hordes are `RecordingHorde`s.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.app import NOW, wait_for
from support.processes import dead_pid
from support.rundir import FINISHED, finished_run, ready_to_launch
from support.swarm_scene import (
    LAUNCHED_ID,
    SWARM_ID,
    FakeSwarm,
    RecordingHorde,
    Scene,
    swarm_scene,
    write_swarm,
)
from textual.command import CommandList
from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, DataTable, Input, Markdown, TabbedContent

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.common.settings import Settings
from horde_tui.launch.launch import DetachedStart, LaunchCheck, build_host
from horde_tui.protocol import controls
from horde_tui.protocol.outcome import RunSummary
from horde_tui.protocol.targets import Count
from horde_tui.screens import launch as launch_screen
from horde_tui.screens.launch import LaunchScreen
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.screens.panes import MarkdownFilePane
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.screens.runs import RunsScreen
from horde_tui.screens.swarm import MemberPickScreen, SwarmScreen
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor
from horde_tui.view.source import AttachedSource

pytestmark = pytest.mark.usefixtures("no_horde_env")

SIZE = (140, 36)
OLD_SWARM = "20260102-110000-0b0b"


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    """A finished run, the live 3/3 swarm of `swarm_scene`, and an older swarm whose
    host died (SWARM.json still says active)."""
    horde = tmp_path / ".horde"
    finished_run(horde)
    scene = swarm_scene(horde)
    write_swarm(
        horde, OLD_SWARM, parent_pid=dead_pid(), hordes=2, members=4, runs=(), started=1.0e9
    )
    return scene


@pytest.fixture
def horde(scene: Scene) -> Path:
    return scene.swarm_dir.parent.parent


@pytest.fixture
def quiet(tmp_path: Path) -> Path:
    """Nothing live, a finished run and a model: what a launch needs."""
    return ready_to_launch(tmp_path)


def app_for(horde: Path) -> HordeApp:
    return HordeApp(horde_dir=horde, config=AppConfig.deterministic(NOW))


def table_rows(app: HordeApp, ident: str) -> dict[str, list[str]]:
    table = app.screen.query_one(ident, DataTable)
    return {str(k.value): [str(c) for c in table.get_row(k)] for k in table.rows}


async def open_swarm(pilot: Pilot[object]) -> SwarmScreen:
    """From the runs list (the swarm is the newest row): enter, and wait for its hordes."""
    app = pilot.app
    assert isinstance(app.screen, RunsScreen)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, SwarmScreen))
    screen = app.screen
    assert isinstance(screen, SwarmScreen)
    await wait_for(pilot, lambda: len(screen.shown) == 3)  # rows painted
    return screen


async def choose(pilot: Pilot[object], key: str, button: str) -> None:
    """Press `key`, wait for its dialog, press the dialog's `button`."""
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ChoiceScreen))
    await pilot.click(f"#{button}")


def notified(app: HordeApp, text: str) -> bool:
    return any(text in n.message for n in app._notifications)


# -- the runs list ------------------------------------------------------------------------


async def test_the_runs_list_shows_swarms_with_runs_newest_first(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE):
        rows = table_rows(app, "#runs")
        assert list(rows) == [SWARM_ID, FINISHED, OLD_SWARM]
        live = rows[SWARM_ID]
        assert live[1:] == [
            "active",
            "2026-01-02 12:10",
            "3/3",
            "openai/stub",
            "-",
            "-----",  # files: no report, deliverable, ... yet
            "Audit the web app for injection and auth bugs",
        ]
        assert rows[OLD_SWARM][1] == "interrupted", "a dead parent_pid: interrupted"
        assert rows[OLD_SWARM][3] == "2/4"
        status = str(app.screen.query_one("#runs-status").render())
        assert status.startswith("1 runs and 2 swarms in "), status
        assert "3 hordes of 3 members" in str(app.screen.query_one("#runs-detail").render())


async def test_a_swarm_written_later_appears_and_its_state_follows_swarm_json(
    horde: Path,
) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        new = "20260102-130000-cccc"
        write_swarm(horde, new, state="finished", outcome="completed", started=2.0e9)
        await wait_for(pilot, lambda: new in table_rows(app, "#runs"))
        assert table_rows(app, "#runs")[new][1::4] == ["finished", "completed"]
        assert next(iter(table_rows(app, "#runs"))) == new


# -- the swarm screen ------------------------------------------------------------------------


async def test_the_swarm_screen_shows_one_line_per_horde_from_its_run(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_swarm(pilot)
        rows = table_rows(app, "#hordes")
        assert rows["h1"][:7] == ["h1", "active", "-", "3", "1", "1", "$0.5000"]
        assert rows["h1"][7].startswith("SQL and shell injection")
        assert rows["h2"][:7] == ["h2", "finished", "completed", "3", "0", "0", "$0.0000"]
        assert rows["h3"][:7] == ["h3", "pending", "-", "3", "-", "-", "-"]
        status = str(screen.query_one("#swarm-status").render())
        assert status == f"swarm {SWARM_ID} · active · 3/3 · openai/stub · merge pending"
        overview = screen.query_one("#swarm-overview", Markdown)
        await wait_for(pilot, lambda: "every template render site" in overview.source)
        assert "horde-start h2" in overview.source


async def test_enter_opens_the_hordes_run_screen_and_escape_comes_back(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        swarm = await open_swarm(pilot)
        await pilot.press("enter")  # h1, under the cursor
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert isinstance(run, RunScreen) and isinstance(run.source, AttachedSource)
        assert run.source.run_dir == horde_run_dir(horde, "h1")
        await wait_for(pilot, lambda: run.table.row_count == 3)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is swarm)
        await pilot.press("2")  # the horde tabs: h2 by its number; it finished, so its
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))  # screen, read-only
        h2 = app.screen
        assert h2.source.run_dir == horde_run_dir(horde, "h2")  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: not h2.live)  # type: ignore[attr-defined]
        await pilot.press("o")  # and its report over it
        await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
        assert app.screen.run_dir == horde_run_dir(horde, "h2")  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is h2)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is swarm)
        assert swarm.check_action("horde", ("h3",)) is None, "h3 has not started"
        await pilot.press("3")
        assert app.screen is swarm
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))


def horde_run_dir(horde: Path, name: str) -> Path:
    return horde / "swarms" / SWARM_ID / name / "runs" / f"{SWARM_ID}-{name}"


async def test_the_swarm_files_say_not_written_yet_until_they_exist(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_swarm(pilot)
        tabs = screen.query_one(TabbedContent)
        await pilot.press("w")
        await wait_for(pilot, lambda: tabs.active == "swarm-md")
        swarm_md = screen.query_one("#swarm-md MarkdownFilePane", MarkdownFilePane)
        await wait_for(pilot, lambda: "Audit the web app" in swarm_md.query_one(Markdown).source)
        await pilot.press("o")
        await wait_for(pilot, lambda: tabs.active == "report-md")
        report = screen.query_one("#report-md MarkdownFilePane", MarkdownFilePane)
        assert report.has_class("-empty")
        assert "REPORT.md is not written yet" in str(report.query_one(".empty-state").render())
        (horde / "swarms" / SWARM_ID / "REPORT.md").write_text("# Swarm report\n\nTwo hordes.\n")
        await wait_for(pilot, lambda: not report.has_class("-empty"))
        assert "Two hordes." in report.query_one(Markdown).source
        await pilot.press("d")
        await wait_for(pilot, lambda: tabs.active == "deliverable-md")
        await pilot.press("a")
        await wait_for(pilot, lambda: tabs.active == "overview")


# -- controls -----------------------------------------------------------------------------


async def test_controls_of_another_process_swarm_go_to_its_own_control_folder(
    horde: Path, scene: Scene
) -> None:
    """One path with the CLI: each control is one request in the swarm's `control/`,
    answered by a real `SwarmSupervisor` (its hordes recording stand-ins), which routes it
    to the hordes; no horde run's `control/` is written to."""
    app = app_for(horde)
    swarm = SwarmSupervisor(
        horde.parent, RunRequest("x", 3), Settings(model="openai/stub"), 3, swarm_id=SWARM_ID
    )
    h1, h2 = RecordingHorde("h1"), RecordingHorde("h2")
    swarm.hordes = {"h1": h1, "h2": h2}  # type: ignore[dict-item]
    swarm.summaries["h2"] = RunSummary("r", "completed", "", "ok", 0.0, 1.0, "m")
    async with app.run_test(size=SIZE) as pilot:
        serving = asyncio.create_task(controls.serve(scene.swarm_dir, swarm, 0.02))
        screen = await open_swarm(pilot)
        assert screen.hosted is None
        await pilot.press("p")
        await wait_for(pilot, lambda: h1.calls == [("pause", "all")])
        await wait_for(pilot, lambda: notified(app, "h1: pause all"))
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, MemberPickScreen))
        await pilot.press("escape")  # no member picked: nothing sent
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, MemberPickScreen))
        await pilot.press("enter")  # member-1
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#reset")
        await wait_for(pilot, lambda: ("reset", "member-1") in h1.calls)
        assert len(h1.calls) == 2
        await choose(pilot, "S", "all")
        await wait_for(pilot, lambda: ("stop-hard", "all") in h1.calls)
        await wait_for(pilot, lambda: notified(app, "h3: not started"))
        assert swarm.skipped == {"h3"} and swarm.hard_stopped
        table = screen.query_one("#hordes", DataTable)
        table.move_cursor(row=1)  # h2: finished, nothing applies but open
        await pilot.pause()
        for action in ("pause", "resume", "reset", "stop_clean", "stop_hard"):
            assert screen.check_action(action, ()) is None, action
        assert screen.check_action("open_horde", ()) is True
        table.move_cursor(row=2)  # h3: not started; a stop keeps it from starting
        await pilot.pause()
        assert screen.check_action("stop_clean", ()) is True
        assert screen.check_action("pause", ()) is None
        await choose(pilot, "s", "horde")
        answers = scene.swarm_dir / "control"
        await wait_for(pilot, lambda: len(list(answers.glob("resp-*"))) == 4)
        serving.cancel()
    assert len(h1.calls) == 3 and h2.calls == [], "h1 was not addressed by the stop of h3"
    for name in ("h1", "h2"):
        assert not list(horde_run_dir(horde, name).glob("control/*")), name


@pytest.fixture
def fake_swarm_module(monkeypatch: pytest.MonkeyPatch) -> list[FakeSwarm]:
    """`horde_tui.supervisor.swarm` with `FakeSwarm` as its `SwarmSupervisor`; returns
    the swarms the app built."""
    built: list[FakeSwarm] = []

    def build(*args: object, **kwargs: object) -> FakeSwarm:
        swarm = FakeSwarm(*args, **kwargs)  # type: ignore[arg-type]
        built.append(swarm)
        return swarm

    module = ModuleType("horde_tui.supervisor.swarm")
    module.SwarmSupervisor = build  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "horde_tui.supervisor.swarm", module)
    return built


async def test_controls_of_a_hosted_swarm_are_calls_on_its_supervisor(
    horde: Path, fake_swarm_module: list[FakeSwarm]
) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        fake = FakeSwarm(horde.parent, _Request(), None, 3, swarm_id=SWARM_ID)  # hosted here
        app.swarm, app.swarm_live = fake, True
        screen = await open_swarm(pilot)
        assert screen.hosted is fake
        await pilot.press("p")
        await wait_for(pilot, lambda: fake.calls == [("pause", "h1")])
        await wait_for(pilot, lambda: notified(app, "paused h1"))
        await pilot.press("x")  # a reset is of one member: which?
        await wait_for(pilot, lambda: isinstance(app.screen, MemberPickScreen))
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#reset")
        await wait_for(pilot, lambda: ("reset", "h1:member-2") in fake.calls)
        await choose(pilot, "s", "horde")
        await wait_for(pilot, lambda: ("stop_clean", "h1") in fake.calls)
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")  # cancel: nothing sent
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("enter")  # h1's run screen is attached, but the swarm is hosted:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await pilot.press("q")  # the swarm is hosted here: detaching is a handoff
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert not app.screen.query_one("#detach", Button).disabled
        assert str(app.screen.query_one(".dialog-question").render()).startswith(
            f"Swarm {SWARM_ID} is hosted in this app"
        )
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: app.screen is screen)
        assert ("stop_hard", "h1") not in fake.calls and len(fake.calls) == 3
        await pilot.press("ctrl+p")
        palette = app.screen.query_one(CommandList)
        await wait_for(pilot, lambda: palette.option_count > 0)
        titles = {  # a prompt is the title, then its help on the next line
            str(palette.get_option_at_index(i).prompt).split("\n")[0]
            for i in range(palette.option_count)
        }
        assert {"Pause h1", "Stop h1 hard", "Open h2", "Stop the swarm clean"} <= titles
        assert "Reset h1:member-3" in titles and "Reset h1" not in titles
        assert not {"Pause h2", "Open h3", "Resume h1"} & titles, titles
        await pilot.press(*"pause h1")
        await wait_for(
            pilot,
            lambda: (
                palette.option_count > 0
                and "Pause h1" in str(palette.get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: fake.calls.count(("pause", "h1")) == 2)


class _Request:
    prompt = "Audit the web app for injection and auth bugs"
    count = 3
    demo = False


async def test_a_finished_swarm_greys_every_control(horde: Path) -> None:
    write_swarm(horde, state="finished", outcome="completed")
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_swarm(pilot)
        assert table_rows(app, "#hordes")["h1"][1] == "active"  # h1's own files say so
        for action in ("pause", "resume", "reset", "stop_clean", "stop_hard"):
            assert screen.check_action(action, ()) is None, action
        assert screen.check_action("open_horde", ()) is True


# -- the launch form ----------------------------------------------------------------------


@pytest.mark.parametrize(("count", "hordes", "members"), [("2/3", 2, 3), ("3/2", 3, 2)])
async def test_the_launch_form_starts_h_m_as_a_hosted_swarm(
    quiet: Path,
    fake_swarm_module: list[FakeSwarm],
    count: str,
    hordes: int,
    members: int,
) -> None:
    app = app_for(quiet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        form.query_one("#launch-count", Input).value = count
        form.query_one("#launch-prompt", Input).value = "Audit the web app"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SwarmScreen))
        assert len(fake_swarm_module) == 1
        fake = fake_swarm_module[0]
        assert (fake.count, fake.request.count, fake.request.prompt) == (
            hordes,
            members,
            "Audit the web app",
        )
        assert app.swarm is fake and app.swarm_live and fake.sink is not None
        woken = app.swarm_revision
        fake.sink(SupervisorEvent("member-status", "member-1", {"horde": "h1"}, 0.0))
        fake.sink(SupervisorEvent("horde-start", None, {"horde": "h1"}, 0.0))
        await wait_for(pilot, lambda: app.swarm_revision > woken)
        await pilot.pause()  # both messages handled, in order
        assert app.swarm_revision == woken + 1, "member traffic does not wake the swarm screen"
        screen = app.screen
        assert isinstance(screen, SwarmScreen) and screen.swarm_dir == fake.swarm_dir
        await wait_for(pilot, lambda: len(table_rows(app, "#hordes")) == hordes)
        assert {row[1] for row in table_rows(app, "#hordes").values()} == {"pending"}
        await pilot.press("escape", "n")  # a second launch while the swarm is live is refused
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        app.screen.query_one("#launch-prompt", Input).value = "Something else"
        await pilot.press("ctrl+s")
        error = app.screen.query_one("#launch-run-error")
        await wait_for(pilot, lambda: f"swarm {LAUNCHED_ID} is live in this" in str(error.render()))
        assert len(fake_swarm_module) == 1
        await pilot.press("escape")
        await pilot.press("q")  # a hosted swarm dies with the app: the quit dialog asks
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert not app.screen.query_one("#detach", Button).disabled
        await pilot.click("#stop-clean")
        await wait_for(pilot, lambda: ("stop_clean", "all") in fake.calls)
    assert app.return_value == 130, "the app quit with the swarm's status once run() returned"


async def test_run_h_m_in_a_terminal_opens_the_app_hosting_the_swarm(
    quiet: Path, fake_swarm_module: list[FakeSwarm]
) -> None:
    """`horde-tui run 2/3 ...` in a terminal: the app starts with the swarm to host, the
    one `build_host` builds for the passed check (as `runcli.cmd_run` hands it over)."""
    request = RunRequest("Audit the web app", 3)
    settings = Settings(model="openai/stub")
    check = LaunchCheck(request=request, settings=settings, count=Count(2, 3))
    swarm = build_host(check, quiet.parent)
    app = HordeApp(horde_dir=quiet, config=AppConfig.deterministic(NOW), swarm=swarm)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SwarmScreen))
        assert [(f.count, f.request) for f in fake_swarm_module] == [(2, request)]
        assert app.swarm_live and app.title == f"swarm {LAUNCHED_ID}"
        fake_swarm_module[0].finish()
        await wait_for(pilot, lambda: not app.swarm_live)
        await pilot.press("q")  # nothing live any more: quits at once
    assert app.return_value == 130 and app.exit_code == 130


async def test_a_detached_swarm_start_opens_the_swarm_screen(
    quiet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detached start (its own process, `run --detach 2/3`) reports the swarm it
    started; the form opens that swarm's screen rather than attaching to a run."""
    swarm_dir = quiet / "swarms" / LAUNCHED_ID
    argv: list[list[str]] = []

    def started(
        command: list[str], horde_dir: Path, env: dict[str, str] | None = None
    ) -> DetachedStart:
        """The detached process went live: its SWARM.json exists (after the check)."""
        argv.append(command)
        write_swarm(horde_dir, LAUNCHED_ID, runs=())
        return DetachedStart(os.getpid(), horde_dir / "detached.log", swarm_dir)

    monkeypatch.setattr(launch_screen, "start_detached", started)
    app = app_for(quiet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        form = app.screen
        form.query_one("#launch-count", Input).value = "2/3"
        form.query_one("#launch-prompt", Input).value = "Audit"
        form.query_one("#launch-detach", Checkbox).value = True
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SwarmScreen))
        assert app.screen.swarm_dir == swarm_dir  # type: ignore[attr-defined]
        assert argv and argv[0][3:7] == ["run", "--headless", "2/3", "Audit"]
        assert app.swarm is None, "another process hosts it"


async def test_the_ledgers_tab_shows_every_hordes_ledger_under_its_heading(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_swarm(pilot)
        assert screen.check_action("next_ledger", ()) is None, "v acts on the Ledgers tab only"
        await pilot.press("l")
        ledgers = screen.query_one("#swarm-ledgers", Markdown)
        await wait_for(pilot, lambda: "## h1" in ledgers.source)
        text = ledgers.source
        h1, h2, h3 = (text.index(f"## {h}") for h in ("h1", "h2", "h3"))
        assert h1 < text.index("| F1 |") < h2 < text.index("No findings in h2 yet.") < h3
        assert "SQL injection in build_query()" in text
        assert text.endswith("Not started yet.\n")
        await pilot.press("v")
        await wait_for(pilot, lambda: "No facts in h1 yet." in ledgers.source)
        status = str(screen.query_one("#swarm-ledger-status").render())
        assert status.startswith("facts of every horde · v: next ledger")
        await pilot.press("v", "v", "v")  # claims, resources, threads
        await pilot.press("v")  # ideas: h1's claimed idea
        await wait_for(pilot, lambda: "Audit app/db/query.py" in ledgers.source)
