"""The run screen's tab contents that read files: ledgers, threads, graph, run files.

These read `.horde/` (widgets may not) and only what changed: the ledger and thread
tabs share one `LedgerView` that folds the bytes appended to `ledger.jsonl`, the graph
feeds the lines appended to `events.jsonl` to its swimlane, and a run document is
reloaded when its size or mtime changed. The run screen asks the visible pane to check
(`reload_if_changed`) when the app's debounced watcher sees `.horde/` change, so a
burst of writes costs one repaint; a pane that is not visible is checked when its tab
is opened.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option

from horde_tui.screens.entry import EntryScreen
from horde_tui.store.graph import MAX_NODES
from horde_tui.store.runs import READING_ORDER
from horde_tui.view.ledgers import LedgerView
from horde_tui.view.rows import LedgerRow
from horde_tui.view.swimlane import SwimlaneLayout, SwimlaneView
from horde_tui.widgets.event_log import EventTail
from horde_tui.widgets.ledger_table import LEDGER_KEYS, LedgerTable
from horde_tui.widgets.status_line import StatusLine
from horde_tui.widgets.swimlane import Swimlane

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
        known = [name for name in READING_ORDER if name in present]
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

    def __init__(self, log: EventTail, *, blink: bool = True, id: str | None = None) -> None:
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

    def on_event_tail_follow_changed(self, event: EventTail.FollowChanged) -> None:
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


EMPTY_LEDGER = {
    "board": "No posts yet: members post one-line progress notes (`horde post`) as they work.",
    "ideas": "No ideas yet: members add them in discovery (`horde idea`) and claim one "
    "before auditing it.",
    "findings": "No findings in this run yet: a member files one (`horde finding`) once it "
    "has evidence; reviews and clusters follow.",
    "facts": "No facts yet: members record what they established (`horde fact`).",
    "claims": "No claims yet: members assert them (`horde assert`); others confirm or contest.",
    "resources": "No resources yet: a member registers a shared setup (`horde resource`) "
    "when it builds one.",
    "threads": "No threads yet: members open one with `horde message` (question, blocker, "
    "review-request, handoff, decision); a refuting review opens a challenge.",
}
"""What an empty tab says: who fills the ledger, and when."""


class LedgerSource:
    """The ledgers every tab shows, folded once (`LedgerView` over `ledger.jsonl`).

    Folding and row building run in a thread so a big first read never stalls the
    screen; the lock keeps two of them (the interval and a tab switch) from folding at
    once, and keeps `rows`/`detail` from reading a fold in progress.
    """

    def __init__(self, horde_dir: Path, run: str | None, baseline: str = "") -> None:
        self.view = LedgerView(horde_dir, run, baseline)
        self._lock = asyncio.Lock()

    async def rows(self, kind: str, view: str, refresh: bool = True) -> list[LedgerRow]:
        """`kind`'s rows in `view`, after taking in what was appended (if `refresh`)."""

        def read() -> list[LedgerRow]:
            if refresh:
                self.view.refresh()
            return self.view.rows(kind, view)

        async with self._lock:
            return await asyncio.to_thread(read)

    async def detail(self, kind: str, key: str) -> str:
        async with self._lock:
            return await asyncio.to_thread(self.view.detail, kind, key)

    async def finding_yield(self) -> tuple[int, int]:
        """(the run's current findings, accepted ones) after taking in what was appended."""

        def read() -> tuple[int, int]:
            self.view.refresh()
            return self.view.finding_yield()

        async with self._lock:
            return await asyncio.to_thread(read)


