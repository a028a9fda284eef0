"""What the snapshot test modules share: the two sizes, where the SVGs live, and the
six-member scene they start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot
from textual.pilot import Pilot

from horde_tui.widgets.member_table import MemberTable
from support.app import FakeSupervisor, play_six, wait_for

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
