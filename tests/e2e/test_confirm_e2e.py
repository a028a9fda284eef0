"""Confirm mode end to end: a real run (gateway and member processes on the stub model)
whose member waits for decisions a person makes from another shell with
`horde-tui approve` and `horde-tui refuse`, longer than the stall limit."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli, cli_argv
from support.plans import horde, lifecycle, run_supervisor, settings
from support.processes import wait_until

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.setup import RunRequest

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}}


def waiting_command(horde_dir: Path) -> str | None:
    """The command of the confirm request waiting in the live run's `control/`."""
    for path in horde_dir.glob("runs/*/control/req-*.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("action") == "confirm":
            return str(data["command"])
    return None


def test_a_member_waits_for_approve_and_refuse_from_another_shell(
    tmp_path: Path, no_horde_env: None
) -> None:
    plans = {
        "*": [
            bash("echo first-command-ran"),
            bash("touch refused.txt"),
            horde("list"),
            {"say": "Done."},
        ]
    }
    out: list[Any] = []
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(
            stub,
            confirm=True,
            stall_ms=1500,
            deliverable=False,
            postmortem=False,
            repair_rounds=0,
            sandbox="off",
        )
        runner = threading.Thread(
            target=lambda: out.append(run_supervisor(tmp_path, RunRequest("Review", 1), cfg)),
            daemon=True,
        )
        runner.start()
        horde_dir = tmp_path / ".horde"
        assert wait_until(lambda: waiting_command(horde_dir) == "echo first-command-ran", 90)
        time.sleep(3.0)  # a slow person: twice the stall limit, and no reset follows
        status = cli(tmp_path, "status", "member-1")
        assert "bash (awaiting approval: horde-tui approve/refuse)" in status.stdout, status
        approved = cli(tmp_path, "approve", "member-1")
        assert approved.returncode == 0, approved.stdout + approved.stderr
        assert approved.stdout == "allowed member-1: echo first-command-ran\n"
        assert wait_until(lambda: waiting_command(horde_dir) == "touch refused.txt", 60)
        refused = cli(tmp_path, "refuse")
        assert refused.returncode == 0, refused.stdout + refused.stderr
        assert refused.stdout == "refused member-1: touch refused.txt\n"
        runner.join(180)
        nothing = cli(tmp_path, "approve")
    summary, sup, _ = out[0]
    kinds = lifecycle(sup.run_dir)
    assert ("member-reset", "member-1") not in kinds, kinds
    assert [k for k in kinds if k[0].startswith("confirm-")] == [
        ("confirm-request", "member-1"),
        ("confirm-decision", "member-1"),
        ("confirm-request", "member-1"),
        ("confirm-decision", "member-1"),
    ]
    assert not (tmp_path / "refused.txt").exists()
    transcript = next((sup.run_dir / "sessions" / "member-1").glob("*.jsonl")).read_text()
    assert "first-command-ran" in transcript
    assert "refused by the user: touch refused.txt" in transcript
    assert summary.members[0].exit_cause == "completed", summary.diagnosis
    assert nothing.returncode == 1 and "no run is live" in nothing.stderr


def test_a_headless_run_on_a_terminal_asks_y_n_a_there(tmp_path: Path) -> None:
    """The run's stdin is a terminal (a pty): each command is asked there, as horde.py
    asks; `y` runs it, anything else (`n`, Enter) refuses it."""
    plans = {
        "*": [
            bash("echo asked-on-the-terminal"),
            bash("touch never.txt"),
            horde("post", text="ran what was allowed"),  # a run that wrote nothing fails
            {"say": "Done."},
        ]
    }
    controller, terminal = pty.openpty()
    with StubThread(policy=AgentPolicy(plans)) as stub:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
        env.update(
            HORDE_MODEL=stub.model,
            HORDE_API_BASE=stub.api_base,
            HORDE_API_KEY="stub",
            HORDE_DELIVERABLE="off",
            HORDE_POSTMORTEM="off",
            HORDE_REPAIR_ROUNDS="0",
            HORDE_SANDBOX="off",
            HORDE_GATEWAY_BACKOFF_MS="20",
        )
        proc = subprocess.Popen(
            cli_argv("run", "--headless", "--confirm", "1", "Review"),
            cwd=tmp_path,
            env=env,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(terminal)
        said: list[str] = []  # stderr as it comes: a person answers once asked
        fd = proc.stderr.fileno()  # type: ignore[union-attr]
        reader = threading.Thread(
            target=lambda: said.extend(c.decode() for c in iter(lambda: os.read(fd, 4096), b""))
        )
        reader.start()
        try:
            assert wait_until(lambda: "wants to run: echo asked" in "".join(said), 90), said
            os.write(controller, b"y\n")
            assert wait_until(lambda: "wants to run: touch never.txt" in "".join(said), 60), said
            os.write(controller, b"n\n")
            # Not communicate(): the reader thread owns stderr.
            out = proc.stdout.read()  # type: ignore[union-attr]
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
            reader.join(10)
            os.close(controller)
    err = "".join(said)
    assert "member-1 wants to run: echo asked-on-the-terminal (in " in err, err
    assert "allowed member-1: echo asked-on-the-terminal" in err, err
    assert "refused member-1: touch never.txt" in err, err
    assert "[confirm-decision] member-1 decision=allow by=terminal" in out, out[-3000:]
    assert not (tmp_path / "never.txt").exists()
    assert proc.returncode == 0, out[-2000:] + err[-2000:]
