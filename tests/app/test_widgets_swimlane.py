"""The swimlane widget alone: marks land on the cells the layout chose, whatever their text."""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import App, ComposeResult

from horde_tui.view.swimlane import LaneLine, Mark, SwimlaneLayout
from horde_tui.widgets.swimlane import GUTTER, Swimlane


class LaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Swimlane()


def at_cell(line: str, text: str) -> int:
    """The cell column where `text` starts in `line`."""
    return cell_len(line[: line.index(text)])


async def test_wide_marks_and_labels_keep_every_lane_on_the_layouts_columns() -> None:
    """Issue 12: the widget advanced by code points, so after a CJK or emoji mark the
    rest of its lane drew to the right of the columns every other lane used."""
    wide = "✗读取文件🚀"
    layout = SwimlaneLayout(
        (
            LaneLine(
                "member-1",
                "member-1 · 审计员",
                (Mark(0, wide, "refusal"), Mark(13, "F1", "finding")),
            ),
            LaneLine("member-2", "member-2 · auditor", (Mark(16, "F2", "finding"),)),
        ),
        width=18,
        label_width=cell_len("member-1 · 审计员"),
    )
    app = LaneApp()
    async with app.run_test(size=(80, 6)) as pilot:
        lane = app.query_one(Swimlane)
        lane.show(layout)
        await pilot.pause()
        first, second = (lane.render_line(y).text for y in range(2))
        body = layout.label_width + len(GUTTER)
        assert at_cell(first, GUTTER) == at_cell(second, GUTTER) == layout.label_width
        assert at_cell(first, wide) == body
        assert at_cell(first, "F1") == body + 13
        assert at_cell(second, "F2") == body + 16
        assert cell_len(first) == cell_len(second) == 80
