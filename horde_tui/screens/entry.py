"""`EntryScreen`: one ledger entry or thread in full, over the run screen.

Opened by Enter on a ledger or thread row. It shows the Markdown the view layer wrote
(`LedgerView.detail`): the entry as its ledger renders it and, for findings and
threads, the evidence, reviews and acceptance around it. Escape closes it.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static


class EntryScreen(ModalScreen[None]):
    """A read-only page; nothing on it acts on the run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="entry-close"),
    ]

    def __init__(self, title: str, markdown: str) -> None:
        super().__init__(classes="entry-screen")
        self.title_text = title
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog entry-dialog"):
            yield Static(self.title_text, classes="dialog-question", markup=False)
            with VerticalScroll(id="entry-body"):
                yield Markdown(self.markdown, open_links=False)
            yield Static("escape closes", classes="dialog-detail")

    def on_mount(self) -> None:
        self.query_one("#entry-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)
