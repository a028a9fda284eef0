"""The `horde-tui` command line as a person runs it: a real process in a working
directory, with the host's HORDE_* settings kept out (`cli`), a headless run on the
scripted stub model (`headless`), and a bounded read of its output (`wait_for_line`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from horde_tui.cli import main
from horde_tui.stubmodel import StubThread
from support.plans import HELPERS, horde

HEADLESS_PLAN = {
    "*": [{**horde("list"), "until_ok": 0, "hold_ms": 200}] * 400,
    **HELPERS,
}


def headless(
    tmp_path: Path, stub: StubThread, *extra_env: tuple[str, str], members: int = 3
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MODEL=stub.model,
        HORDE_API_BASE=stub.api_base,
        HORDE_API_KEY="stub",
        HORDE_ACTIVE_GRACE_MS="300",
        HORDE_GATEWAY_BACKOFF_MS="20",
        **dict(extra_env),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "horde_tui", "run", "--headless", str(members), "Review app.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout_s: float = 60) -> list[str]:
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not seen in: {''.join(seen)[-2000:]}")


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    return subprocess.run(
        [sys.executable, "-m", "horde_tui", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line_refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in-process on `argv` and return its refusal, checked to be one line."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
