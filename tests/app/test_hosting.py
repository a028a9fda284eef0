"""`hosting.host` headless: what the shell reads when a run hosted here ends.

The supervisor is the suite's scripted fake (`support.app.FakeSupervisor`, held to the
real interface by test_view_source.py); hosting itself (signal handlers, the printed
lines) is the real code."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import FakeSupervisor

from horde_tui.app.hosting import host


def test_headless_ends_with_the_outcome_then_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every hosted run (`run`, `plan`, `resume`, the demo) ends with the same two lines:
    the outcome, then where its report is."""
    fake = FakeSupervisor(tmp_path, count=2)
    fake.finish()
    assert host(fake, "intro line", headless=True) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "intro line"
    at = out.index("outcome: finished: every member finished its work")
    assert out[at + 1] == f"report: {fake.run_dir / 'REPORT.md'}"
