"""The launch form (`n`), the quit dialog's choices, and the runs list's states.

Refusals are checked by keyboard on the form itself; one test launches a real hosted run
(real supervisor, gateway and member on the scripted stub model) and stops it through
the quit dialog, another starts a detached run from the form and detaches from it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from support.app import NOW, FakeRemote, FakeSupervisor, deterministic_app, play_six, wait_for
from support.cli import HEADLESS_PLAN, cli
from support.processes import wait_until
from support.rundir import FINISHED, RunDir, ready_to_launch, several_runs
from textual.command import CommandList
from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, DataTable, Input, Select, Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.common.settings import THINKING_LEVELS
from horde_tui.launch.launch import check_launch, detached_argv
from horde_tui.protocol import controls
from horde_tui.screens.home import HomeScreen
from horde_tui.screens.launch import LaunchScreen
from horde_tui.screens.modals import ChoiceScreen, HelpScreen
from horde_tui.screens.run import RunScreen
from horde_tui.screens.runs import RunsScreen
from horde_tui.store.runs import run_state, supervisor_pid
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.view.source import AttachedSource, HostedSource

pytestmark = pytest.mark.usefixtures("no_horde_env")

SIZE = (120, 36)


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    return ready_to_launch(tmp_path)


def app_for(horde: Path) -> HordeApp:
    return HordeApp(horde_dir=horde, config=AppConfig.deterministic(NOW))


def form(app: HordeApp) -> LaunchScreen:
    screen = app.screen
    assert isinstance(screen, LaunchScreen)
    return screen


def error_line(app: HordeApp, field: str) -> str:
    line = app.screen.query_one(f"#launch-{field}-error", Static)
    return str(line.render()) if line.has_class("-shown") else ""


async def open_form(pilot: Pilot[int]) -> LaunchScreen:
    await pilot.press("n")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, LaunchScreen))
    screen = pilot.app.screen
    assert isinstance(screen, LaunchScreen)
    return screen


async def type_into(pilot: Pilot[int], field: str, text: str) -> None:
    """Replace a field's text by keyboard: focus it, select all (on focus), type."""
    widget = pilot.app.screen.query_one(f"#launch-{field}", Input)
    widget.focus()
    await wait_for(pilot, lambda: widget.has_focus)
    widget.value = ""
    if text:
        await pilot.press(*text)


async def test_n_opens_the_form_with_the_settings_defaults_and_escape_closes_it(
    horde: Path,
) -> None:
    (horde / "config.toml").write_text('model = "openai/stub"\nthinking = "medium"\n')
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunsScreen)
        screen = await open_form(pilot)
        assert screen.query_one("#launch-prompt", Input).has_focus
        assert screen.query_one("#launch-model", Input).value == "openai/stub"
        assert screen.query_one("#launch-count", Input).value == "3"
        thinking = screen.query_one("#launch-thinking", Select)
        assert thinking.value == "medium"
        assert [str(o[0]) for o in thinking._options] == list(THINKING_LEVELS)
        assert screen.query_one("#launch-verifier", Checkbox).value is True
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        console = Console(width=100, record=True)
        console.print(help_screen.key_table())
        keys = console.export_text()
        assert "^s" in keys and "Check and start the run" in keys and "Close the form" in keys
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_the_palette_and_the_empty_home_screen_open_the_form(tmp_path: Path) -> None:
    app = app_for(tmp_path / ".horde")
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("ctrl+p")
        await pilot.press(*"new run")
        await wait_for(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        top = app.screen.query_one(CommandList).get_option_at_index(0)
        assert "New run" in str(top.prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))


