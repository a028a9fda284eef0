"""A dropped SSH connection does not end the run (issue 28, item 11).

The app hosts a real run (`horde-tui run 2 ...` in a tmux pane, the stub model playing
`HEADLESS_PLAN`); killing the tmux server hangs the pane's terminal up (SIGHUP), as an
SSH drop does. The app hands the run off as Detach does: a detached `horde-tui resume`
carries it on, and `attach` with no run id finds it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from support.app import NOW, wait_for
from support.cli import HEADLESS_PLAN, cli, cli_argv, stub_env
from support.processes import wait_until

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.common.watchdog import pid_alive
from horde_tui.screens.run import RunScreen
from horde_tui.store.runs import find_run, run_state, supervisor_pid
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.view.source import AttachedSource

TMUX = shutil.which("tmux")


def tmux(socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert TMUX is not None
    return subprocess.run([TMUX, "-L", socket, *args], capture_output=True, text=True, timeout=20)


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed: no terminal to hang up")
@pytest.mark.slow  # a real run in the app in tmux, handed off to a resume (20-60 s)
@pytest.mark.e2e
async def test_a_hangup_hands_the_hosted_run_off_and_attach_finds_it(tmp_path: Path) -> None:
    socket = f"horde-hangup-{os.getpid()}"
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        env = stub_env(stub, TERM="xterm-256color")
        script = tmp_path / "host.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        argv = shlex.join(cli_argv("run", "2", "Review app.py"))
        script.write_text(f"{exports}cd {shlex.quote(str(tmp_path))}\nexec {argv}\n")
        (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
        started = tmux(socket, "new-session", "-d", "-x", "120", "-y", "36", f"sh {script}")
        assert started.returncode == 0, started.stderr
        runs = tmp_path / ".horde" / "runs"
        run_dir: Path | None = None
        try:
            assert wait_until(lambda: runs.is_dir() and any(runs.iterdir()), 60), "no run"
            run_dir = next(runs.iterdir())
            events = run_dir / "events.jsonl"
            spawns = lambda: events.is_file() and events.read_text().count('"member-spawn"') >= 2  # noqa: E731
            assert wait_until(spawns, 60), "no members spawned"
            host = supervisor_pid(run_dir)
            assert host is not None and run_state(run_dir) == "active"

            tmux(socket, "kill-server")  # the terminal hangs up: SIGHUP to the app

            gone = wait_until(lambda: not pid_alive(host), 30)
            assert gone, "the app outlived its terminal"
            taken = wait_until(
                lambda: (pid := supervisor_pid(run_dir)) is not None and pid != host, 60
            )
            assert taken, "no background supervisor took the run"
            assert run_state(run_dir) == "active", "the hang-up ended the run"
            assert '"run-handoff"' in events.read_text()
            reattach = f"re-attach: cd {tmp_path.resolve()} && horde-tui attach {run_dir.name}"
            logs = list((tmp_path / ".horde").glob("detached-*.log"))
            said = lambda: any(reattach in log.read_text() for log in logs)  # noqa: E731
            assert wait_until(said, 30), "the run's log says where to re-attach"

            found = find_run(tmp_path / ".horde", None)
            assert found == run_dir, "attach with no id finds the only live run"
            app = HordeApp(attach=found, config=AppConfig.deterministic(NOW))
            async with app.run_test(size=(120, 36)) as pilot:
                screen = app.screen
                assert isinstance(screen, RunScreen)
                assert isinstance(screen.source, AttachedSource)
                await wait_for(pilot, lambda: screen.source.live, 30)
                await wait_for(pilot, lambda: screen.table.row_count == 2, 30)
                app.exit(0)
            status = cli(tmp_path, "status")
            assert run_dir.name in status.stdout, status.stdout + status.stderr
        finally:
            tmux(socket, "kill-server")
            if run_dir is not None and run_state(run_dir) == "active":
                cli(tmp_path, "stop-hard")
                wait_until(lambda: run_state(run_dir) != "active", 30)
                if run_state(run_dir) == "active" and (live := supervisor_pid(run_dir)):
                    os.killpg(live, signal.SIGKILL)
