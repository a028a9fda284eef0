"""Real processes in tests: waiting on a condition, liveness, finding a run's processes.

One helper so every real-process test polls the same way: a bounded wait that says
whether the condition came true, never a bare sleep. Pilot tests use
`support.app.wait_for` instead, which yields to the app between checks.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def wait_until(predicate: Callable[[], object], timeout_s: float) -> bool:
    """Poll `predicate` every 50 ms until it is truthy (True) or `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped: a `.live` marker naming it
    is stale (the pid could be reused, but not within a test)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def alive(pid: int) -> bool:
    """Whether `pid` still runs: a zombie still answers kill(0), but it is gone for a test."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def children(*modules: str) -> list[int]:
    """This process's live children running one of `modules` (`python -m MODULE`)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if int(stat[1]) == os.getpid() and alive(int(entry)):
            if any(m.encode() in cmdline for m in modules):
                found.append(int(entry))
    return found


def sleeper(tag: str, *, forked: bool) -> dict[str, Any]:
    """A bash tool call that sleeps for ten minutes. `forked`: bash stays as the sleep's
    parent (two processes); else bash execs the sleep (one)."""
    command = f"sleep {tag}; true" if forked else f"sleep {tag}"
    return {"tool": "bash", "args": {"command": command, "timeout": 600}}


def new_tag() -> str:
    """A sleep length near 600 s that no other test's command line contains."""
    return f"600.{random.randrange(10**8):08d}"


def tagged(*tags: str, wrappers: bool = False) -> list[int]:
    """Live (non-zombie) processes whose command line contains one of `tags`: the
    commands themselves, or with `wrappers` the bubblewrap processes around them (two per
    command when the sandbox runs, none without it)."""
    found = []
    wanted = [t.encode() for t in tags]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        is_wrapper = Path(cmdline.split(b"\0", 1)[0].decode(errors="replace")).name == "bwrap"
        if is_wrapper == wrappers and any(t in cmdline for t in wanted) and alive(int(entry)):
            found.append(int(entry))
    return found


def state(pid: int) -> str:
    """The process's /proc state letter (`T`: stopped), or "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def member_pids(run_dir: Path) -> dict[str, int]:
    """Each member's newest pid, from the run's `member-spawn` events."""
    pids = {}
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "member-spawn":
            pids[event["member"]] = event["pid"]
    return pids


def describe(pids: list[int]) -> str:
    """Each pid with its state and command line, for an assertion's message."""
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "?"
        out.append(f"{pid} [{state(pid)}] {cmd.strip()}")
    return "; ".join(out)


def kill_all(pids: list[int]) -> None:
    """Clean up after a failed assertion: nothing this test started may outlive it."""
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
