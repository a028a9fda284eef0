"""`TranscriptView`: a member's transcript paged inline, messages folded or expanded.

A transcript can hold thousands of messages of any length, so the view is a pager, not
a scrolled document: its position is a message and a row inside it, and each repaint
renders only the messages that reach the screen (through an LRU of rendered rows), so
neither opening nor following a long transcript costs more than a screenful. Messages
come from a `MessageSource` (`horde_tui.view.transcript.TranscriptReader`), asked one
index at a time.

Tool calls, tool results and the system prompt show as one head line until expanded
(enter or space on the message, `e` for all of them); what the model said stays open.
The view follows the newest message until the user moves up, and counts the messages
that arrived meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Protocol

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from horde_tui.view.transcript import TranscriptMessage

BODY_ROWS = 300
"""Rows an expanded message shows at most; the rest is one line away in the CLI."""
INDENT = 2


class MessageSource(Protocol):
    """What the view reads: a count and a message by index, and a `generation` that
    moves on when the file was replaced (every index then means another message)."""

    @property
    def generation(self) -> int: ...

    def __len__(self) -> int: ...

    def message(self, i: int) -> TranscriptMessage: ...


class EmptySource:
    """No transcript yet (the member has not started, or its file is not there)."""

    generation = 0

    def __len__(self) -> int:
        return 0

    def message(self, i: int) -> TranscriptMessage:
        raise IndexError(i)


class TranscriptView(Widget, can_focus=True):
    """Messages in order from a `MessageSource`; see the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Previous message", show=False, id="transcript-up"),
        Binding("down,j", "cursor(1)", "Next message", show=False, id="transcript-down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="transcript-pageup"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="transcript-pagedown"),
        Binding("home", "first", "First message", show=False, id="transcript-home"),
        Binding("end", "follow", "Follow new messages", show=False, id="transcript-end"),
        Binding(
            "enter,space",
            "toggle",
            "Fold/expand",
            id="transcript-toggle",
            tooltip="fold or expand the message under the cursor",
        ),
        Binding(
            "e",
            "expand_all",
            "Expand all",
            id="transcript-expand-all",
            tooltip="expand every message, or fold them back",
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "transcript-view--cursor",
        "transcript-view--cursor-blurred",
        "transcript-view--system",
        "transcript-view--user",
        "transcript-view--text",
        "transcript-view--calls",
        "transcript-view--result",
        "transcript-view--corrupt",
        "transcript-view--body",
        "transcript-view--more",
    }

    DEFAULT_CSS = """
    TranscriptView {
        background: $surface;
        & > .transcript-view--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .transcript-view--cursor-blurred {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .transcript-view--system { color: $text-muted; }
        & > .transcript-view--user { color: $text-accent; text-style: bold; }
        & > .transcript-view--text { color: $success; text-style: bold; }
        & > .transcript-view--calls { color: $primary; }
        & > .transcript-view--result { color: $text-muted; }
        & > .transcript-view--corrupt { color: $error; text-style: bold; }
        & > .transcript-view--body { color: $text; }
        & > .transcript-view--more { color: $text-muted; text-style: italic; }
    }
    """

    class Moved(Message):
        """The position, following, the new-message count or the source changed."""

        def __init__(self, view: TranscriptView) -> None:
            super().__init__()
            self.view = view

        @property
        def control(self) -> TranscriptView:
            return self.view

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.source: MessageSource = EmptySource()
        self.count = 0
        """Messages the view knows of (the source may have indexed more meanwhile)."""
        self.top = 0
        """The message at the top of the screen..."""
        self.top_row = 0
        """...and how many of its rows are scrolled off above."""
        self.cursor = 0
        self.following = True
        self.new_messages = 0
        self.expanded_all = False
        self.toggled: set[int] = set()
        """Messages the user flipped from their default (folded or open)."""
        self._generation = 0
        """Bumped when the source changes, so rendered rows of the old one die."""
        self._source_generation = 0
        self._cache: LRUCache[tuple[int, int, bool, int], list[Strip]] = LRUCache(256)
        self._frame: list[tuple[int, int]] | None = None
        """The screen's (message, row) pairs, laid out once per change (None: stale)."""

    # -- content ---------------------------------------------------------------------------

    def show(self, source: MessageSource) -> None:
        """Page another source (a newer session): from its newest message, following."""
        self.source = source
        self.count = len(source)
        self._source_generation = source.generation
        self._generation += 1
        self.toggled.clear()
        self.expanded_all = False
        self.new_messages = 0
        self.follow()

    def grew(self) -> None:
        """The source has more messages: follow them, or count them while the user reads.
        A source that started over (its file replaced) is shown afresh."""
        if self.source.generation != self._source_generation:
            self.show(self.source)
            return
        count = len(self.source)
        if count == self.count:
            return
        added, self.count = count - self.count, count
        if self.following:
            self._tail()
        else:
            self.new_messages += added
        self._changed()

    def is_expanded(self, i: int) -> bool:
        folded_default = self.source.message(i).folds and not self.expanded_all
        return folded_default == (i in self.toggled)

    # -- moving ----------------------------------------------------------------------------

    @property
    def _height(self) -> int:
        return max(1, self.size.height)

    def follow(self) -> None:
        """Show the newest message at the bottom and keep following."""
        self.following, self.new_messages = True, 0
        self._tail()
        self._changed()

    def _tail(self) -> None:
        self.cursor = max(0, self.count - 1)
        self.top, self.top_row = self._end_position()

    def _end_position(self) -> tuple[int, int]:
        """Where the top must be for the last row of the last message to be at the bottom."""
        rows, i = 0, self.count - 1
        while i >= 0:
            h = len(self._rows(i))
            if rows + h >= self._height:
                return i, rows + h - self._height
            rows += h
            i -= 1
        return 0, 0

    def scroll_rows(self, delta: int) -> None:
        """Move the view by `delta` rows, within the transcript's first and last row."""
        if not self.count:
            return
        top, row = self.top, self.top_row + delta
        while row < 0 and top > 0:
            top -= 1
            row += len(self._rows(top))
        while top < self.count and row >= len(self._rows(top)):
            row -= len(self._rows(top))
            top += 1
        end = self._end_position()
        if (top, row) >= end:
            top, row = end
        self.top, self.top_row = top, max(0, row)
        if delta < 0:
            self.following = False
        layout = self._layout()
        if self.cursor not in {i for i, _ in layout}:
            # The cursor scrolled away: it moves to the first head on screen.
            self.cursor = next((i for i, r in layout if r == 0), self.top)
        if (self.top, self.top_row) == end and self.cursor == self.count - 1:
            self.following, self.new_messages = True, 0
        self._changed()

    def move_cursor(self, delta: int) -> None:
        """Select the message `delta` messages away and bring its head into view."""
        if not self.count:
            return
        self.cursor = min(self.count - 1, max(0, self.cursor + delta))
        if delta < 0:
            self.following = False
        self._reveal(self.cursor)
        if self.cursor == self.count - 1 and (self.top, self.top_row) == self._end_position():
            self.following, self.new_messages = True, 0
        self._changed()

    def _reveal(self, i: int) -> None:
        """Scroll so message `i` shows whole if it fits, else from its head."""
        if i < self.top or (i == self.top and self.top_row > 0):
            self.top, self.top_row = i, 0
            return
        below = sum(len(self._rows(j)) for j in range(self.top, i + 1)) - self.top_row
        if below > self._height:
            excess = below - self._height
            head = below - len(self._rows(i))
            self.scroll_rows(min(excess, head))

    def toggle(self, i: int) -> None:
        """Fold or expand message `i`."""
        if i < self.count:
            self.toggled ^= {i}
            if self.following:
                self._tail()
            else:
                self._reveal(i)
            self._changed()

    # -- actions ---------------------------------------------------------------------------

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(delta)

    def action_page(self, direction: int) -> None:
        self.scroll_rows(direction * max(1, self._height - 1))

    def action_first(self) -> None:
        self.following = False
        self.cursor, self.top, self.top_row = 0, 0, 0
        self._changed()

    def action_follow(self) -> None:
        self.follow()

    def action_toggle(self) -> None:
        self.toggle(self.cursor)

    def action_expand_all(self) -> None:
        self.expanded_all = not self.expanded_all
        self.toggled.clear()
        if self.following:
            self._tail()
        else:
            self._reveal(self.cursor)
        self._changed()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.scroll_rows(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.scroll_rows(-3)

    def on_click(self, event: events.Click) -> None:
        layout = self._layout()
        if 0 <= event.y < len(layout):
            index = layout[event.y][0]
            if index == self.cursor:
                self.toggle(index)
            else:
                self.cursor = index
                self.following = False
                self._changed()

    def on_resize(self, event: events.Resize) -> None:
        if self.following:
            self._tail()
        self._changed()

    def _changed(self) -> None:
        self._frame = None
        self.refresh()
        self.post_message(self.Moved(self))

    # -- rendering -------------------------------------------------------------------------

    def _layout(self) -> list[tuple[int, int]]:
        """(message, row) for each screen row, from the top position down."""
        out: list[tuple[int, int]] = []
        for i, row in self._rows_from(self.top, self.top_row):
            if len(out) >= self._height:
                break
            out.append((i, row))
        return out

    def _rows_from(self, i: int, row: int) -> Iterator[tuple[int, int]]:
        while i < self.count:
            for r in range(row, len(self._rows(i))):
                yield i, r
            i, row = i + 1, 0

    def _rows(self, i: int) -> list[Strip]:
        """Message `i` rendered at the current width: its head, then its body if open."""
        width = max(1, self.size.width)
        expanded = self.is_expanded(i)
        key = (self._generation, i, expanded, width)
        strips = self._cache.get(key)
        if strips is None:
            strips = self._render_message(self.source.message(i), expanded, width)
            self._cache[key] = strips
        return strips

    def _render_head(
        self, msg: TranscriptMessage, expanded: bool, width: int, cursor: str = ""
    ) -> Strip:
        """The head line; under the cursor its whole width takes the cursor style."""
        style = self.get_component_rich_style
        marker = ("▾ " if expanded else "▸ ") if msg.body and msg.folds else "  "
        head = Text(no_wrap=True, overflow="ellipsis", end="")
        head.append(marker + msg.head, style(f"transcript-view--{msg.kind}"))
        head.truncate(width, overflow="ellipsis", pad=bool(cursor))
        if cursor:
            head.stylize(style(f"transcript-view--{cursor}"))
        return Strip(head.render(self.app.console), head.cell_len)

    def _render_message(self, msg: TranscriptMessage, expanded: bool, width: int) -> list[Strip]:
        style = self.get_component_rich_style
        console = self.app.console
        strips = [self._render_head(msg, expanded, width)]
        if not expanded or not msg.body:
            return strips
        body = Text(msg.body, style("transcript-view--body"), end="")
        lines = body.wrap(console, max(1, width - INDENT), tab_size=4)
        pad = Text(" " * INDENT, end="")
        for line in lines[:BODY_ROWS]:
            row = pad + line
            strips.append(Strip(row.render(console), row.cell_len))
        if len(lines) > BODY_ROWS:
            more = Text(
                f"{' ' * INDENT}… {len(lines) - BODY_ROWS} more rows (horde-tui transcript FILE)",
                style("transcript-view--more"),
                end="",
            )
            strips.append(Strip(more.render(console), more.cell_len))
        return strips

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if self._frame is None:
            self._frame = self._layout()
        layout = self._frame
        if y >= len(layout):
            return Strip.blank(width, base)
        i, row = layout[y]
        if i == self.cursor and row == 0:
            cursor = "cursor" if self.has_focus else "cursor-blurred"
            strip = self._render_head(self.source.message(i), self.is_expanded(i), width, cursor)
        else:
            strip = self._rows(i)[row]
        return strip.apply_style(base).extend_cell_length(width, base).crop(0, width)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._frame = None
