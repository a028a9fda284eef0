"""`hosting.host` headless: what the shell reads when a run hosted here ends.

The supervisor is the suite's scripted fake (`support.app.FakeSupervisor`, held to the
real interface by test_view_source.py); hosting itself (signal handlers, the printed
lines) is the real code."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import FakeSupervisor

from horde_tui.hosting import host


@pytest.mark.parametrize("report", [True, False])
def test_headless_names_the_report_unless_the_caller_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], report: bool
) -> None:
    """`report=False` (the demo, which names its report itself) leaves out the
    `report:` line whichever way the run is hosted; the outcome line stays."""
    fake = FakeSupervisor(tmp_path, count=2)
    fake.finish()
    assert host(fake, "intro line", headless=True, report=report) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "intro line"
    assert "outcome: finished: every member finished its work" in out
    assert (f"report: {fake.run_dir / 'REPORT.md'}" in out) is report
