"""What the snapshot test modules share: the two sizes, where the SVGs live, and the
six-member scene they start from."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot
from rich.color import Color, ColorSystem
from rich.segment import Segment
from rich.style import Style
from textual.color import Color as TextualColor
from textual.filter import LineFilter
from textual.pilot import Pilot

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.widgets.member_table import MemberTable
from support.app import NOW, FakeSupervisor, play_six, wait_for

SIZES = pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])


class SnapshotsUnderTests(pytest_textual_snapshot.SVGImageExtension):
    """Keep the SVGs in `tests/app/snapshots/<module>/` rather than syrupy's `__snapshots__`."""

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


class SixteenColours(LineFilter):
    """Every colour as a 16-colour terminal shows it: downgraded to the nearest of the 16
    (as the terminal's colour system does when the app writes to it), drawn back in
    true colour so the SVG shows what a person on that terminal sees."""

    @staticmethod
    @lru_cache(1024)
    def _style(style: Style) -> Style:
        def down(color: Color | None, foreground: bool) -> Color | None:
            if color is None:
                return None
            standard = color.downgrade(ColorSystem.STANDARD)
            return Color.from_triplet(standard.get_truecolor(foreground=foreground))

        return style + Style(color=down(style.color, True), bgcolor=down(style.bgcolor, False))

    def apply(self, segments: list[Segment], background: TextualColor) -> list[Segment]:
        return [
            Segment(text, self._style(style) if style else style, control)
            for text, style, control in segments
        ]


class OnThisTerminal(HordeApp):
    """The deterministic app drawn in the colours its terminal has: 16 under
    `TERM=xterm` (Rich picks the colour system from the environment, as on a real
    terminal), all of them otherwise."""

    def __init__(self, fake: FakeSupervisor) -> None:
        super().__init__(fake, config=AppConfig.deterministic(NOW))

    def get_line_filters(self) -> list[LineFilter]:
        filters = list(super().get_line_filters())
        if self.console.color_system == "standard":
            filters.append(SixteenColours())
        return filters


@pytest.fixture
def xterm(monkeypatch: pytest.MonkeyPatch) -> None:
    """`TERM=xterm` and nothing that says otherwise: a 16-colour terminal."""
    monkeypatch.setenv("TERM", "xterm")
    for name in ("COLORTERM", "NO_COLOR", "FORCE_COLOR", "TEXTUAL_COLOR_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