class LedgerPane(Vertical):
    """One ledger as a table, in one of the reference's views; Enter opens an entry."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "v",
            "cycle_view",
            "View",
            id="ledger-view",
            tooltip="next view: newest, oldest, by owner (and clusters for findings)",
            group=LEDGER_KEYS,
        ),
    ]

    def __init__(self, source: LedgerSource, kind: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="ledger-pane")
        self.source = source
        self.kind = kind
        self.view_name = "newest"
        self._rows: list[LedgerRow] | None = None
        """The rows on screen (LedgerView hands out the same list until they change)."""

    @property
    def table(self) -> LedgerTable:
        return self.query_one(LedgerTable)

    def compose(self) -> ComposeResult:
        yield Static("", classes="ledger-status", markup=False)
        with Horizontal(classes="ledger-body"):
            yield LedgerTable(self.source.view.columns(self.kind))
            yield from self.compose_side()
        yield Static(EMPTY_LEDGER[self.kind], classes="empty-state", markup=False)

    def focus_content(self) -> None:
        self.table.focus()

    def compose_side(self) -> ComposeResult:
        """Widgets beside the table (none for a ledger)."""
        yield from ()

    async def reload_if_changed(self) -> bool:
        """Take in appended records; repaint the rows that changed; return whether any did."""
        return await self._show(await self.source.rows(self.kind, self.view_name))

    async def _show(self, rows: list[LedgerRow]) -> bool:
        if rows is self._rows:
            return False
        self._rows = rows
        self.table.show(rows, self.view_name)
        self.set_class(not rows, "-empty")
        entries = "entry" if len(rows) == 1 else "entries"
        self.query_one(".ledger-status", Static).update(
            f"{len(rows)} {entries} · view: {self.view_name} (v: next) · enter: open · "
            "escape: members"
        )
        self.refresh_bindings()
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle_view":
            return True if self._rows else None
        return True

    async def action_cycle_view(self) -> None:
        views = self.source.view.views(self.kind)
        self.view_name = views[(views.index(self.view_name) + 1) % len(views)]
        await self._show(await self.source.rows(self.kind, self.view_name, refresh=False))

    async def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # the run screen opens a member on its own table's Enter
        key = self.table.selected_key
        if key is None:
            return
        text = await self.source.detail(self.kind, key)
        if text:
            self.app.push_screen(EntryScreen(f"{self.kind}: {key}", text))


class ThreadsPane(LedgerPane):
    """Threads (Q#) with the highlighted one's messages, review scope and acceptance."""

    def __init__(self, source: LedgerSource, *, id: str | None = None) -> None:
        super().__init__(source, "threads", id=id)
        self._page_key: str | None = None

    def compose_side(self) -> ComposeResult:
        with VerticalScroll(id="thread-page"):
            yield Markdown(open_links=False)

    async def _show(self, rows: list[LedgerRow]) -> bool:
        changed = await super()._show(rows)
        if changed:
            self._page_key = None  # the thread on the page may have moved on
            await self._show_page()
        return changed

    async def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        await self._show_page()

    async def _show_page(self) -> None:
        key = self.table.selected_key
        if key == self._page_key:
            return
        self._page_key = key
        text = await self.source.detail("threads", key) if key else ""
        await self.query_one("#thread-page Markdown", Markdown).update(text)


SWIMLANE_LEGEND = "[phase] · #idea · F finding · V✓F review (~partial ✗refutes) · ✗refused · ←→"
"""Fits 80 columns: what each kind of mark means, and that the lanes scroll sideways."""


class GraphPane(Vertical):
    """The run's swimlane, fed from `events.jsonl` as it grows (a live run's too)."""

    def __init__(
        self, run_dir: Path, members: list[tuple[str, str]], *, id: str | None = None
    ) -> None:
        super().__init__(id=id, classes="graph-pane -empty")
        self.view = SwimlaneView(run_dir, members)
        self._lock = asyncio.Lock()
        """One refresh at a time: the index and the builder are not thread-safe."""

    def compose(self) -> ComposeResult:
        yield Static(SWIMLANE_LEGEND, classes="ledger-status", markup=False)
        yield Swimlane()
        yield Static(
            "No events yet: each member's lane fills as it acts (ideas, findings, reviews), "
            "with the run's phases in the parent's lane.",
            classes="empty-state",
            markup=False,
        )

    async def reload_if_changed(self) -> bool:
        def read() -> SwimlaneLayout | None:
            return self.view.layout() if self.view.refresh() else None

        async with self._lock:
            layout = await asyncio.to_thread(read)
        if layout is None:
            return False
        self.query_one(Swimlane).show(layout)
        self.set_class(not any(lane.marks for lane in layout.lanes), "-empty")
        if layout.dropped:
            self.query_one(".ledger-status", Static).update(
                f"cut at {MAX_NODES} marks: {layout.dropped} later events are only in "
                "events.jsonl (the Events tab)"
            )
        return True

    def focus_content(self) -> None:
        self.query_one(Swimlane).focus()

    def on_unmount(self) -> None:
        self.view.close()


FOCUSABLE_TABS = (LedgerPane, GraphPane)
"""Tab contents that take the focus when their tab is opened by its key."""
RELOADABLE = (LedgerPane, GraphPane, FilesPane, MarkdownFilePane)
"""Tab contents the run screen asks to `reload_if_changed` while they are visible."""
