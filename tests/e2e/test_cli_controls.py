"""The control subcommands from another shell, on a real headless run (stub model):
`status [target]` shows only the targeted members, `stop` is `stop-hard`, and headless
output ends with the post-mortem text when one was written."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import HEADLESS_PLAN, StoppedClean, cli, headless, wait_for_line

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # whole real runs: `pytest -m slow`


def member_lines(text: str) -> list[str]:
    """The member names `status` printed a line for, in order."""
    return [line.split()[0] for line in text.splitlines() if line.startswith("  member-")]


def test_status_takes_a_target_and_stop_is_stop_hard(tmp_path: Path) -> None:
    with StubThread(policy=AgentPolicy(HEADLESS_PLAN)) as stub:
        proc = headless(tmp_path, stub)
        try:
            wait_for_line(proc, "[member-spawn] member-3")
            whole = cli(tmp_path, "status")
            assert member_lines(whole.stdout) == ["member-1", "member-2", "member-3"]
            one = cli(tmp_path, "status", "member-2")
            assert one.returncode == 0, one.stdout + one.stderr
            assert one.stdout.startswith("run ")
            assert member_lines(one.stdout) == ["member-2"], one.stdout
            listed = cli(tmp_path, "status", "1,3")
            assert member_lines(listed.stdout) == ["member-1", "member-3"], listed.stdout
            bad = cli(tmp_path, "status", "member-99")
            assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1

            member = cli(tmp_path, "stop", "member-3")
            assert member.returncode == 0, member.stdout + member.stderr
            assert member.stdout.strip() == "stopped member-3"
            wait_for_line(proc, "[member-exit] member-3")
            whole_run = cli(tmp_path, "stop")
            assert whole_run.returncode == 0, whole_run.stdout + whole_run.stderr
            assert whole_run.stdout.startswith("stopped member-1")
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "[stop-hard]" in out and "whole_run=True" in out, out[-3000:]
    assert "outcome: stopped by user: stopped hard by the user" in out, out[-3000:] + err
    assert "post-mortem" not in out.lower(), "a hard stop runs no post-mortem"
    assert cli(tmp_path, "stop").returncode == 1  # nothing live any more


def test_headless_output_ends_with_the_post_mortem_text(stopped_clean: StoppedClean) -> None:
    run = stopped_clean
    assert "clean stop requested" in run.stopped.stdout, run.stopped.stdout + run.stopped.stderr
    assert (run.run_dir / "POSTMORTEM.md").is_file(), run.out[-3000:] + run.err[-3000:]
    # What the run screen's canary line and countdown read (attached runs from disk).
    assert "[canary] member-1 result=ok" in "".join(run.seen), "".join(run.seen)[-3000:]
    extended = [line for line in run.out.splitlines() if "[stop-extended]" in line]
    assert extended and "grace_s=0.3" in extended[0], run.out[-3000:]
    tail = run.out[run.out.index("outcome: stopped by user") :]
    assert "post-mortem:" in tail and "The members did not duplicate work." in tail, tail
