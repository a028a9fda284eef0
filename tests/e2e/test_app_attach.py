"""Attach mode: the run screen on a run hosted by another process, and `run --detach`.

The pilot test writes the run's files by hand and plays the other process's supervisor
with a thread answering `control/` requests; the subprocess test starts a real detached
headless run on the scripted stub model and stops it from another "shell".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.app import NOW, FakeRemote, stop_clean, wait_for
from support.cli import HEADLESS_PLAN, cli, cli_argv, stub_env
from support.processes import dead_pid, wait_until
from support.rundir import RunDir
from textual.widgets import Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.protocol import controls
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.screens.report import ReportScreen
from horde_tui.screens.run import RunScreen
from horde_tui.store.runs import run_state, supervisor_pid
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.view.source import AttachedSource
from horde_tui.widgets.event_log import EventTail

SIZE = (120, 30)
RUN = "20260102-120000-aaaa"


@pytest.fixture
def live_run(tmp_path: Path) -> Iterator[RunDir]:
    run = RunDir(tmp_path / ".horde", RUN)
    run.event(0, "run-start", members=3, model="openai/stub")
    run.event(1, "phase-start", phase="discovery")
    for i in (1, 2, 3):
        run.event(2 + i, "member-spawn", f"member-{i}", attempt=1, pid=os.getpid())
    run.live(os.getpid())
    yield run


def test_attach_with_no_id_opens_the_only_live_run_and_lists_several(
    live_run: RunDir,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`horde-tui attach` with no id: the only live run (an ended one does not count);
    with two live, opening the newest could be the wrong one, so it lists them, one
    `horde-tui attach RUN` line each, and exits 2 (bad usage: name one)."""
    from horde_tui.app import app as app_module
    from horde_tui.commands.cli import main

    opened: list[Path] = []
    monkeypatch.setattr(app_module, "attach_app", lambda run_dir, **_: opened.append(run_dir) or 0)
    monkeypatch.delenv("HORDE_DIR", raising=False)
    monkeypatch.chdir(live_run.path.parent.parent.parent)
    ended = RunDir(live_run.path.parent.parent, "20260102-130000-bbbb")
    ended.live(dead_pid())  # its host is gone: interrupted, not live
    assert main(["attach"]) == 0 and opened == [live_run.path]

    other = RunDir(live_run.path.parent.parent, "20260102-140000-cccc")
    other.live(os.getpid())
    assert main(["attach"]) == 2 and opened == [live_run.path], "no run opened"
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert "2 runs are live" in lines[0], err
    assert [line.split()[-1] for line in lines[1:]] == [other.path.name, RUN]
    assert all(f"horde-tui attach {line.split()[-1]}" in line for line in lines[1:])


def log_texts(screen: RunScreen) -> str:
    log = screen.query_one(EventTail)
    return "\n".join(log.row_text(r) for r in range(log.row_count))


async def test_attached_pause_goes_through_control_and_the_answer_is_shown(
    live_run: RunDir,
) -> None:
    app = HordeApp(attach=live_run.path, config=AppConfig.deterministic(NOW))
    with FakeRemote(live_run) as remote:
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, RunScreen) and isinstance(screen.source, AttachedSource)
            await wait_for(pilot, lambda: screen.table.row_count == 3)
            await wait_for(pilot, lambda: "phase-start phase discovery" in log_texts(screen))
            assert "attached" in app.title and app.sub_title == "openai/stub"
            assert screen.table.selected_member == "member-1"
            await pilot.press("p")
            await wait_for(pilot, lambda: remote.requests == [("pause", "member-1")])
            await wait_for(
                pilot, lambda: any(n.message == "paused member-1" for n in app._notifications)
            )
            await wait_for(pilot, lambda: "pause" in log_texts(screen))
            await wait_for(
                pilot, lambda: app.attached is not None and _status(app, "member-1") == "paused"
            )
            await stop_clean(pilot)
            await wait_for(pilot, lambda: ("stop-clean", "all") in remote.requests)
            # The other process ends the run: the screen says so and opens the report.
            live_run.event(50, "run-end", outcome="stopped by user", diagnosis="asked")
            (live_run.path / "REPORT.md").write_text("# Report\n\nDone.\n")
            (live_run.path / ".live").unlink()
            await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen))
            assert not screen.live
            status = str(screen.query_one("#run-status", Static).render())
            assert "ended: stopped by user" in status
            await pilot.press("q")  # no modal: the run was never ours to stop
    assert app.return_value == 0


def _status(app: HordeApp, member: str) -> str:
    assert app.attached is not None
    state = app.attached.members.get(member)
    return state.status if state else ""


