"""`run --api-key KEY --detach`: the key reaches the gateway and nothing else (issue 12, 11).

Any local user can read any process's command line (`ps`, /proc/PID/cmdline), for the
whole life of the process; the detached supervisor lives as long as the run. So the key
goes to it through its environment, as the app's hosted detach does, and from there to
the gateway alone: members run model-chosen commands and never hold it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.cli import HEADLESS_PLAN, cli, cli_argv, stub_env
from support.processes import wait_until

from horde_tui.launch.launch import RunOptions, detached_argv, detached_env
from horde_tui.store.runs import run_state, supervisor_pid
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy


def proc_file(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (members and the gateway of a run)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_file(int(entry.name), "stat").decode(errors="replace")
            fields = stat.rpartition(")")[2].split()
            if len(fields) > 1 and fields[1] == str(pid):
                found.append(int(entry.name))
    return found


@pytest.mark.e2e
def test_a_detached_runs_api_key_is_on_no_command_line_and_in_no_member(tmp_path: Path) -> None:
    secret = "sk-detach-" + os.urandom(8).hex()
    # The stub takes only this key, so the run's calls succeed only if the gateway has it.
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN), token=secret) as stub:
        env = stub_env(stub)
        del env["HORDE_API_KEY"]  # the key is the flag's alone
        argv = ["run", "--detach", "--api-key", secret, "2", "Review app.py"]
        started = subprocess.run(
            cli_argv(*argv),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert started.returncode == 0, started.stdout + started.stderr
        run_dir = next((tmp_path / ".horde" / "runs").iterdir())
        pid = supervisor_pid(run_dir)
        assert pid is not None
        try:
            key = secret.encode()
            assert key not in proc_file(pid, "cmdline"), "the key is readable in ps"
            events = run_dir / "events.jsonl"
            assert wait_until(
                lambda: events.exists() and events.read_text().count('"member-spawn"') >= 2, 60
            )
            children = {c: proc_file(c, "cmdline") for c in children_of(pid)}
            members = [c for c, cmd in children.items() if b"horde_tui.member" in cmd]
            (gateway,) = [c for c, cmd in children.items() if b"horde_tui.gateway" in cmd]
            assert members
            for member in members:
                assert key not in proc_file(member, "cmdline")
                assert key not in proc_file(member, "environ"), "a member holds the key"
            assert key not in proc_file(gateway, "cmdline")
            assert wait_until(
                lambda: any(
                    r.headers.get("authorization") == f"Bearer {secret}" for r in stub.stub.requests
                ),
                60,
            ), "the gateway never called the model with the key"
        finally:
            stopped = cli(tmp_path, "stop-hard")
            if stopped.returncode != 0 and run_state(run_dir) == "active":
                os.killpg(pid, signal.SIGKILL)
            wait_until(lambda: run_state(run_dir) != "active", 30)


def test_the_detached_command_line_leaves_the_key_to_the_environment() -> None:
    """The app's launch form detaches through the same two calls as `run --detach`."""
    options = RunOptions("2", "Review app.py", model="m/x", api_key="sk-form")
    assert "sk-form" not in " ".join(detached_argv(options, None))
    env = detached_env(options)
    assert env is not None and env["HORDE_API_KEY"] == "sk-form"
    assert env["PATH"] == os.environ["PATH"]  # the rest is inherited
    assert detached_env(RunOptions("2", "Review app.py")) is None
