"""`TailScrollView`: a Line-API view of a growing list of rows that follows its end.

The event log and the member's log tail behave alike: while `following`, rows that
arrive scroll into view; scrolling up stops following, scrolling back to the bottom
resumes it. They also grow alike: the scrollable size changes with every append, and
assigning `virtual_size` (a layout reactive) would lay out the whole screen each time,
which on a busy run costs more CPU than everything else the app does. So the size is
set quietly here (`set_rows`) and only this view's scrollbars are updated.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView


class TailScrollView(ScrollView):
    """A `ScrollView` whose rows grow at the end and which follows them."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.following = True

    def set_rows(self, width: int, rows: int) -> None:
        """Set the scrollable size without a layout of the screen.

        Only this view's scrollbars depend on it (its own size is fixed by its
        container), so it is set quietly and the scrollbars are updated directly
        (Textual's `_scroll_update`, as `_size_updated` does; textual is pinned)."""
        size = Size(width, rows)
        if size == self.virtual_size:
            return
        self.set_reactive(ScrollView.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    def tail(self) -> None:
        """Show the last row now, and again after the next layout (a horizontal
        scrollbar that appears with a long row moves the end by one)."""
        self.scroll_to(y=self.max_scroll_y, animate=False, force=True)
        self.call_after_refresh(self._retail)

    def _retail(self) -> None:
        if self.following and self.scroll_y != self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False, force=True)

    def following_changed(self) -> None:
        """Called when the user's scrolling started or stopped following."""

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        at_end = round(new_value) >= self.max_scroll_y
        if at_end and not self.following:
            self.following = True
            self.following_changed()
        elif new_value < old_value and not at_end and self.following:
            self.following = False
            self.following_changed()

    def on_resize(self, event: events.Resize) -> None:
        if self.following:
            self.tail()