async def test_tab_walks_the_fields_in_order(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        screen.query_one("#launch-count", Input).focus()
        order = []
        for _ in range(13):
            await pilot.pause()
            assert app.focused is not None
            order.append(app.focused.id)
            await pilot.press("tab")
        assert order == [
            "launch-count",
            "launch-prompt",
            "launch-layers",
            "launch-model",
            "launch-thinking",
            "launch-preset",
            "launch-member-models",
            "launch-deadline",
            "launch-verifier",
            "launch-until-stop",
            "launch-detach",
            "launch-start",
            "launch-cancel",
        ]


async def test_the_form_picks_a_preset_and_per_member_models(horde: Path) -> None:
    """The Preset field lists `none` and every preset here; with member models typed,
    the form's options give the run the preset's personas and those models, as
    `run --preset ... --member-model ...` would (the detached command line too)."""
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        picker = screen.query_one("#launch-preset", Select)
        assert picker.value == "none"
        assert [value for _, value in picker._options] == [
            "none",
            "code-audit",
            "filings",
            "osint",
            "paper-analysis",
            "security-review",
        ]
        picker.value = "security-review"
        await type_into(pilot, "count", "4")
        await type_into(pilot, "prompt", "Review app.py")
        await type_into(pilot, "member-models", "member-4=anthropic/claude-x")
        options, layers = screen.options()
        check = check_launch(options, horde, layers)
        assert check.ok, check.refusals
        assert check.request is not None and check.request.preset is not None
        assert check.request.preset.name == "security-review"
        assert check.settings is not None
        assert check.settings.gateway.member_models == {"member-4": "anthropic/claude-x"}
        argv = detached_argv(options, layers)
        assert argv[argv.index("--preset") + 1] == "security-review"
        assert argv[argv.index("--member-model") + 1] == "member-4=anthropic/claude-x"
        await type_into(pilot, "member-models", "member-4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "MEMBER=MODEL" in error_line(app, "member-models"))
        assert app.screen is screen


@pytest.mark.parametrize(
    ("field", "typed", "error_field", "says"),
    [
        ("count", "13", "count", "a horde has 1 to 12 members, not 13"),
        ("count", "0", "count", "a horde has 1 to 12 members, not 0"),
        ("count", "5/3", "count", "a swarm has 1 to 4 hordes, not 5"),
        ("prompt", "", "prompt", "the prompt is empty"),
        ("deadline", "soon", "max-minutes", "valid number"),
        ("deadline", "-5", "max-minutes", "greater than 0"),
        ("model", "", "model", "no model"),
    ],
)
async def test_each_refusal_is_one_line_under_its_field_and_keeps_the_input(
    horde: Path, field: str, typed: str, error_field: str, says: str
) -> None:
    (horde / "config.toml").unlink()  # no default model: the model field is the only one
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        await type_into(pilot, "prompt", "Find the bugs")
        await type_into(pilot, "model", "openai/stub")
        await type_into(pilot, field, typed)
        await pilot.press("enter")
        await wait_for(pilot, lambda: says in error_line(app, error_field))
        assert error_line(app, error_field).startswith("refused: ")
        assert screen.query_one(f"#launch-{field}", Input).value == typed
        shown = [w.id for w in screen.query(".field-error") if w.has_class("-shown") and w.id]
        assert shown == [f"launch-{error_field}-error"], shown
        assert app.screen is screen and not screen.busy
        assert [p.name for p in (horde / "runs").iterdir()] == [FINISHED], "nothing started"


async def test_enter_on_a_checkbox_and_ctrl_s_anywhere_start_and_space_toggles(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        box = screen.query_one("#launch-until-stop", Checkbox)
        box.focus()
        await pilot.press("space")
        assert box.value is True
        await pilot.press("enter")  # the prompt is empty: refused, the box stays on
        await wait_for(pilot, lambda: "the prompt is empty" in error_line(app, "prompt"))
        assert box.value is True
        screen.show_error("prompt", "")
        screen.query_one("#launch-thinking", Select).focus()
        await pilot.press("ctrl+s")  # from a field where enter means something else
        await wait_for(pilot, lambda: "the prompt is empty" in error_line(app, "prompt"))


async def test_a_live_run_refuses_a_launch_on_the_run_line(horde: Path) -> None:
    live = RunDir(horde, "20260102-130000-dddd")
    live.event(0, "run-start", members=3, model="openai/stub")
    live.live(os.getpid())
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(pilot)
        await type_into(pilot, "prompt", "Find the bugs")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "20260102-130000-dddd is live" in error_line(app, "run"))


@pytest.fixture
def stub_config(horde: Path) -> Iterator[StubThread]:
    """The scripted stub model, named in `.horde/config.toml` as a user would name theirs."""
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        (horde / "config.toml").write_text(
            f'model = "{stub.model}"\napi_base = "{stub.api_base}"\napi_key = "stub"\n'
            "active_grace_ms = 300\n"
        )
        yield stub


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_a_launch_hosts_a_real_run_and_quit_stops_it_hard(
    horde: Path, stub_config: StubThread
) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(pilot)
        await type_into(pilot, "count", "1")
        await type_into(pilot, "prompt", "Review app.py")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), 20)
        screen = app.screen
        assert isinstance(screen, RunScreen) and isinstance(screen.source, HostedSource)
        assert app.sup is not None and app.live
        run_dir = app.sup.run_dir
        assert app.title == f"run {run_dir.name}"
        await wait_for(pilot, lambda: app.sup.members["member-1"].status == "running", 60)
        assert run_state(run_dir) == "active"
        await pilot.press("escape")  # back to the list; the run goes on in the app
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        assert app.live
        table = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        await pilot.press("up", "enter")  # the newest run, hosted here: its own screen again
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.source.supervisor is app.sup  # type: ignore[attr-defined]
        assert app.attached is None
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert not app.screen.query_one("#detach", Button).disabled
        await pilot.click("#stop-hard")
        await wait_for(pilot, lambda: not app.is_running, 60)
    assert app.return_value == 130
    assert (run_dir / "REPORT.md").is_file()
    assert run_state(run_dir) == "finished"


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_quit_from_the_runs_list_stops_the_hosted_run_it_shows_no_screen_for(
    horde: Path, stub_config: StubThread
) -> None:
    """The run's screen popped (escape), `q` still stops the run it hosts: the choice
    goes to the supervisor, not through a run screen that is not there."""
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(pilot)
        await type_into(pilot, "count", "1")
        await type_into(pilot, "prompt", "Review app.py")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), 20)
        assert app.sup is not None
        run_dir = app.sup.run_dir
        await wait_for(pilot, lambda: app.sup.members["member-1"].status == "running", 60)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        assert app.live and app.run_screen is None
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#stop-hard")
        await wait_for(pilot, lambda: not app.is_running, 60)
    assert app.return_value == 130
    assert run_state(run_dir) == "finished"


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_a_detached_launch_attaches_and_detach_leaves_it_going(
    horde: Path, stub_config: StubThread
) -> None:
    app = app_for(horde)
    run_dir: Path | None = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await open_form(pilot)
            await type_into(pilot, "count", "1")
            await type_into(pilot, "prompt", "Review app.py")
            app.screen.query_one("#launch-detach", Checkbox).focus()
            await pilot.press("space", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), 70)
            screen = app.screen
            assert isinstance(screen, RunScreen) and isinstance(screen.source, AttachedSource)
            assert app.attached is not None
            run_dir = app.attached.run_dir
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            detach = app.screen.query_one("#detach", Button)
            assert not detach.disabled and detach.has_focus
            await pilot.press("enter")
            await wait_for(pilot, lambda: not app.is_running)
        assert run_state(run_dir) == "active", "detaching left the run going"
        assert supervisor_pid(run_dir) != os.getpid()
        # The supervisor reads control/ once the canary is over: under load member-1's
        # first model output can take longer than stop-hard waits for an answer (15 s).
        events = run_dir / "events.jsonl"
        assert wait_until(
            lambda: events.exists() and '"kind":"canary"' in events.read_text(), 90
        ), "no canary"
        stopped = cli(horde.parent, "stop-hard")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert wait_until(lambda: run_state(run_dir) == "finished", 60), "no report"
    finally:
        pid = supervisor_pid(run_dir) if run_dir else None
        if pid is not None and run_state(run_dir) == "active":  # type: ignore[arg-type]
            os.killpg(pid, signal.SIGKILL)


