"""`horde-tui share RUN|last [--out FILE]`: the document on standard output, or written
whole to FILE with one line naming it; bad input is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.rundir import FINISHED, RunDir, finished_run, several_runs

from horde_tui.commands.cli import main


@pytest.fixture
def project(in_dir: Path) -> Path:
    """A project whose one run has ended, with a post-mortem."""
    horde = in_dir / ".horde"
    finished_run(horde)
    (horde / "runs" / FINISHED / "POSTMORTEM.md").write_text("# Post-mortem\n\nmembers waited.\n")
    return in_dir


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line `share ARGV` is refused with (exit status 2, nothing on stdout)."""
    code = main(["share", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_share_last_prints_the_document(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["share", "last"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# horde-tui post-mortem of run {FINISHED}\n")
    assert "\n## Post-mortem\n\n### Post-mortem\n\nmembers waited.\n" in out
    assert out.endswith("\n## Masked\n\n_Nothing._\n")


def test_last_is_the_newest_run_that_has_ended_whatever_its_state(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newest finished run, though an interrupted one is listed after it; live and
    unstarted runs between them are passed over."""
    horde = in_dir / ".horde"
    several_runs(horde)  # 12:00 finished, 12:01 interrupted, then live and not started
    newest = RunDir(horde, "20260102-120500-ffff")
    newest.event(0, "run-start", members=3, model="openai/stub")
    newest.event(9, "run-end", outcome="solved", diagnosis="")
    (newest.path / "REPORT.md").write_text("# Report\n")
    assert main(["share", "last"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# horde-tui post-mortem of run 20260102-120500-ffff\n")


def test_share_out_writes_the_file_and_names_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["share", FINISHED, "--out", "issue.md"]) == 0
    out = capsys.readouterr().out
    assert out == "shared post-mortem: issue.md\n"
    assert "members waited." in (project / "issue.md").read_text()
    assert [p.name for p in project.iterdir() if p.name.startswith(".issue")] == []


def test_bad_input_is_one_line_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "no run named 20260102-120000-aaab" in refusal(capsys, "20260102-120000-aaab")
    assert "is a directory" in refusal(capsys, "last", "--out", str(project))
    assert "in no existing directory" in refusal(capsys, "last", "--out", "nowhere/x.md")
    assert not (project / "nowhere").exists()


def test_share_last_with_no_ended_run_is_refused(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "no run has ended in" in refusal(capsys, "last")