async def test_quitting_an_attached_live_run_leaves_it_going(live_run: RunDir) -> None:
    app = HordeApp(attach=live_run.path, config=AppConfig.deterministic(NOW))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_for(pilot, lambda: screen.table.row_count == 3)
        await pilot.press("p")  # nobody answers: the wait runs in a thread, the UI goes on
        await wait_for(pilot, lambda: len(controls.pending_requests(live_run.path)) == 1)
        await pilot.press("down")
        assert screen.table.selected_member == "member-2"
        started = time.monotonic()
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("enter")  # Detach is focused: quit, the run goes on
    assert time.monotonic() - started < 5, "quit does not wait for the unanswered request"
    assert app.return_value == 0
    assert run_state(live_run.path) == "active"
    assert [r.action for _, r in controls.pending_requests(live_run.path)] == ["pause"]


async def test_quitting_with_a_stop_asks_the_other_supervisor_then_quits(
    live_run: RunDir,
) -> None:
    """Stop hard from the quit dialog of an attached run goes through its `control/`
    (the action's own name, `stop-hard`, for the whole run) and the app quits once the
    other process has answered."""
    app = HordeApp(attach=live_run.path, config=AppConfig.deterministic(NOW))
    with FakeRemote(live_run) as remote:
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, RunScreen)
            await wait_for(pilot, lambda: screen.table.row_count == 3)
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
            await pilot.click("#stop-hard")
            await wait_for(pilot, lambda: not app.is_running, 20)
    assert remote.requests == [("stop-hard", "all")]
    assert app.return_value == 0


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_run_detach_then_attach_pause_and_stop_hard(tmp_path: Path) -> None:
    """The whole path on a real run: detach, attach the app, pause a member through the
    real supervisor, quit (the run goes on), stop it hard from a shell, read the report."""
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        started = subprocess.run(
            cli_argv("run", "--detach", "3", "Review app.py"),
            cwd=tmp_path,
            env=stub_env(stub),
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert started.returncode == 0, started.stdout + started.stderr
        run_dir = next((tmp_path / ".horde" / "runs").iterdir())
        pid = supervisor_pid(run_dir)
        try:
            assert f"run {run_dir.name} started" in started.stdout
            assert f"horde-tui attach {run_dir.name}" in started.stdout
            assert run_state(run_dir) == "active"
            assert list((tmp_path / ".horde").glob("detached-*.log"))
            events = run_dir / "events.jsonl"
            spawned = wait_until(
                lambda: events.exists() and '"member-spawn"' in events.read_text(), 30
            )
            assert spawned, "no member spawned"
            source = AttachedSource(run_dir)
            source.poll()
            assert source.live and source.members
            source.close()
            app = HordeApp(attach=run_dir, config=AppConfig.deterministic(NOW))
            async with app.run_test(size=SIZE) as pilot:
                screen = app.screen
                assert isinstance(screen, RunScreen)
                await wait_for(pilot, lambda: _status(app, "member-1") == "running", 30)
                await wait_for(pilot, lambda: screen.table.selected_member == "member-1")
                await pilot.press("p")
                await wait_for(
                    pilot,
                    lambda: any(n.message == "paused member-1" for n in app._notifications),
                    20,
                )
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
                await pilot.press("enter")  # Detach
            assert app.return_value == 0
            assert run_state(run_dir) == "active", "quitting left the run going"
            status = cli(tmp_path, "status")
            reattach = f"re-attach: cd {tmp_path.resolve()} && horde-tui attach {run_dir.name}"
            assert reattach in status.stdout, status.stdout + status.stderr
            stopped = cli(tmp_path, "stop-hard")
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert wait_until(lambda: (run_dir / "REPORT.md").is_file(), 30), "no report"
            assert wait_until(lambda: run_state(run_dir) == "finished", 10)
        finally:
            if pid is not None and run_state(run_dir) == "active":
                os.killpg(pid, signal.SIGKILL)
    log = next((tmp_path / ".horde").glob("detached-*.log")).read_text()
    assert "[run-start]" in log, json.dumps(log[-2000:])
    assert reattach in log, "the run's log says where to re-attach"


def test_detached_argv_repeats_the_run_headless() -> None:
    from horde_tui.commands.cli import build_parser
    from horde_tui.launch.launch import detached_argv

    args = build_parser().parse_args(
        ["run", "--detach", "--model", "m/x", "--no-verifier", "3", "Review app.py"]
    )
    argv = detached_argv(args, None)
    assert argv[1:] == [
        "-m",
        "horde_tui",
        "run",
        "--headless",
        "3",
        "Review app.py",
        "--model",
        "m/x",
        "--no-verifier",
    ]
    plan = build_parser().parse_args(["plan", "--detach", "2", "parser; checker"])
    assert detached_argv(plan, plan.layers)[3:] == ["plan", "--headless", "2", "parser; checker"]
