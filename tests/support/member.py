"""One real member process (`python -m horde_tui.member`) against a real gateway in
front of the scripted stub, in a prepared working directory: shared by the member,
member-resume, sandbox and sloppy-input tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import GatewayProcess

from horde_tui.store.store import HordeStore

RUN = "r1"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def prepare(workdir: Path) -> Path:
    (workdir / "app.py").write_text(
        "PASSWORD = 'hunter2'\n\ndef login(u, p):\n    return p == PASSWORD\n"
    )
    horde_dir = workdir / ".horde"
    HordeStore(horde_dir, "parent").ensure_run(RUN, "# Task\n\nReview app.py for secrets.\n")
    return horde_dir


def run_member(
    gw: GatewayProcess, workdir: Path, name: str, **env: str
) -> tuple[int, list[dict[str, Any]], str]:
    horde_dir = workdir / ".horde"
    proc = subprocess.run(
        [sys.executable, "-m", "horde_tui.member"],
        cwd=workdir,
        env=gw.member_env(horde_dir, RUN, name, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events, proc.stderr