# -- the quit dialog ---------------------------------------------------------------------


async def test_quitting_a_hosted_run_offers_detach_and_says_what_it_does(
    tmp_path: Path,
) -> None:
    fake = FakeSupervisor(tmp_path, demo=False)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        play_six(fake)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        dialog = app.screen
        assert not dialog.query_one("#detach", Button).disabled
        assert dialog.query_one("#cancel", Button).has_focus
        detail = str(dialog.query_one(".dialog-detail", Static).render())
        assert "a background supervisor carries them on" in detail
        assert f"horde-tui attach {fake.run_id}" in detail
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert fake.calls == [] and app.is_running


@pytest.fixture
def attached_run(tmp_path: Path) -> RunDir:
    run = RunDir(tmp_path / ".horde", FINISHED)
    run.event(0, "run-start", members=3, model="openai/stub")
    run.event(1, "phase-start", phase="discovery")
    run.live(os.getpid())
    return run


@pytest.mark.parametrize("choice", ["stop-clean", "stop-hard"])
async def test_quitting_an_attached_run_can_stop_it_through_control(
    attached_run: RunDir, choice: str
) -> None:
    app = HordeApp(attach=attached_run.path, config=AppConfig.deterministic(NOW))
    with FakeRemote(attached_run) as remote:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            assert not app.screen.query_one("#detach", Button).disabled
            await pilot.click(f"#{choice}")
            await wait_for(pilot, lambda: not app.is_running)
        assert remote.requests == [(choice, "all")]
    assert app.return_value == 0


