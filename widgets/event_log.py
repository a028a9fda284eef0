"""`EventLog`: a run's event lines, drawn with the Line API.

A run of twelve members writes thousands of lines, so the widget keeps a capped list of
`EventLine`s and renders only the rows in view (`render_line`), caching each rendered
row. It follows the tail until the user scrolls up; while not following it counts the
lines that arrived ("N new lines") and follows again when scrolled to the bottom or
asked to (`follow()`). A filter shows only lines whose member or kind contains a text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

WHO_WIDTH = 9
KIND_WIDTH = 10


@dataclass(frozen=True)
class EventLine:
    """One line of the log: when, who (empty for the run itself), what kind, the text."""

    ts: float
    who: str
    kind: str
    text: str
    level: str = "info"
    """info, good, warn or error: picks the colour of the kind."""


def default_clock_text(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


class EventLog(ScrollView, can_focus=True):
    """A capped, filterable, tail-following log of `EventLine`s."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "event-log--time",
        "event-log--who",
        "event-log--info",
        "event-log--good",
        "event-log--warn",
        "event-log--error",
    }

    DEFAULT_CSS = """
    EventLog {
        background: $surface;
        & > .event-log--time { color: $text-muted; }
        & > .event-log--who { color: $primary; text-style: bold; }
        & > .event-log--info { color: $text-muted; }
        & > .event-log--good { color: $success; }
        & > .event-log--warn { color: $warning; }
        & > .event-log--error { color: $error; text-style: bold; }
    }
    """

    class FollowChanged(Message):
        """Following or the count of unseen lines changed (for an indicator)."""

        def __init__(self, log: EventLog, following: bool, new_lines: int) -> None:
            super().__init__()
            self.log = log
            self.following = following
            self.new_lines = new_lines

        @property
        def control(self) -> EventLog:
            return self.log

    def __init__(
        self,
        cap: int = 5000,
        clock_text: Callable[[float], str] = default_clock_text,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.cap = cap
        self.clock_text = clock_text
        self.following = True
        self.new_lines = 0
        self.filter_text = ""
        self._entries: list[EventLine] = []
        self._visible: list[EventLine] = []
        self._width = 0
        self._generation = 0
        """Bumped whenever `_visible` is rebuilt, so cached rows of the old list die."""
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(1024)

    # -- content ---------------------------------------------------------------------------

    @property
    def visible_lines(self) -> list[EventLine]:
        """The lines that pass the filter, oldest first (read-only by convention)."""
        return self._visible

    def add(self, lines: Iterable[EventLine]) -> None:
        """Append lines; follow them if following, else count them as new."""
        batch = list(lines)
        if not batch:
            return
        self._entries.extend(batch)
        shown = [line for line in batch if self._matches(line)]
        if len(self._entries) > self.cap + self.cap // 10:
            # Prune in chunks so the rebuild cost is paid once per cap/10 lines.
            del self._entries[: len(self._entries) - self.cap]
            self._rebuild()
        else:
            self._visible.extend(shown)
            self._grow_width(shown)
        self.virtual_size = Size(self._width, len(self._visible))
        if self.following:
            self._tail()
        elif shown:
            self.new_lines += len(shown)
            self._announce()
        self.refresh()

    def set_filter(self, text: str) -> None:
        """Show only lines whose member or kind contains `text` (case-insensitive)."""
        self.filter_text = text.strip()
        self._rebuild()
        self.virtual_size = Size(self._width, len(self._visible))
        if self.following:
            self._tail()
        self.refresh()

    def follow(self) -> None:
        """Jump to the tail and keep following it."""
        self.following = True
        self.new_lines = 0
        self._tail()
        self._announce()

    def _matches(self, line: EventLine) -> bool:
        needle = self.filter_text.lower()
        return not needle or needle in line.who.lower() or needle in line.kind.lower()

    def _rebuild(self) -> None:
        self._visible = [line for line in self._entries if self._matches(line)]
        self._width = 0
        self._grow_width(self._visible)
        self._generation += 1
        self._cache.clear()

    def _grow_width(self, lines: list[EventLine]) -> None:
        if lines:
            fixed = len(self.clock_text(0.0)) + WHO_WIDTH + KIND_WIDTH + 3
            self._width = max(self._width, *(fixed + cell_len(line.text) for line in lines))

    def _announce(self) -> None:
        self.post_message(self.FollowChanged(self, self.following, self.new_lines))

    # -- scrolling ---------------------------------------------------------------------------

    def _tail(self) -> None:
        """Show the last line now, and again after the next layout (a horizontal
        scrollbar that appears with a long line moves the end by one row)."""
        self.scroll_to(y=self.max_scroll_y, animate=False, force=True)
        self.call_after_refresh(self._retail)

    def _retail(self) -> None:
        if self.following and self.scroll_y != self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False, force=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        at_end = round(new_value) >= self.max_scroll_y
        if at_end and not self.following:
            self.following, self.new_lines = True, 0
            self._announce()
        elif new_value < old_value and not at_end and self.following:
            self.following = False
            self._announce()

    def on_resize(self, event: events.Resize) -> None:
        if self.following:
            self._tail()

    # -- rendering ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= len(self._visible):
            return Strip.blank(width, base)
        key = (self._generation, index)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_entry(self._visible[index], base)
            self._cache[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _render_entry(self, line: EventLine, base: Style) -> Strip:
        style = self.get_component_rich_style
        text = Text(no_wrap=True, end="")
        text.append(self.clock_text(line.ts), style("event-log--time"))
        text.append(" ")
        text.append(f"{line.who or 'run':<{WHO_WIDTH}}", style("event-log--who"))
        text.append(" ")
        text.append(f"{line.kind:<{KIND_WIDTH}}", style(f"event-log--{line.level}"))
        text.append(" ")
        text.append(" ".join(line.text.split()))
        text.stylize_before(base)
        return Strip(text.render(self.app.console), text.cell_len)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
