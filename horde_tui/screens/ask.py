"""The ask pane: a person asks a run a question and a read-only analyst answers, inline.

Opened with `a` on the run screen and the report screen. The run's earlier asks
(`store.asks.read_asks`, read in a thread) are listed first, newest last; a question
typed and entered runs `launch.ask.ask` in a worker: its text streams in as it arrives,
each tool call is a dim one-liner, then the answer as kept replaces the streamed text,
with its `[check: ...]` marks styled so a wrong citation shows as wrong, and its tokens
and cost. A refusal is its one line. Escape closes the pane at any time; closing it
mid-answer cancels the worker, which closes the ask's generator, and the engine stops
its analyst and its own gateway and keeps nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from horde_tui.launch.ask import AskDone, AskRefused, AskStep, AskText, ask
from horde_tui.screens.base import HordeHost
from horde_tui.store.asks import AskRecord, read_asks
from horde_tui.store.display import format_cost, format_tokens
from horde_tui.supervisor.citations import MARK

CHECK_MARK = re.compile(re.escape(MARK.strip()) + r"[^\]]*\]")
"""A `[check: why]` mark the evidence check put in an answer."""


def answer_text(answer: str) -> Content:
    """The answer with each `[check: ...]` mark reversed in the theme's error colour, so
    a citation that does not hold stands out."""
    content = Content(answer)
    for mark in CHECK_MARK.finditer(answer):
        content = content.stylize("bold reverse $error", mark.start(), mark.end())
    return content


def meta_line(record: AskRecord) -> str:
    """`1.2k tok · $0.0012 · 3 citations, 1 marked · openai/gpt-4o-mini`."""
    tokens = format_tokens(record.prompt_tokens + record.completion_tokens)
    parts = [f"{tokens} tok", format_cost(record.cost_usd)]
    if record.citations:
        parts.append(f"{len(record.citations)} citations, {len(record.problems)} marked")
    if record.model:
        parts.append(record.model)
    if record.ended != "completed":
        parts.append(f"ended: {record.ended}")
    return " · ".join(parts)


class AskScreen(ModalScreen[None]):
    """One run's questions and answers (see the module doc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close (stops an ask under way)", id="ask-close"),
    ]
    AUTO_FOCUS = "#ask-input"

    def __init__(
        self,
        run_dir: Path,
        *,
        answered: Callable[[], None] | None = None,
    ) -> None:
        """`answered` is called when an ask has been kept (the cost line recounts)."""
        super().__init__(classes="ask-screen")
        self.run_dir = run_dir
        self.answered = answered
        self.asking = False
        """An ask is under way: a second question waits for it."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog ask-dialog"):
            yield Static(f"Ask run {self.run_dir.name}", classes="dialog-question", markup=False)
            with VerticalScroll(id="ask-log"):
                yield Static("reading earlier asks…", id="ask-earlier", classes="ask-meta")
            yield Input(
                placeholder="a question about the run, e.g. which findings are unreviewed?",
                id="ask-input",
            )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = cast(HordeHost, self.app).config.cursor_blink
        self.load_earlier()

    @work(thread=True, group="ask-earlier", exit_on_error=False)
    def load_earlier(self) -> None:
        """Read `asks.jsonl` off the loop; list what it holds."""
        records = read_asks(self.run_dir)
        self.app.call_from_thread(self._show_earlier, records)

    def _show_earlier(self, records: list[AskRecord]) -> None:
        note = self.query_one("#ask-earlier", Static)
        if not records:
            note.update("no earlier asks of this run")
            return
        noun = "ask" if len(records) == 1 else "asks"
        note.update(f"{len(records)} earlier {noun}, newest last")
        log = self.query_one("#ask-log", VerticalScroll)
        for record in records:
            log.mount_all(self._record_widgets(record))
        log.scroll_end(animate=False)

    def _record_widgets(self, record: AskRecord) -> list[Static]:
        return [
            Static(Text(f"› {record.question}"), classes="ask-question"),
            Static(answer_text(record.answer), classes="ask-answer"),
            Static(meta_line(record), classes="ask-meta", markup=False),
        ]

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        question = event.value.strip()
        if self.asking:
            self.notify("an ask is under way: wait for its answer, or escape to stop it")
            return
        if not question:
            return
        event.input.clear()
        self.asking = True
        self.run_ask(question)

    @work(group="ask", exit_on_error=False)
    async def run_ask(self, question: str) -> None:
        """Stream one ask into the log; cancelled (the pane closed) the engine stops
        everything it started and keeps nothing."""
        log = self.query_one("#ask-log", VerticalScroll)
        stream = Static("", classes="ask-stream", markup=False)
        await log.mount_all([Static(Text(f"› {question}"), classes="ask-question"), stream])
        streamed = ""
        try:
            async for event in ask(self.run_dir, question):
                if isinstance(event, AskText):
                    streamed += event.text
                    stream.update(streamed)
                elif isinstance(event, AskStep):
                    await log.mount(
                        Static(f"· {event.summary}", classes="ask-step", markup=False),
                        before=stream,
                    )
                elif isinstance(event, AskDone):
                    await stream.remove()
                    await log.mount_all(self._record_widgets(event.record)[1:])
                    if self.answered is not None:
                        self.answered()
                elif isinstance(event, AskRefused):
                    await stream.remove()
                    await log.mount(Static(event.line, classes="ask-refused", markup=False))
                log.scroll_end(animate=False)
        finally:
            self.asking = False

    def action_close(self) -> None:
        """Close; an ask under way is cancelled (its analyst and gateway stop)."""
        self.workers.cancel_group(self, "ask")
        self.dismiss(None)
