"""The app in 16 colours (`TERM=xterm`, common over SSH) and at its two sizes: red means
trouble, nothing a person needs drops off the edge.

Textual draws in true colour and the terminal's colour system downgrades each colour to
the nearest of its 16; these tests downgrade the styles the app paints the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.color import ColorSystem
from rich.style import Style
from support.app import FakeSupervisor, deterministic_app, play_six, wait_for
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from horde_tui.screens.member import MemberDetailScreen
from horde_tui.supervisor.forecast import Forecast
from horde_tui.widgets.member_table import MemberTable

RED = {1, 9}
"""Red and bright red in the 16-colour palette."""


def red_in_16_colours(style: Style) -> bool:
    color = style.color
    return color is not None and color.downgrade(ColorSystem.STANDARD).number in RED


def painted(table: MemberTable, text: str) -> list[Style]:
    """The styles of every painted segment of the table that shows `text`."""
    styles = []
    for y in range(table.size.height):
        for segment in table.render_line(y):
            if segment.text.strip() == text and segment.style is not None:
                styles.append(segment.style)
    return styles


async def six(pilot: Any, fake: FakeSupervisor) -> MemberTable:
    play_six(fake)
    table = pilot.app.query_one(MemberTable)
    await wait_for(pilot, lambda: table.row_count == 6)
    await wait_for(pilot, lambda: bool(painted(table, "unknown")))
    return table


async def test_footer_keys_and_an_unknown_cost_are_not_red_in_16_colours(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await six(pilot, fake)
        # The footer composes its keys after the bindings settle: under load, later.
        await wait_for(pilot, lambda: bool(app.screen.query(FooterKey)))
        keys = list(app.screen.query(FooterKey))
        for key in keys:
            style = key.get_component_rich_style("footer-key--key")
            assert not red_in_16_colours(style), f"footer key {key.key} is red: {style}"
        unknown = painted(table, "unknown")
        assert unknown and not any(map(red_in_16_colours, unknown)), unknown


async def test_the_forecast_shows_on_a_120_column_cost_line(tmp_path: Path) -> None:
    """With findings counted and a forecast, the cost line still fits 120 columns and
    keeps the forecast (it was cut off at the end)."""
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        await six(pilot, fake)
        fake.emit("forecast", at=200, **Forecast(6, 0.5, 3000, None, deadline_min=60).as_event())
        line = app.screen.query_one("#run-cost", Static)
        await wait_for(pilot, lambda: "forecast" in str(line.render()))
        line.counts = (3, 1)  # as the ledger count finds them: 3 findings, 1 accepted
        line._paint()
        await pilot.pause()
        text = str(line.render())
        assert "forecast" in text and "per accepted (1)" in text, text
        assert len(text) <= line.content_region.width, f"cut at {line.content_region.width}: {text}"


async def test_the_member_detail_footer_keeps_quit_at_80_columns(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        await six(pilot, fake)
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MemberDetailScreen))
        await pilot.pause()
        keys = list(app.screen.query(FooterKey))
        quit_key = next(k for k in keys if k.key == "q")
        assert quit_key.region.width and quit_key.region.right <= 80, quit_key.region
        over = [k.key for k in keys if k is not quit_key and k.region.overlaps(quit_key.region)]
        assert not over, f"q Quit is drawn over by {over}"
