"""A horde's store server (`protocol/server.py`) as a real process, for tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from horde_tui.protocol.server import LISTENING
from support.cli import host_env

SERVER = [sys.executable, "-m", "horde_tui.protocol.server", "--dir"]


def start_server(root: Path, *, code: str = "") -> subprocess.Popen[str]:
    """A server of `root`, once it listens; `code` runs in it first (to make it fail)."""
    argv = [*SERVER, str(root)]
    if code:
        script = f"{code}\nimport sys\nfrom horde_tui.protocol.server import main\n"
        argv = [sys.executable, "-c", script + f"sys.exit(main({argv[3:]!r}))"]
    proc = subprocess.Popen(argv, env=host_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(LISTENING), line
    return proc


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=10)