async def test_escape_on_the_attached_quit_dialog_stays(attached_run: RunDir) -> None:
    app = HordeApp(attach=attached_run.path, config=AppConfig.deterministic(NOW))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.is_running
        assert controls.pending_requests(attached_run.path) == []


# -- the runs list ----------------------------------------------------------------------


async def test_the_runs_list_shows_each_state_start_count_model_outcome_prompt(
    tmp_path: Path,
) -> None:
    horde = tmp_path / ".horde"
    states = several_runs(horde)
    app = app_for(horde)
    async with app.run_test(size=(160, 36)) as pilot:
        assert isinstance(app.screen, RunsScreen)
        table = app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(states))
        rows = {str(table.get_row(k)[0]): [str(c) for c in table.get_row(k)] for k in table.rows}
        assert {run: row[1] for run, row in rows.items()} == states
        done = rows["20260102-120000-aaaa"]
        assert done[2] == "2026-01-02 12:00"  # UTC in the deterministic config
        assert done[3:6] == ["3", "openai/gpt-4o", "solved"]
        assert done[6:] == ["-R---", "Find the SQL injections in app/"]
        assert rows["20260102-120300-dddd"][3:6] == ["4", "ollama/qwen3:8b", "-"]
        assert rows["20260102-120400-eeee"][2:] == ["-", "-", "-", "-", "-----", ""]


async def test_a_narrow_runs_list_keeps_the_prompt_and_details_the_highlighted_run(
    tmp_path: Path,
) -> None:
    """At 80 columns the run id and model leave the table for the detail line."""
    horde = tmp_path / ".horde"
    several_runs(horde)
    (horde / "runs" / "20260102-120100-bbbb" / "TASK.md").write_text(
        "# Task\n\nWhy does the cache test flake on the second run after a restart?\n"
    )
    app = app_for(horde)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: screen.columns[0] == "state")
        assert [str(c.label) for c in table.columns.values()] == [
            "state",
            "started",
            "count",
            "outcome",
            "files",
            "prompt",
        ]
        await pilot.press("down", "down")
        prompt = str(table.get_cell("20260102-120100-bbbb", "prompt"))
        assert prompt.startswith("Why does the cache") and prompt.endswith("…")
        detail = str(screen.query_one("#runs-detail", Static).render())
        assert "20260102-120100-bbbb · interrupted" in detail
        assert "anthropic/claude-sonnet-4" in detail
        assert "on the second run after a restart?" in detail


async def test_the_runs_list_picks_up_a_new_run_and_a_state_change(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=(160, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs", DataTable)
        new = RunDir(horde, "20260102-140000-ffff")
        new.event(0, "run-start", members=5, model="openai/gpt-4o")
        new.live(os.getpid())
        await wait_for(pilot, lambda: table.row_count == 2)
        await wait_for(pilot, lambda: table.get_cell(new.path.name, "state") == "active")
        new.event(30, "phase-start", phase="finalize")
        await wait_for(pilot, lambda: table.get_cell(new.path.name, "state") == "finalizing")


async def test_q_on_a_focused_option_keeps_the_form_and_what_was_typed(horde: Path) -> None:
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        await open_form(pilot)
        await type_into(pilot, "prompt", "quit quietly")  # a q in a text field is text
        app.screen.query_one("#launch-detach", Checkbox).focus()
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, LaunchScreen)
        assert app.screen.query_one("#launch-prompt", Input).value == "quit quietly"


async def test_an_option_reads_on_or_off_without_colour(horde: Path) -> None:
    """In 16 colours or with NO_COLOR a checkbox's colour is gone: its text says on/off."""
    app = app_for(horde)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        box = screen.query_one("#launch-until-stop", Checkbox)
        off = str(box.render())
        box.focus()
        await pilot.press("space")
        assert box.value is True
        on = str(box.render())
        assert on != off, f"the same text on and off: {on!r}"
        assert "until stop" in on and "until stop" in off
