"""Bad places on the command line: output into a pipe nobody reads any more, and a
project folder that cannot be written. Each ends in one line (or, for the pipe, none)
with nothing left behind."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli_argv, host_env

from horde_tui.launch.launch import RunOptions, check_launch


@pytest.mark.parametrize("argv", [["status"], ["schema"]], ids=" ".join)
def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    """`horde-tui status | head -0`: the reader is gone before the first write. The
    command ends as a Unix tool killed by SIGPIPE does (128 + 13), saying nothing."""
    proc = subprocess.Popen(
        cli_argv(*argv),
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


@pytest.fixture(params=["immutable", "file"])
def unwritable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a project folder, the folder a run cannot write): a project that is immutable
    (`chattr +i`, which stops root too, as a read-only mount does), or one whose
    `.horde` is a file. Skipped where `chattr` cannot mark it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n")
    if request.param == "file":
        (project / ".horde").write_text("not a folder\n")
        yield project, project / ".horde"
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(project)]).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        yield project, project
    finally:
        subprocess.run([chattr, "-i", str(project)])


@pytest.mark.parametrize(
    "argv",
    [
        ["init"],
        ["run", "2", "Review app.py", "--headless"],
        ["run", "2", "Review app.py", "--detach"],
        ["plan", "2", "parser; checker", "--headless"],
        ["mcp", "--member", "ext-1"],
    ],
    ids=["init", "run", "run --detach", "plan", "mcp"],
)
def test_a_folder_that_cannot_be_written_is_one_line_before_anything(
    unwritable: tuple[Path, Path], argv: list[str]
) -> None:
    project, folder = unwritable
    before = sorted(project.rglob("*"))
    env = host_env(HORDE_MODEL="openai/stub", HORDE_API_BASE="http://127.0.0.1:9/v1")
    done = subprocess.run(
        cli_argv(*argv),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""  # no run id, no "serving"
    (line,) = done.stderr.splitlines()
    assert f" {folder}" in line and "readable, writable file" not in line, line
    assert line.endswith(("fix its permissions", "move it aside")), line
    assert sorted(project.rglob("*")) == before
    assert not list(Path(tempfile.gettempdir()).glob(f"*{project.name}*.sock"))


def test_the_launch_form_is_refused_by_the_same_check(unwritable: tuple[Path, Path]) -> None:
    """The app's launch form checks with `launch.check_launch`: the same one line."""
    project, folder = unwritable
    check = check_launch(RunOptions("2", "Review app.py", model="openai/stub"), project / ".horde")
    (refusal,) = check.refusals
    assert refusal.field == "run" and f" {folder}" in refusal.message
    assert "Errno" not in refusal.message
