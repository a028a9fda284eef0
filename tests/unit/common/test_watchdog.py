"""`watchdog`: the parent-watching thread never takes the process's stop signals.

A signal sent to a process goes to any thread that does not block it. The kernel picks
another thread when the main one already has a signal pending, as it has right after the
supervisor's SIGCONT (sent before every SIGTERM, for a paused member). Python runs
handlers in the main thread only, when its blocking call returns: a member waiting on
its gateway would not see the stop until the model answered, and the AI Horde job it
waits on would not be cancelled (issue 28: within 2 s of a hard stop).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

PROGRAM = """
import signal, socket, sys
from horde_tui.common.watchdog import start_watchdog

def on_term(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGCONT, lambda s, f: None)
start_watchdog(__import__("os").getppid(), poll_s=0.05)
a, b = socket.socketpair()
print("waiting", flush=True)
try:
    a.recv(1)  # as a member waits on its gateway's answer
except KeyboardInterrupt:
    sys.exit(0)
"""


def test_a_stop_reaches_the_main_thread_while_it_waits_on_a_socket() -> None:
    slow = []
    for _ in range(15):
        proc = subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "waiting\n"
            time.sleep(0.1)  # the watchdog thread is polling
            proc.send_signal(signal.SIGCONT)  # what stop_hard sends first
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(2.0)
            except subprocess.TimeoutExpired:
                slow.append(proc.pid)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert slow == [], f"{len(slow)} of 15 processes did not act on SIGTERM within 2 s"
