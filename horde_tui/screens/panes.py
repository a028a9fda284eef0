"""The run screen's tab contents that read files: ledger projections, graph, run files.

These read `.horde/*.md` and `runs/<id>/*.md` (widgets may not), and reload a file only
when its size or mtime changed. The run screen asks the visible pane to check at most
once a second, so a ledger rewritten twenty times a second costs one re-render a second;
a pane that is not visible is checked when its tab is opened.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from widgets.event_log import EventLog
from widgets.status_line import StatusLine

RUN_DOCUMENTS = (
    "REPORT.md",
    "DELIVERABLE.md",
    "POSTMORTEM.md",
    "SUMMARY.md",
    "ANSWER.md",
    "ACCEPTANCE.md",
    "GRAPH.md",
    "TASK.md",
    "PLAN.md",
    "SYSTEM.md",
)
"""The run's documents, most useful first; any other *.md in the run follows by name."""

MAX_MARKDOWN_BYTES = 2_000_000
"""Beyond this a projection is shown cut, with a note: the Markdown widget slows down."""


def file_stamp(path: Path) -> tuple[int, int] | None:
    """(size, mtime_ns), or None when the file is absent: cheap change detection."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def read_markdown(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read(MAX_MARKDOWN_BYTES + 1)
    if len(text) > MAX_MARKDOWN_BYTES:
        text = text[:MAX_MARKDOWN_BYTES] + f"\n\n*(cut at {MAX_MARKDOWN_BYTES} bytes: open {path})*"
    return text


class MarkdownFilePane(VerticalScroll):
    """One markdown file, or a one-line empty state saying when it will exist."""

    def __init__(self, path: Path | None, empty: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="markdown-pane")
        self.path = path
        self.empty = empty
        self._stamp: tuple[int, int] | bool | None = False
        """Stamp of the content on screen; False before the first load."""

    def compose(self) -> ComposeResult:
        yield Static(self.empty, classes="empty-state", markup=False)
        yield Markdown(open_links=False)

    async def show_path(self, path: Path | None) -> None:
        """Point the pane at another file (the Files tab) and load it."""
        self.path, self._stamp = path, False
        await self.reload_if_changed()

    async def reload_if_changed(self) -> bool:
        """Re-read the file if it changed since it was shown; return whether it did."""
        stamp = file_stamp(self.path) if self.path is not None else None
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.set_class(stamp is None, "-empty")
        markdown = self.query_one(Markdown)
        text = read_markdown(self.path) if stamp is not None and self.path is not None else ""
        await markdown.update(text)
        return True


class FilesPane(Horizontal):
    """The run's documents: a list on the left, the selected one as Markdown."""

    def __init__(self, run_dir: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_dir = run_dir
        self._names: list[str] = []

    def compose(self) -> ComposeResult:
        yield OptionList(id="file-list")
        yield MarkdownFilePane(None, "No documents in this run yet.", id="file-view")

    def documents(self) -> list[str]:
        """The run's markdown documents present now, most useful first."""
        try:
            present = {p.name for p in self.run_dir.glob("*.md") if p.is_file()}
        except OSError:
            return []
        known = [name for name in RUN_DOCUMENTS if name in present]
        return known + sorted(present - set(known))

    async def reload_if_changed(self) -> bool:
        """Refresh the list when documents appear, and the open one when it changes."""
        names = self.documents()
        listing = self.query_one(OptionList)
        view = self.query_one(MarkdownFilePane)
        changed = False
        if names != self._names:
            current = view.path.name if view.path is not None else None
            self._names = names
            listing.set_options(Option(name, id=name) for name in names)
            if current in names:
                listing.highlighted = names.index(current)
            elif names:
                listing.highlighted = 0
                await view.show_path(self.run_dir / names[0])
            changed = True
        return await view.reload_if_changed() or changed

    async def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            await self.query_one(MarkdownFilePane).show_path(self.run_dir / event.option.id)


class EventsPane(Vertical):
    """The event log with its filter input (hidden until `/`) and its status line."""

    def __init__(self, log: EventLog, *, blink: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.log_widget = log
        self.blink = blink

    def compose(self) -> ComposeResult:
        box = Input(placeholder="filter: member names and event kinds", id="event-filter")
        box.cursor_blink = self.blink
        yield box
        yield self.log_widget
        yield StatusLine(id="event-status")

    def on_mount(self) -> None:
        self.show_status()

    def show_status(self) -> None:
        log = self.log_widget
        parts = []
        if log.loading:
            parts.append(f"reading {log.view.index.path.name}")
        if log.filter_text:
            parts.append(f"filter: {log.filter_text} ({log.row_count} events)")
        if log.following:
            parts.append("following the tail")
        else:
            parts.append(f"{log.new_lines} new lines · f to follow")
        status = self.query_one("#event-status", StatusLine)
        status.show(" · ".join(parts))
        status.set_class(not log.following and log.new_lines > 0, "-new")

    def on_event_log_follow_changed(self, event: EventLog.FollowChanged) -> None:
        self.show_status()

    def open_filter(self) -> None:
        box = self.query_one(Input)
        self.add_class("-filtering")
        box.value = self.log_widget.filter_text
        box.focus()

    def close_filter(self, clear: bool) -> None:
        if clear:
            self.log_widget.set_filter("")
        self.remove_class("-filtering")
        self.log_widget.focus()
        self.show_status()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.log_widget.set_filter(event.value)
        self.show_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.close_filter(clear=False)
