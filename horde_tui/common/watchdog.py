"""Exit when the parent is gone, even after a SIGKILL or an OOM kill of the parent.

Members and the gateway are children of the supervisor. A parent killed with SIGKILL
cannot clean up, and orphans would keep spending tokens. So each child polls the
parent's pid every two seconds and ends itself (and, for a process-group leader, its
own children) when the parent no longer exists; what else it ends first (a member's
commands, a run's paused members) is in `reaper.py`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable

from horde_tui.common.inputs import whole_number

POLL_S = 2.0

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGTSTP, signal.SIGCONT}
"""Blocked in the watchdog's thread, so the kernel hands them to the main thread even when
that one has a signal pending (the SIGCONT sent before each SIGTERM)."""


def pid_alive(pid: int) -> bool:
    """True while a process with `pid` exists (one we may not signal still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parent_alive(pid: int) -> bool:
    """True while `pid` exists and is still our parent (a reused pid is not our parent)."""
    return os.getppid() == pid and pid_alive(pid)


def exit_group() -> None:
    """Take the shell children along: signal our own process group if we lead it."""
    try:
        if os.getpgrp() == os.getpid():
            # Only the main thread may set a handler; from the watchdog's thread the
            # process's own handler (members and the gateway have one) takes the SIGTERM.
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.killpg(os.getpid(), signal.SIGTERM)
    finally:
        os._exit(75)


def start_watchdog(
    parent_pid: int | None, on_gone: Callable[[], None] = exit_group, poll_s: float = POLL_S
) -> threading.Thread | None:
    """Poll `parent_pid` in a daemon thread; call `on_gone` once it is gone."""
    if not parent_pid:
        return None

    def watch() -> None:
        # The process's handlers run in its main thread: a stop signal the kernel gave
        # this thread would wait there until the main thread's blocking call returned.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        stop = threading.Event()
        while not stop.wait(poll_s):
            if not parent_alive(parent_pid):
                on_gone()
                return

    thread = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    thread.start()
    return thread


def parent_pid_from_env() -> int | None:
    raw = os.environ.get("HORDE_PARENT_PID", "")
    return whole_number(raw)
