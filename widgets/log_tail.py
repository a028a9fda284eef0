"""`LogTail`: the end of a growing text file (a member's log), drawn with the Line API.

The lines come from a `LineSource` (`horde_tui.store.linefile.LineIndex`) by number, so
only the rows on screen are ever read (one `pread` each, cached); `grew()` after the
source indexed what was appended moves the view along while it follows the tail. Long
lines are cut at the edge: a log is read by scrolling, not re-flowed, and the view is as
wide as the widest line it has drawn (it never reads lines only to measure them).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual.cache import LRUCache
from textual.strip import Strip

from horde_tui.widgets.tail_scroll import TailScrollView

MAX_WIDTH = 1000
"""Columns the view scrolls across at most, so one enormous line cannot make the
horizontal scrollbar useless."""


class LineSource(Protocol):
    @property
    def generation(self) -> int:
        """Moves on when the file was replaced and every line number changed meaning."""
        ...

    def __len__(self) -> int: ...

    def line(self, i: int) -> str: ...


class LogTail(TailScrollView, can_focus=True):
    """The lines of a `LineSource`, following its end until the user scrolls up."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"log-tail--spawn"}

    DEFAULT_CSS = """
    LogTail {
        background: $surface;
        & > .log-tail--spawn { color: $primary; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.source: LineSource | None = None
        self.count = 0
        self._generation = 0
        self._width = 0
        """Cells of the widest line drawn so far: the scrollable width."""
        self._source_generation = 0
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(512)

    def show(self, source: LineSource) -> None:
        """Tail another source (or the same one after it was replaced)."""
        self.source = source
        self._source_generation = source.generation
        self._generation += 1
        self._cache.clear()
        self.count = self._width = 0
        self.set_rows(0, 0)
        self.following = True
        self.grew()

    def grew(self) -> None:
        """Take in appended lines; a source that started over is shown afresh."""
        if self.source is None:
            return
        if self.source.generation != self._source_generation:
            self.show(self.source)
            return
        count = len(self.source)
        if count == self.count:
            return
        self.count = count
        self.set_rows(self._width, count)
        if self.following:
            self.tail()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if self.source is None or index >= self.count:
            return Strip.blank(width, base)
        key = (self._generation, index)
        strip = self._cache.get(key)
        if strip is None:
            raw = self.source.line(index).expandtabs(4)
            style = (
                self.get_component_rich_style("log-tail--spawn") if raw.startswith("--- ") else ""
            )
            text = Text(raw, style, no_wrap=True, end="")
            text.stylize_before(base)
            strip = Strip(text.render(self.app.console), text.cell_len)
            self._cache[key] = strip
            if strip.cell_length > self._width and self._width < MAX_WIDTH:
                self._width = min(MAX_WIDTH, strip.cell_length)
                self.call_after_refresh(self._widen)
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _widen(self) -> None:
        self.set_rows(self._width, self.count)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
