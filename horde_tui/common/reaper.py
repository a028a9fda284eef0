"""Ending what a dead process left behind: a member's commands, a run's members.

A member leads its own session and its shell commands stay in that session (each in a
process group of its own, so a timeout still kills one command whole). Linux keeps a
session id allocated while any process is in the session, so "every process whose
session is the member's pid" names exactly what the member started, even after the
member died, and never an unrelated process that reused the pid.

Who ends what:
- the supervisor, when a member's process ends for any reason (a SIGKILL from outside
  included): that member's session (`end_session`);
- a member whose supervisor is gone: its own session, and paused siblings, which cannot
  act while stopped (`end_run`, stopped only);
- the gateway whose supervisor is gone (it is never paused): every member of the run
  with its session (`end_run`).

SIGKILL ends a stopped process too, so a paused member and its paused commands end
without being continued. Linux only (/proc); elsewhere nothing is found and nothing
is signalled. A command that leaves the session (`setsid`) is out of reach.
"""

from __future__ import annotations

import os
import signal
import time

from horde_tui.common.procfs import Stat, environ, processes

_POLL_S = 0.05
_KILL_ROUNDS_S = 2.0
"""How long SIGKILL is repeated on a session: a process forked between a scan and the
signal is found by the next scan."""


def session_pids(sid: int, spare: int | None = None) -> list[int]:
    """Live processes of session `sid`, except `spare`."""
    return [p.pid for p in processes() if p.session == sid and p.pid != spare]


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_session(sid: int, grace_s: float = 0.0, spare: int | None = None) -> int:
    """End every process of session `sid` (but `spare`); return how many there were.

    With `grace_s`, SIGTERM first (and SIGCONT, which a stopped process needs to act on
    it), SIGKILL for what is left after the grace; without, SIGKILL at once.
    """
    pids = session_pids(sid, spare)
    if not pids:
        return 0
    if grace_s > 0:
        _signal_all(pids, signal.SIGTERM)
        _signal_all(pids, signal.SIGCONT)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and session_pids(sid, spare):
            time.sleep(_POLL_S)
    deadline = time.monotonic() + _KILL_ROUNDS_S
    while (left := session_pids(sid, spare)) and time.monotonic() < deadline:
        _signal_all(left, signal.SIGKILL)
        time.sleep(_POLL_S)
    return len(pids)


def run_members(run: str, parent_pid: int) -> list[Stat]:
    """The session leaders that supervisor `parent_pid` started for `run`: members (and
    helpers), known by the `HORDE_RUN` and `HORDE_PARENT_PID` it gave them."""
    leaders = [p for p in processes() if p.session == p.pid and p.pid != os.getpid()]
    found = []
    for proc in leaders:
        env = environ(proc.pid)
        if env.get("HORDE_RUN") == run and env.get("HORDE_PARENT_PID") == str(parent_pid):
            found.append(proc)
    return found


def end_run(run: str, parent_pid: int, stopped_only: bool = False) -> int:
    """SIGKILL the members supervisor `parent_pid` started for `run`, each with its whole
    session; `stopped_only`: only the paused ones. Returns how many members."""
    members = [m for m in run_members(run, parent_pid) if not stopped_only or m.state == "T"]
    for member in members:
        end_session(member.pid)
    return len(members)
