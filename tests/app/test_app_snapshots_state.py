"""Snapshot tests of the run screen's state line: the canary's wait, a clean stop's
countdown, and `synthesizing` while the deliverable helper runs.

The conventions of `test_app_snapshots.py` (whose fixture keeps the SVGs under
`tests/app/snapshots/<module>/`): the scripted `FakeSupervisor`, `AppConfig.deterministic`
(a frozen clock 3:20 into the run, no ticks, no animation), sizes 120x36 and 80x24.
Update with `pytest tests/app/test_app_snapshots_state.py --snapshot-update` and review the
SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.app import FakeSupervisor, deterministic_app, wait_for
from support.snapshots import SIZES, six_members, snapshots_under_tests  # noqa: F401
from textual.pilot import Pilot
from textual.widgets import Static


def status_shows(pilot: Pilot[Any], text: str) -> Any:
    line = pilot.app.screen.query_one("#run-status", Static)
    return wait_for(pilot, lambda: text in str(line.render()))


@SIZES
def test_canary_waiting(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The first seconds of a run. A reviewer should see the status line "discovery ·
    canary: member-1 alone until it answers (0:12) · 6 members: 1 running, 5 ..." and one
    running member (member-1, elapsed 0:12) above five that have not started."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        fake.emit("run-start", at=186, members=6, model=fake.settings.gateway.model)
        fake.emit("phase-start", at=187, phase="discovery")
        fake.spawn("member-1", at=188)
        await status_shows(pilot, "canary: member-1 alone until it answers (0:12)")

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_clean_stop_countdown(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The six-member run five seconds after `s`. A reviewer should see the status line
    in bold amber "discovery · stopping clean (stopped by user): 1:25 left · 6 members:
    ...", the stop-clean line at the end of the Events tab, and the Stop key greyed out
    in the footer."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        fake.stop_clean(grace_s=90)
        await status_shows(pilot, "stopping clean (stopped by user): 1:25 left")

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_synthesizing(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """Finalize, the deliverable helper at work, after a canary that needed its retry. A
    reviewer should see the status line "synthesizing: deliverable · canary ok after a
    retry · 3 members: 3 exited", three exited members (member-3 a verifier) and the
    phase lines in the Events tab."""
    fake = FakeSupervisor(tmp_path, count=3)

    async def before(pilot: Pilot[Any]) -> None:
        fake.emit("run-start", at=0, members=3, model=fake.settings.gateway.model)
        fake.emit("phase-start", at=1, phase="discovery")
        fake.spawn("member-1", at=2)
        fake.exit("member-1", 9, "model_error")
        fake.spawn("member-1", at=10)
        fake.emit("canary", "member-1", at=20, result="ok after a retry")
        fake.spawn("member-2", at=21)
        fake.spawn("member-3", at=21)
        for n, name in enumerate(fake.members):
            fake.exit(name, 150 + n, "completed", f"{name} is done.")
        fake.emit("phase-end", at=160, phase="discovery")
        fake.emit("phase-start", at=161, phase="finalize")
        fake.emit("phase-start", at=170, phase="deliverable")
        await status_shows(pilot, "synthesizing: deliverable · canary ok after a retry")

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)
