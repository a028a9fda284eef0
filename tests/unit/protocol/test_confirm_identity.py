"""Confirm mode's identity rule: a member cannot decide a command waiting for a person,
its own or another's, when member commands run without the bubblewrap sandbox (which
makes `.horde/` read-only to them).

As issue 11's rule for the ledger: the kernel's process tree says who asks. A member
process is a real child process with the environment a supervisor gives members, and
recorded as the run's member in `.processes.json`; what it runs (its `bash`) asks
`horde-tui approve` from inside its tree. The desk is a real `ConfirmDesk` over the
run's `control/`, served in a thread as the supervisor's loop serves it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.cli import cli, host_env
from support.processes import wait_until
from support.rundir import RunDir

from horde_tui.member.confirm import ConfirmGate
from horde_tui.member.tools import ToolOutput, WorkspaceTools
from horde_tui.protocol import controls
from horde_tui.store import identity
from horde_tui.supervisor.confirm import ConfirmDesk

pytestmark = pytest.mark.usefixtures("no_horde_env")

RUN = "20260102-120000-aaaa"
MEMBER_SHELL = """
import os, subprocess, sys, time
go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.02)
# The member's own `bash`: it asks to approve its own waiting command, then all.
for target in ("member-1", "all"):
    done = subprocess.run([sys.executable, "-m", "horde_tui", "approve", target],
                          capture_output=True, text=True)
    print(done.returncode, (done.stdout + done.stderr).strip(), flush=True)
"""


def test_a_member_cannot_approve_its_own_command_from_its_shell(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    run = RunDir(horde, RUN)
    run.event(0, "run-start", members=3)
    run.live(os.getpid())
    events: list[tuple[str, str | None, dict[str, object]]] = []
    desk = ConfirmDesk(
        run.path,
        lambda kind, member=None, **data: events.append((kind, member, data)),
        lambda name, pid: True,
    )
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            desk.serve()
            time.sleep(0.05)

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    tools = WorkspaceTools(tmp_path, confirm=ConfirmGate(run.path, "member-1"))
    out: list[ToolOutput] = []
    asking = threading.Thread(target=lambda: out.append(tools.bash("echo self-approved")))
    asking.start()
    go = tmp_path / "go"
    member = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SHELL, str(go)],
        cwd=tmp_path,
        env=host_env(HORDE_DIR=str(horde.resolve()), HORDE_RUN=RUN, HORDE_MEMBER="member-1"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        identity.record_processes(run.path, {"member-1": identity.proc_of(member.pid)})
        assert wait_until(lambda: desk.waits("member-1"), 10)
        go.touch()
        said, _ = member.communicate(timeout=60)
        lines = said.strip().splitlines()
        assert len(lines) == 2, said
        for line in lines:
            code, _, text = line.partition(" ")
            assert code == "1", line
            assert text.startswith("refused: the deciding process runs under member-1's"), line
            assert "identity rule" in text and "\n" not in text
        assert desk.waits("member-1") and not out, "the command still waits"

        person = cli(tmp_path, "approve", "member-1")  # a person, outside every member
        assert person.returncode == 0, person.stdout + person.stderr
        assert person.stdout == "allowed member-1: echo self-approved\n"
        asking.join(10)
        assert out and out[0].ok and "self-approved" in out[0].text
    finally:
        stop.set()
        if member.poll() is None:
            member.kill()
        member.wait(10)
        serving.join(10)
    decisions = [(m, d["decision"]) for k, m, d in events if k == "confirm-decision"]
    assert decisions == [("member-1", "allow")]


def test_a_swarm_refuses_a_decision_asked_from_inside_a_member(tmp_path: Path) -> None:
    """The swarm supervisor takes decisions for its hordes (`controls.perform`): the same
    rule, on the process that asked."""
    horde = tmp_path / ".horde"
    run = RunDir(horde, RUN)
    run.live(os.getpid())
    member = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env=host_env(HORDE_DIR=str(horde.resolve()), HORDE_RUN=RUN, HORDE_MEMBER="member-2"),
    )
    try:
        identity.record_processes(run.path, {"member-2": identity.proc_of(member.pid)})
        decided: list[tuple[str, str]] = []

        class Taker:
            def decide(self, action: str, target: str) -> str:
                decided.append((action, target))
                return f"allowed {target}"

        request = controls.new_request("approve", "h1:member-2")
        forged = controls.ControlRequest(**{**request.__dict__, "pid": member.pid})
        text = asyncio_run(controls.perform(Taker(), forged))  # type: ignore[arg-type]
        assert text.startswith("refused: the deciding process runs under member-2's"), text
        assert decided == []
        mine = controls.ControlRequest(**{**request.__dict__, "pid": os.getpid()})
        assert asyncio_run(controls.perform(Taker(), mine)) == "allowed h1:member-2"  # type: ignore[arg-type]
    finally:
        member.kill()
        member.wait(10)


def asyncio_run(coroutine: object) -> str:
    import asyncio

    return asyncio.run(coroutine)  # type: ignore[arg-type]
