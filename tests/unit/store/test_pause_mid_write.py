"""A member paused while it holds `.horde/.lock` stops only once it has released it.

The parent pauses a member with SIGTSTP; the member stops itself (SIGSTOP). Stopped
inside a write, it would keep `.lock` until resumed, and every other member's write
would wait the lock timeout and be refused, for as long as the pause lasts. So the stop
waits for the release (a few milliseconds), then happens. Real processes, a real lock,
real signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from horde_tui.store.lock import HordeLock, LockTimeoutError
from horde_tui.store.paths import HordePaths

CHILD = """
import signal, sys, time
from pathlib import Path
from horde_tui.member.__main__ import on_pause
from horde_tui.store.lock import HordeLock
from horde_tui.store.paths import HordePaths

signal.signal(signal.SIGTSTP, on_pause)
paths = HordePaths(Path(sys.argv[1]))
paths.ensure()
with HordeLock(paths, "member-1").held(timeout=30):
    print("locked", flush=True)
    release = Path(sys.argv[2])
    while not release.exists():
        time.sleep(0.01)
print("released and resumed", flush=True)
"""


def state_of(pid: int) -> str:
    """The process state letter from /proc (`T`: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def wait_for_state(pid: int, want: str, within_s: float) -> str:
    deadline = time.monotonic() + within_s
    while True:
        state = state_of(pid)
        if state == want or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def test_a_pause_inside_a_write_waits_for_the_release(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    release = tmp_path / "release"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(release)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        os.kill(child.pid, signal.SIGTSTP)
        time.sleep(0.3)
        assert state_of(child.pid) != "T", "stopped while holding .lock"
        release.touch()
        assert wait_for_state(child.pid, "T", 10) == "T", "the pause never happened"
        paths = HordePaths(root)
        try:
            with HordeLock(paths, "member-2").held(timeout=5):
                pass
        except LockTimeoutError as exc:
            raise AssertionError(f"the paused member still holds .lock: {exc}") from None
        os.kill(child.pid, signal.SIGCONT)
        out, _ = child.communicate(timeout=30)
        assert out.strip() == "released and resumed"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_pause_outside_a_write_is_immediate(tmp_path: Path) -> None:
    code = (
        "import signal, time\n"
        "from horde_tui.member.__main__ import on_pause\n"
        "signal.signal(signal.SIGTSTP, on_pause)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGTSTP)
        assert wait_for_state(child.pid, "T", 5) == "T"
    finally:
        child.kill()
        child.wait()
