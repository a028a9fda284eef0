"""The report screen: a finished run's REPORT.md, with the deliverable and the
post-mortem one key away, and the ask pane
(`a`). It opens by itself when a hosted run ends, and on the newest
run when the app starts with nothing live. Read-only: it never writes a run file.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static

from horde_tui.screens.ask import AskScreen
from horde_tui.screens.panes import read_markdown

DOCUMENTS = {
    "report": ("REPORT.md", "the report"),
    "deliverable": ("DELIVERABLE.md", "the deliverable"),
    "postmortem": ("POSTMORTEM.md", "the post-mortem"),
}


class ReportScreen(Screen[None]):
    """One run's closing documents."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "show('report')", "Report", id="report-report"),
        Binding("d", "show('deliverable')", "Deliverable", id="report-deliverable"),
        Binding("m", "show('postmortem')", "Post-mortem", id="report-postmortem"),
        Binding("a", "ask", "Ask", id="report-ask", tooltip="ask the run a question"),
        Binding("escape", "app.pop_screen", "Back", id="report-back"),
    ]

    def __init__(self, run_dir: Path, document: str = "report") -> None:
        super().__init__(classes="report-screen")
        self.run_dir = run_dir
        self.document = document

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="report-title", markup=False)
        yield Markdown(open_links=False, id="report-view")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        await self.action_show(self.document)

    def path_of(self, document: str) -> Path:
        return self.run_dir / DOCUMENTS[document][0]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "show" and parameters:
            document = str(parameters[0])
            if document == self.document or not self.path_of(document).is_file():
                return None
        return True

    def action_ask(self) -> None:
        self.app.push_screen(AskScreen(self.run_dir))

    async def action_show(self, document: str) -> None:
        self.document = document
        path = self.path_of(document)
        file_name, what = DOCUMENTS[document]
        title = self.query_one("#report-title", Static)
        view = self.query_one(Markdown)
        if path.is_file():
            title.update(f"{self.run_dir.name} · {file_name}")
            await view.update(read_markdown(path))
        else:
            title.update(f"{self.run_dir.name} · {file_name} (absent)")
            await view.update(
                f"This run has no {file_name}: {what} was not written "
                "(a hard stop, a failed canary, or the helper was turned off)."
            )
        view.scroll_home(animate=False)
        self.refresh_bindings()
