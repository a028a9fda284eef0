"""`EventTail`: a run's `events.jsonl`, drawn with the Line API from an `EventView`.

A run of twelve members writes hundreds of thousands of events, so the widget holds no
lines of its own: the `EventView` (Textual-free, `horde_tui/view/events.py`) keeps an
offset index of the file and the facets of each event, and the widget formats only the
rows in view (`render_line`), caching each rendered row. The cost of a repaint follows
the viewport, not the file.

`catch_up()` takes in what was appended since the last call: a few ms for a thousand
events, done on the UI thread. A large backlog (attaching to a long run, or a log that
was replaced) is indexed in a thread worker instead, while the widget says it is
reading and touches the view not at all, so the screen never freezes on a big file.

It follows the tail until the user scrolls up; while not following it counts the events
that arrived ("N new lines") and follows again when scrolled to the bottom or asked to
(`follow()`). A filter of words picks actors and kinds (`EventFilter.parse`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip

from horde_tui.store.timestamps import epoch
from horde_tui.view.cells import pad
from horde_tui.view.events import EventFilter, EventView, event_parts
from horde_tui.widgets.tail_scroll import TailScrollView

WHO_WIDTH = 9
KIND_WIDTH = 12
BACKLOG_BYTES = 512 * 1024
"""Unindexed bytes beyond which catching up moves to a thread worker."""


def default_clock_text(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ts))


class EventTail(TailScrollView, can_focus=True):
    """The events of one `EventView`, filterable, following the tail."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "event-log--time",
        "event-log--who",
        "event-log--info",
        "event-log--good",
        "event-log--warn",
        "event-log--error",
    }

    DEFAULT_CSS = """
    EventTail {
        background: $surface;
        & > .event-log--time { color: $text-muted; }
        & > .event-log--who { color: $primary; text-style: bold; }
        & > .event-log--info { color: $text-muted; }
        & > .event-log--good { color: $success; }
        & > .event-log--warn { color: $text-warning; }
        & > .event-log--error { color: $error; text-style: bold; }
    }
    """

    class FollowChanged(Message):
        """Following, loading or the count of unseen lines changed (for an indicator)."""

        def __init__(self, log: EventTail) -> None:
            super().__init__()
            self.log = log

        @property
        def control(self) -> EventTail:
            return self.log

    def __init__(
        self,
        view: EventView,
        clock_text: Callable[[float], str] = default_clock_text,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.view = view
        self.clock_text = clock_text
        self.filter_text = ""
        self.loading = False
        """A worker is indexing a backlog: the view is not read until it is done."""
        self._count = 0
        """Rows the widget shows: the view's length as of the last catch-up."""
        self._width = 0
        """The widest row rendered so far: the virtual width grows as wide rows come into
        view, so the width is known without formatting every event of a long log."""
        self._again = False
        self._generation = 0
        """Bumped whenever the rows change meaning (filter, replaced log): cached rows die."""
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(1024)

    @property
    def new_lines(self) -> int:
        """Matching events that arrived while not following."""
        return self.view.new_since_pause

    @property
    def row_count(self) -> int:
        return self._count

    def row_text(self, row: int) -> str:
        """Row `row` as plain text (`who kind text`), for reading a row without rendering
        it (tests, and anything that quotes the log)."""
        p = event_parts(self.view.record(row), self.view.line_no(row))
        return f"{p.who} {p.label} {p.text}"

    # -- content ---------------------------------------------------------------------------

    def catch_up(self) -> None:
        """Take in what was appended to the log; follow it or count it."""
        if self.loading:
            self._again = True
            return
        if self.view.index.unread_bytes() > BACKLOG_BYTES:
            self.loading = True
            self._announce()
            self._load_backlog()
            return
        generation = self.view.generation
        added = self.view.refresh()
        self._took_in(added, generation)

    @work(thread=True, exclusive=True, group="event-log", exit_on_error=False)
    def _load_backlog(self) -> None:
        generation = self.view.generation
        added = self.view.refresh()
        self.app.call_from_thread(self._loaded, added, generation)

    def _loaded(self, added: int, generation: int) -> None:
        self.loading = False
        self._took_in(added, generation)
        self._announce()  # "reading" ends even when the file held nothing
        if self._again:
            self._again = False
            if self.filter_text:
                self.set_filter(self.filter_text)
            self.catch_up()

    def _took_in(self, added: int, generation: int) -> None:
        replaced = self.view.generation != generation
        if not added and not replaced:
            return
        if replaced:
            self._forget_rows()
        self._show_rows()

    def set_filter(self, text: str) -> None:
        """Show only the events whose actor and kind the words name (see the module)."""
        self.filter_text = text.strip()
        if self.loading:
            self._again = True  # applied once the worker is done with the view
            return
        view = self.view
        view.filter = EventFilter.parse(self.filter_text, view.actors(), view.kinds())
        self._forget_rows()
        self._show_rows()

    def follow(self) -> None:
        """Jump to the tail and keep following it."""
        self.following = self.view.follow = True
        self.tail()
        self._announce()

    def _show_rows(self) -> None:
        """Show the view's rows as they are now: size, tail, indicator, repaint."""
        self._count = len(self.view)
        self._resize()
        if self.following:
            self.tail()
        self._announce()
        self.refresh()

    def _forget_rows(self) -> None:
        self._generation += 1
        self._cache.clear()

    def _announce(self) -> None:
        self.post_message(self.FollowChanged(self))

    # -- scrolling ---------------------------------------------------------------------------

    def following_changed(self) -> None:
        self.view.follow = self.following
        self._announce()

    # -- rendering ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self._count or self.loading:
            return Strip.blank(width, base)
        key = (self._generation, index)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(index, base)
            self._cache[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _render_row(self, row: int, base: Style) -> Strip:
        """One row as segments built directly: a row is four fixed columns on one line,
        so rich's `Text` layout (wrapping, spans) would only cost time; new rows arrive
        on every wake of a busy run."""
        view = self.view
        line = view.line_no(row)
        p = event_parts(view.record(row), line, view.index.error(line))
        style = self.get_component_rich_style
        ts = epoch(p.ts)
        who = "run" if p.who == "parent" else p.who
        kind = p.label.removeprefix("member-")  # the who column names the member
        text = " ".join(p.text.split())
        segments = [
            Segment(
                self.clock_text(ts) if ts is not None else "--:--:--",
                base + style("event-log--time"),
            ),
            Segment(" ", base),
            Segment(pad(who, WHO_WIDTH), base + style("event-log--who")),
            Segment(" ", base),
            Segment(pad(kind, KIND_WIDTH), base + style(f"event-log--{p.level}")),
            Segment(" ", base),
            Segment(text, base),
        ]
        width = sum(cell_len(segment.text) for segment in segments)
        if width > self._width:
            self._width = width
            self.call_later(self._resize)
        return Strip(segments, width)

    def _resize(self) -> None:
        self.set_rows(self._width, self._count)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
