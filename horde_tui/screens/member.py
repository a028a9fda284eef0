"""Member detail: what one member is doing now, what it last said, how it ended.

Live: the screen repaints whenever the app applies a batch of supervisor events (the
app's `revision` counter) and on the clock tick, from the same `MemberState` the table
shows. Escape goes back to the run screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from horde_tui.screens.base import HordeScreen
from horde_tui.screens.describe import elapsed
from widgets.member_table import (
    STATUS_CLASSES,
    format_cost,
    format_elapsed,
    format_tokens,
    status_class,
)

if TYPE_CHECKING:
    from horde_tui.screens.source import RunSource


def shown_path(sup: RunSource, path: Path) -> str:
    """A run path as the user would type it in the project: relative to the workdir."""
    workdir = sup.run_dir.parent.parent.parent
    try:
        return str(path.relative_to(workdir))
    except ValueError:
        return str(path)


def transcript_path(sup: RunSource, name: str) -> str:
    """The member's newest transcript, else its session folder (where it will appear)."""
    state = sup.members.get(name)
    if state is not None and state.transcripts:
        return shown_path(sup, Path(state.transcripts[-1]))
    folder = sup.run_dir / "sessions" / name
    try:
        sessions = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    except OSError:
        sessions = []
    return shown_path(sup, sessions[-1] if sessions else folder)


class MemberDetailScreen(HordeScreen):
    """One member, live."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="detail-back"),
        Binding("t", "transcript", "Transcript", id="detail-transcript"),
    ]

    def __init__(self, supervisor: RunSource, name: str) -> None:
        super().__init__(classes="member-detail")
        self.sup = supervisor
        self.member = name

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="detail-title", markup=False)
        with VerticalScroll(id="detail-body"):
            yield Static("", id="detail-facts", markup=False)
            yield Static("Now", classes="detail-heading")
            yield Static("", id="detail-now", markup=False)
            yield Static("Last message", classes="detail-heading")
            yield Static("", id="detail-message", markup=False)
            yield Static("Exit", classes="detail-heading")
            yield Static("", id="detail-exit", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.watch(self.app, "revision", self.repaint, init=False)
        if self.horde_app.config.tick_s > 0:
            self.set_interval(self.horde_app.config.tick_s, self.repaint)
        self.repaint()

    def repaint(self) -> None:
        state = self.sup.members.get(self.member)
        title = self.query_one("#detail-title", Static)
        if state is None:
            title.update(f"{self.member}: not a member of this run")
            return
        for cls in STATUS_CLASSES:
            title.set_class(False, f"-{cls}")
        title.set_class(True, f"-{status_class(state.status, state.exit_cause)}")
        title.update(f"{state.name} · {state.role} · {state.status}")

        now = self.horde_app.config.clock()
        facts = Table.grid(padding=(0, 2))
        facts.add_column(style="bold", no_wrap=True)
        facts.add_column(overflow="fold")
        rows = [
            ("attempt", f"{state.attempt} (resets {state.resets})"),
            ("elapsed", format_elapsed(elapsed(state, now))),
            ("turns", str(state.turns)),
            (
                "tokens",
                f"{format_tokens(state.prompt_tokens + state.completion_tokens)} "
                f"({state.prompt_tokens} in, {state.completion_tokens} out)",
            ),
            ("cost", format_cost(state.cost_usd)),
            ("pid", str(state.pid) if state.pid else "-"),
            ("layers", "; ".join(state.layers) or "-"),
            ("log", shown_path(self.sup, self.sup.run_dir / f"{state.name}.log")),
            ("transcript", transcript_path(self.sup, state.name)),
        ]
        for key, value in rows:
            facts.add_row(key, value)
        self.query_one("#detail-facts", Static).update(facts)

        if state.current_tool:
            now_text = state.tool_summary or state.current_tool
        elif state.status == "exited":
            now_text = "nothing: the member has exited"
        else:
            now_text = "thinking (no tool running)" if state.status == "running" else state.status
        self.query_one("#detail-now", Static).update(now_text)
        self.query_one("#detail-message", Static).update(
            state.final_message.strip() or "(no message yet)"
        )
        if state.exit_cause:
            exit_text = state.exit_cause + (f": {state.detail.strip()}" if state.detail else "")
        else:
            exit_text = "(still running)" if state.status != "pending" else "(not started)"
        self.query_one("#detail-exit", Static).update(exit_text)

    def action_transcript(self) -> None:
        self.notify(f"{self.member} transcript: {transcript_path(self.sup, self.member)}")
