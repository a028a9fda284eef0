"""`StatusLine`: a one-line `Static` that repaints only when its text changes.

Screens restate their status after every batch of events, and nearly always with the
same words: comparing first makes an unchanged status free. A changed one repaints the
line without a layout of the screen (`layout=False`): a status line is one row high
whatever it says (its CSS fixes the height), and on a busy run the tally of member
states changes with every spawn and exit.
"""

from __future__ import annotations

from textual.widgets import Static


class StatusLine(Static):
    """A status line; `show(text)` is a no-op when `text` is what is already shown."""

    def __init__(self, text: str = "", *, id: str | None = None, classes: str | None = None):
        super().__init__(text, id=id, classes=classes, markup=False)
        self._text = text

    def show(self, text: str) -> bool:
        """Show `text`; return whether anything changed."""
        if text == self._text:
            return False
        self._text = text
        self.update(text, layout=False)
        return True
