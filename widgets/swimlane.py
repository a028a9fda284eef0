"""`Swimlane`: the run's lanes drawn with text, one line per lane, scrolling sideways.

The widget draws a `view.swimlane.SwimlaneLayout` it is handed (it reads no files).
It uses the Line API (`ScrollView.render_line`), so a repaint costs the lines in view:
each lane's line is built once per layout and cached, and a frame crops it to the
viewport. The lane labels stay put on the left while the marks scroll under them, so
a lane can be followed at 80 columns. Like the event log it follows the tail: while
the view is at the right edge, new marks scroll into view; once the user scrolls left
it stays put until they scroll back to the edge. Mark colours are component classes
styled with theme variables.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from horde_tui.view.cells import cell_len, clip, pad
from horde_tui.view.swimlane import LaneLine, SwimlaneLayout

RAIL = "─"
"""Drawn between a lane's first and last mark: the member's span of activity."""
GUTTER = " │ "


class Swimlane(ScrollView, can_focus=True):
    """One text line per lane; marks at the columns the layout chose."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "swimlane--label",
        "swimlane--rail",
        "swimlane--phase",
        "swimlane--lifecycle",
        "swimlane--idea",
        "swimlane--finding",
        "swimlane--review",
        "swimlane--refuted",
        "swimlane--refusal",
        "swimlane--answer",
        "swimlane--entity",
        "swimlane--action",
    }

    DEFAULT_CSS = """
    Swimlane {
        height: 1fr;
        & > .swimlane--label { color: $text; text-style: bold; }
        & > .swimlane--rail { color: $text-muted; }
        & > .swimlane--phase { color: $primary; text-style: bold; }
        & > .swimlane--lifecycle { color: $text-muted; }
        & > .swimlane--idea { color: $primary; }
        & > .swimlane--finding { color: $success; text-style: bold; }
        & > .swimlane--review { color: $success; }
        & > .swimlane--refuted { color: $error; }
        & > .swimlane--refusal { color: $error; }
        & > .swimlane--answer { color: $text-warning; text-style: bold; }
        & > .swimlane--entity { color: $text; }
        & > .swimlane--action { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.layout_shown = SwimlaneLayout((), 0, 0)
        self._lines: dict[int, tuple[Strip, Strip]] = {}
        """Lane index -> (label strip, whole marks strip), built once per layout."""
        self.following = True
        """Keep the newest marks in view (off while the user looks further left)."""

    @property
    def label_width(self) -> int:
        return self.layout_shown.label_width + len(GUTTER)

    def show(self, layout: SwimlaneLayout) -> None:
        self.layout_shown = layout
        self._lines.clear()
        self.virtual_size = Size(self.label_width + layout.width, len(layout.lanes))
        self.refresh()
        if self.following:
            self.call_after_refresh(self._to_newest)

    def _to_newest(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False, immediate=True)

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self.following = round(new_value) >= self.max_scroll_x

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= len(self.layout_shown.lanes):
            return Strip.blank(width, base)
        label, marks = self._lane(index)
        body_width = max(0, width - self.label_width)
        body = marks.crop(scroll_x, scroll_x + body_width).extend_cell_length(body_width, base)
        return Strip.join([label, body]).crop(0, width).apply_style(base)

    def _lane(self, index: int) -> tuple[Strip, Strip]:
        cached = self._lines.get(index)
        if cached is None:
            cached = self._lines[index] = self._build(self.layout_shown.lanes[index])
        return cached

    def _build(self, lane: LaneLine) -> tuple[Strip, Strip]:
        style = self._style
        width = self.layout_shown.label_width
        name = pad(clip(lane.label, width), width)
        label = Strip([Segment(name, style("label")), Segment(GUTTER, style("rail"))])
        segments: list[Segment] = []
        at = 0
        for n, mark in enumerate(lane.marks):
            gap = mark.x - at
            if gap > 0:
                segments.append(Segment((RAIL if n else " ") * gap, style("rail")))
            segments.append(Segment(mark.text, style(mark.kind)))
            at = mark.x + cell_len(mark.text)
        return label, Strip(segments, at)

    def _style(self, kind: str) -> Style:
        return self.get_component_rich_style(f"swimlane--{kind}", partial=True)
