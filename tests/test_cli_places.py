"""Bad places on the command line: output into a pipe nobody reads any more, and a
project folder that cannot be written. Each ends in one line (or, for the pipe, none)
with nothing left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import host_env


@pytest.mark.parametrize("argv", [["status"], ["schema"]], ids=" ".join)
def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    """`horde-tui status | head -0`: the reader is gone before the first write. The
    command ends as a Unix tool killed by SIGPIPE does (128 + 13), saying nothing."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "horde_tui", *argv],
        cwd=tmp_path,
        env=host_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # long before the interpreter has started
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""
