"""Nothing of a run outlives its supervisor, and no command outlives its member.

A real headless supervisor, real gateway and member processes and real shell commands
(`sleep`), driven by the scripted stub model; the processes are killed with real
signals and the test watches /proc. Every command carries a tag unique to the test in
its command line, so the test finds its processes whatever group or session they are in.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import cli, start, wait_for_line
from support.processes import (
    alive,
    describe,
    kill_all,
    member_pids,
    new_tag,
    sleeper,
    state,
    tagged,
    wait_until,
)

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

# The processes a run leaves are the subject: its gateway is spawned as a user's is.
# Each test is a run killed and watched for seconds: `pytest -m slow`.
pytestmark = [pytest.mark.spawned_gateway, pytest.mark.slow]

GONE_S = 5.0
"""The promise: nothing of a run is alive 5 s after its supervisor's SIGKILL, paused or
not (the measured figure is about 2 s: the members' and the gateway's watchdogs poll
their parent every 2 s; `tests/benchmarks/bench_processes.py`)."""


def sigkill_and_time_the_end(proc: subprocess.Popen[str], pids: list[int]) -> float | None:
    """SIGKILL the supervisor; seconds until every one of `pids` is gone (None: not
    within `GONE_S`)."""
    os.kill(proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    proc.wait(10)
    if wait_until(lambda: not [p for p in pids if alive(p)], GONE_S):
        return time.monotonic() - killed
    return None


@pytest.mark.e2e
def test_a_paused_member_and_its_command_end_with_a_sigkilled_supervisor(
    tmp_path: Path,
) -> None:
    tag = new_tag()
    plan = {"*": [sleeper(tag, forked=True)]}
    pids: list[int] = []
    with StubThread(policy=AgentPolicy(plan)) as stub:
        proc, run_dir = start(tmp_path, stub, 3)
        try:
            # bash and its sleep for each of the three members
            assert wait_until(lambda: len(tagged(tag)) == 6, 60), describe(tagged(tag))
            members = member_pids(run_dir)
            paused = cli(tmp_path, "pause", "member-2")
            assert paused.stdout.strip() == "paused member-2", paused.stdout + paused.stderr
            assert wait_until(lambda: state(members["member-2"]) == "T", 20)
            assert wait_until(lambda: sum(state(p) == "T" for p in tagged(tag)) == 2, 20), describe(
                tagged(tag)
            )
            gateway = json.loads((run_dir / "gateway.json").read_text())["pid"]
            pids = [gateway, *members.values(), *tagged(tag)]
            assert len(pids) == 10
            pids += tagged(tag, wrappers=True)
            took = sigkill_and_time_the_end(proc, pids)
            left = [p for p in pids if alive(p)]
            assert took is not None, f"alive {GONE_S:g} s after the SIGKILL: {describe(left)}"
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_all([*pids, *tagged(tag)])


@pytest.mark.e2e
def test_a_sigkilled_member_takes_its_command_along_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    first, second = new_tag(), new_tag()
    plan = {"member-1": [sleeper(first, forked=True)], "member-2": [sleeper(second, forked=True)]}
    with StubThread(policy=AgentPolicy(plan)) as stub:
        proc, run_dir = start(tmp_path, stub, 2)
        try:
            assert wait_until(lambda: len(tagged(first, second)) == 4, 60)
            commands = tagged(first) + tagged(first, wrappers=True)
            siblings = tagged(second)
            victim = member_pids(run_dir)["member-1"]
            os.kill(victim, signal.SIGKILL)
            wait_for_line(proc, "[member-reset] member-1", 30)
            gone = wait_until(lambda: not [p for p in commands if alive(p)], GONE_S)
            assert gone, f"member-1's command outlived it: {describe(commands)}"
            assert proc.poll() is None, "the supervisor ended with the member"
            assert all(alive(p) for p in siblings), "member-2's command was killed too"
            # the run carries on: a fresh member-1 runs its command again
            assert wait_until(lambda: len(tagged(first)) == 2, 30), describe(tagged(first))
            assert member_pids(run_dir)["member-1"] != victim
            stopped = cli(tmp_path, "stop-hard")
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_all(tagged(first, second) + tagged(first, second, wrappers=True))
        assert wait_until(lambda: not tagged(first, second), GONE_S), describe(
            tagged(first, second)
        )


@pytest.mark.e2e
def test_thirteen_processes_end_within_seconds_of_the_supervisor_sigkill(
    tmp_path: Path,
) -> None:
    """The measured figure kept: gateway, six members and their six commands, all gone
    about 2 s after the supervisor's SIGKILL (bounded here by `GONE_S`)."""
    tag = new_tag()
    pids: list[int] = []
    with StubThread(policy=AgentPolicy({"*": [sleeper(tag, forked=False)]})) as stub:
        proc, run_dir = start(tmp_path, stub, 6)
        try:
            assert wait_until(lambda: len(tagged(tag)) == 6, 90), describe(tagged(tag))
            gateway = json.loads((run_dir / "gateway.json").read_text())["pid"]
            pids = [gateway, *member_pids(run_dir).values(), *tagged(tag)]
            assert len(pids) == 13
            pids += tagged(tag, wrappers=True)
            took = sigkill_and_time_the_end(proc, pids)
            left = [p for p in pids if alive(p)]
            assert took is not None, f"alive {GONE_S:g} s after the SIGKILL: {describe(left)}"
        finally:
            if proc.poll() is None:
                proc.kill()
            kill_all([*pids, *tagged(tag)])
