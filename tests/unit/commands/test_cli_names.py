"""Bad names on the command line: a run id that names no run is bad usage (exit status
2) in every command that takes one, said in one line naming the nearest ids, and leaves
nothing behind (`store.runs.resolve_run`, the one resolver)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from support.rundir import FINISHED, finished_run

from horde_tui.commands.cli import main

TYPO = FINISHED[:-1] + "b"  # one letter off the run that exists


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one finished run, as the working directory."""
    monkeypatch.delenv("HORDE_DIR", raising=False)
    monkeypatch.delenv("HORDE_RUN", raising=False)
    monkeypatch.chdir(tmp_path)
    finished_run(tmp_path / ".horde")
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--run", TYPO],
        ["attach", TYPO],
        ["replay", TYPO],
        ["fork", TYPO, "--at", "E1"],
        ["export", TYPO],
        ["resume", TYPO],
        ["finalize", TYPO],
        ["stop-hard", "--run", TYPO],
        ["stop", "--run", TYPO],
        ["stop-clean", "--run", TYPO],
        ["pause", "--run", TYPO],
        ["reset", "member-1", "--run", TYPO],
        ["approve", "--run", TYPO],
        ["mcp", "--run", TYPO, "--member", "ext-1"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_an_unknown_run_id_is_bad_usage_naming_the_nearest(
    project: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    gc.collect()  # an earlier test's garbage warns on stderr when collected: not here
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.strip().splitlines()
    assert f"no run named {TYPO} " in line or f"no run or swarm named {TYPO} " in line, line
    assert f"(nearest: {FINISHED})" in line, line
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before, "left behind"


def test_a_transcript_that_is_not_a_file_is_bad_usage(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["transcript", TYPO]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"horde-tui transcript: {TYPO} is not a file"
