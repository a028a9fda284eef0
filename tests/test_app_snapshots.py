"""Snapshot tests (pytest-textual-snapshot) of the app at 120x36 and 80x24.

Every scene hosts the scripted `FakeSupervisor` with `AppConfig.deterministic`: a frozen
clock (3:20 into the run), times shown in UTC, no file polling, no ticks, no animation,
no cursor blink. Update with `pytest tests/test_app_snapshots.py --snapshot-update` and
review the SVGs under `tests/snapshots/test_app_snapshots/` before committing them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot
from test_app_support import FakeSupervisor, deterministic_app, play_six, wait_for
from textual.pilot import Pilot

from horde_tui.screens.member import MemberDetailScreen
from horde_tui.screens.report import ReportScreen
from widgets.event_log import EventLog
from widgets.member_table import MemberTable

SIZES = pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])


class SnapshotsUnderTests(pytest_textual_snapshot.SVGImageExtension):
    """Keep the SVGs in `tests/snapshots/<module>/` rather than syrupy's `__snapshots__`."""

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(Path(test_location.filepath).parent / "snapshots" / test_location.basename)


@pytest.fixture(autouse=True)
def snapshots_under_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", SnapshotsUnderTests)


async def six_members(pilot: Pilot[Any], fake: FakeSupervisor) -> None:
    play_six(fake)
    table = pilot.app.query_one(MemberTable)
    await wait_for(
        pilot,
        lambda: table.row_count == 6 and str(table.get_cell("member-5", "resets")).strip() == "1",
    )


@SIZES
def test_live_run_with_six_members(
    snap_compare: Any, tmp_path: Path, size: tuple[int, int]
) -> None:
    """The run screen mid-run. A reviewer should see: the title with the run id and
    "DEMO MODEL"; a status line "discovery · 6 members: 4 running, 1 paused, 1 exited";
    six rows with member-1..6 (member-6 a verifier), statuses coloured (running green,
    paused amber, exited muted), each running member's tool summary, member-4's
    "(completed)", elapsed 3:18 for member-1 and a frozen 1:46 for member-4, cost
    "unknown" (amber) and resets 1 for member-5; the tabs Board..Files with Events
    active showing the run's lifecycle and tool lines; a footer of member keys."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_events_tab_not_following(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The Events tab (events.jsonl) after the user scrolled up. A reviewer should see
    the log scrolled away from its tail (earlier lines in view; time / member / kind /
    text columns; accepted writes in green, intents muted, the reset amber) and the
    status line below it reading "3 new lines · f to follow" in amber."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        for i in range(20):
            who = ("member-1", "member-2", "member-5")[i % 3]
            fake.write(who, 140 + i, "idea", f"#{i + 4}", f"ok #{i + 4} idea: check src/db.py:{i}")
        fake.emit("phase-start", at=161, phase="discovery")
        log = pilot.app.query_one(EventLog)
        await wait_for(pilot, lambda: log.row_text(log.row_count - 1).endswith("discovery"))
        log.focus()
        await pilot.press("pageup")
        await wait_for(pilot, lambda: not log.following)
        fake.write("member-6", 185, "verify", "F1", "ok F1 verified · reproduced")
        fake.emit("member-reset", "member-3", at=186, cause="stalled", resets=1)
        await wait_for(pilot, lambda: log.new_lines == 3)

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_member_detail(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """member-2's detail screen. A reviewer should see "member-2 · member · running" in
    green, its attempt, elapsed 3:08, turns 2, tokens 3.1k with the in/out split, cost
    $0.009, pid 4002, its log and transcript paths; under "Now" "read src/api/users.py";
    under "Last message" "Claimed #3: the users query builder."; under "Exit" "(still
    running)"; and a footer with esc Back."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, MemberDetailScreen))

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)


@SIZES
def test_report_screen(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    """The report screen that opens when the run ends. A reviewer should see the title
    line "<run id> · REPORT.md", the report rendered as Markdown (a "Report" heading and
    one sentence), and a footer where r (already shown) and m (no POSTMORTEM.md) are
    greyed out while d Deliverable is available."""
    fake = FakeSupervisor(tmp_path)

    async def before(pilot: Pilot[Any]) -> None:
        await six_members(pilot, fake)
        fake.finish(documents=("DELIVERABLE.md",))
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))
        await wait_for(
            pilot, lambda: "REPORT.md" in str(pilot.app.screen.query_one("#report-title").render())
        )

    assert snap_compare(deterministic_app(fake), terminal_size=size, run_before=before)
