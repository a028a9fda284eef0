"""`reaper`: ending a session, and a dead supervisor's members, with real processes.

Every process here is a real `sleep` or `bash` the test starts in a session of its own;
the test checks /proc for what is left and that nothing outside the target was touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import alive, wait_until

from horde_tui.common.reaper import end_run, end_session, run_members, session_pids


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts: whatever is left is killed and reaped afterwards."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def leader(
    procs: list[subprocess.Popen[bytes]], script: str, **env: str
) -> subprocess.Popen[bytes]:
    """`bash -c script` leading a new session, as a member does."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True, env={**environ, **env})
    procs.append(proc)
    return proc


def test_end_session_kills_stopped_children_and_grandchildren_and_nothing_else(
    started: list[subprocess.Popen[bytes]],
) -> None:
    # two commands (one a subshell with a child) in groups of their own, as a member's are
    member = leader(started, "set -m; sleep 600 & (sleep 600; true) & wait")
    outsider = leader(started, "sleep 600")
    assert wait_until(lambda: len(session_pids(member.pid)) == 4, 10), session_pids(member.pid)
    inside = session_pids(member.pid)
    for pid in inside:
        os.kill(pid, signal.SIGSTOP)
    assert end_session(member.pid, spare=member.pid) == 3
    assert [p for p in inside if alive(p)] == [member.pid]
    assert alive(outsider.pid)
    assert end_session(member.pid) == 1
    assert not alive(member.pid) and alive(outsider.pid)


def test_end_session_with_a_grace_lets_a_stopped_command_handle_sigterm(
    started: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    said = tmp_path / "said"
    polite = leader(started, f"trap 'echo bye > {said}; exit 0' TERM; while :; do sleep 0.05; done")
    stubborn = leader(started, "trap '' TERM; while :; do sleep 0.05; done")
    assert wait_until(lambda: session_pids(polite.pid) and session_pids(stubborn.pid), 10)
    os.killpg(polite.pid, signal.SIGSTOP)
    end_session(polite.pid, grace_s=5)
    assert said.read_text() == "bye\n", "the stopped command was not continued to handle TERM"
    end_session(stubborn.pid, grace_s=0.3)  # ignores SIGTERM: SIGKILL after the grace
    assert polite.wait(5) == 0 and stubborn.wait(5) == -signal.SIGKILL


def test_end_run_ends_the_members_a_supervisor_started_for_the_run_only(
    started: list[subprocess.Popen[bytes]],
) -> None:
    mine = {"HORDE_RUN": "r1", "HORDE_PARENT_PID": "4000000"}
    paused = leader(started, "sleep 600; true", **mine)
    running = leader(started, "sleep 600; true", **mine)
    other_run = leader(started, "sleep 600; true", HORDE_RUN="r2", HORDE_PARENT_PID="4000000")
    other_parent = leader(started, "sleep 600; true", HORDE_RUN="r1", HORDE_PARENT_PID="4000001")
    assert wait_until(lambda: len(session_pids(paused.pid)) == 2, 10)
    assert sorted(p.pid for p in run_members("r1", 4000000)) == sorted([paused.pid, running.pid])
    os.killpg(paused.pid, signal.SIGSTOP)
    paused_command = session_pids(paused.pid, spare=paused.pid)
    # The kernel stops the group soon after killpg returns, not before: wait for it to show.
    assert wait_until(
        lambda: paused.pid in {p.pid for p in run_members("r1", 4000000) if p.state == "T"}, 5
    )

    assert end_run("r1", 4000000, stopped_only=True) == 1
    assert paused.wait(5) == -signal.SIGKILL
    assert not [p for p in paused_command if alive(p)], "the paused member's command is left"
    assert all(p.poll() is None for p in (running, other_run, other_parent))

    assert end_run("r1", 4000000) == 1
    assert running.wait(5) == -signal.SIGKILL
    assert other_run.poll() is None and other_parent.poll() is None
