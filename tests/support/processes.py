"""Waiting on a condition from plain (non-pilot) tests: real processes and files.

One helper so every real-process test polls the same way: a bounded wait that says
whether the condition came true, never a bare sleep. Pilot tests use
`support.app.wait_for` instead, which yields to the app between checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable


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
