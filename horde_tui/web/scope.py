"""Which pages a scope has, and the readers their pages are drawn from.

A `Scope` is every run and swarm of a horde directory (`runs=None, swarms=None`) or the
named ones (a swarm brings its hordes' runs). It lists its pages one by one (`paths()`)
and keeps a few runs' readers between pages, caught up before each, so neither the
export nor the server holds a run in memory (a transcript page reads its fifty lines, an
event-audit page its thousand). `pages.Site` draws the pages themselves.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.linefile import LineIndex
from horde_tui.store.runs import existing_swarm, find_run, run_ids, swarm_ids
from horde_tui.store.timestamps import epoch
from horde_tui.store.transcript import sessions
from horde_tui.view.ledgers import KINDS, LedgerView
from horde_tui.view.phase import RunPhase
from horde_tui.view.run import RunView
from horde_tui.view.swarm import SwarmView
from horde_tui.view.swimlane import SwimlaneView
from horde_tui.view.transcript import TranscriptReader
from horde_tui.web.anchors import EVENTS_PER_PAGE
from horde_tui.web.confine import Outside, confined

PAGE_ENTRIES = 50
"""Transcript entries per page (the reference's)."""
LEDGERS = tuple(k for k in KINDS if k != "threads")
"""The six ledgers; threads are on the collaboration page."""
PROJECT_PAGES = ("ideas", "board", "findings", "facts", "claims", "resources", "concerns")
"""The project scope's pages (the project has the ledgers only)."""


@dataclass
class Page:
    """One rendered page: `body` (HTML inside <main>) and `data` (its JSON twin), or
    `text` for a plain-text file (the Mermaid source)."""

    path: str
    title: str
    body: str = ""
    data: Any = None
    live: bool = False
    nav: str = ""
    text: str | None = None
    status: int = 200


@dataclass
class RunReaders:
    """A run's readers, kept between pages and caught up before each."""

    run_dir: Path
    view: RunView
    ledgers: LedgerView
    phase: RunPhase = field(default_factory=RunPhase)
    swimlane: SwimlaneView | None = None
    events: LineIndex | None = None

    def event_index(self) -> LineIndex:
        """The event log's line index, caught up (kept between pages: a page of the
        audit reads its own lines, not the whole file again)."""
        if self.events is None:
            self.events = LineIndex(self.run_dir / "events.jsonl", cache_size=8, transactions=False)
        self.events.refresh()
        return self.events

    def refresh(self) -> None:
        self.view.refresh()
        for ev in self.view.new_events:
            data = {k: v for k, v in ev.items() if k not in ("kind", "member")}
            ts = _epoch(ev.get("ts"))
            self.phase.apply(str(ev.get("kind")), ev.get("member"), data, ts)
        self.view.close()
        self.ledgers.refresh()


def _epoch(value: Any) -> float:
    found = epoch(value)
    return found if found is not None else 0.0


class Scope:
    """The pages of one scope and their readers: every run and swarm (`runs=None,
    swarms=None`) or the named ones (a swarm brings its hordes' runs)."""

    def __init__(
        self,
        horde_dir: Path,
        runs: Iterable[str] | None = None,
        swarms: Iterable[str] | None = None,
    ) -> None:
        self.horde_dir = Path(horde_dir)
        self._runs_only = None if runs is None else set(runs)
        self._swarms_only = None if swarms is None else set(swarms)
        self._runs: OrderedDict[str, RunReaders] = OrderedDict()
        self._swarms: dict[str, SwarmView] = {}
        self._readers: OrderedDict[str, TranscriptReader] = OrderedDict()
        self._fresh: set[str] = set()
        """Swarms caught up for the page being rendered."""

    # -- scope -----------------------------------------------------------------------------

    def swarm_list(self) -> list[str]:
        every = swarm_ids(self.horde_dir)
        if self._swarms_only is None:
            return every
        return [s for s in every if s in self._swarms_only]

    def run_list(self) -> list[str]:
        """Single runs in scope, then the hordes' runs of the swarms in scope."""
        every = run_ids(self.horde_dir)
        single = every if self._runs_only is None else [r for r in every if r in self._runs_only]
        named = sorted((self._runs_only or set()) - set(every))  # a horde's run, named alone
        hordes = [r for r in named if find_run(self.horde_dir, r) is not None]
        for swarm in self.swarm_list():
            view = self._swarm(swarm)
            hordes += [line.run_dir.name for line in view.lines() if line.run_dir is not None]
        return single + hordes

    def _in_scope(self, run_id: str) -> bool:
        return run_id in self.run_list()

    def _run(self, run_id: str) -> RunReaders | None:
        run = self._runs.get(run_id)
        if run is None:
            if not self._in_scope(run_id):
                return None
            path = find_run(self.horde_dir, run_id)
            if path is None:
                return None
            confined(self.horde_dir, path)
            run = RunReaders(path, RunView(path), LedgerView(path.parent.parent, path.name))
            self._runs[run_id] = run
            while len(self._runs) > 8:  # a few runs' readers, not every run's
                self._runs.popitem(last=False)
        self._runs.move_to_end(run_id)
        run.refresh()
        return run

    def _swarm(self, swarm_id: str) -> SwarmView:
        """The swarm's view, caught up once per page (`render` forgets what it read)."""
        view = self._swarms.get(swarm_id)
        if view is None:
            path = existing_swarm(self.horde_dir, swarm_id)
            view = self._swarms[swarm_id] = SwarmView(path or self.horde_dir / "swarms" / swarm_id)
        if swarm_id not in self._fresh:
            self._fresh.add(swarm_id)
            view.refresh()
            view.close()
        return view

    # -- the page list ---------------------------------------------------------------------

    @property
    def _whole(self) -> bool:
        """Every run and swarm is in scope: the project's pages are too."""
        return self._runs_only is None and self._swarms_only is None

    def paths(self) -> Iterator[str]:
        """Every page of the scope, in an order that keeps one run's readers warm."""
        yield "index.html"
        if self._whole:
            yield from (f"{kind}.html" for kind in PROJECT_PAGES)
        for swarm in self.swarm_list():
            yield from self._swarm_paths(swarm)
        for run_id in self.run_list():
            yield from self._run_paths(run_id)

    def _swarm_paths(self, swarm_id: str) -> Iterator[str]:
        base = f"swarms/{swarm_id}/"
        yield base + "index.html"
        for kind in (*LEDGERS, "threads", "graph"):
            yield f"{base}{kind}.html"
        view = self._swarm(swarm_id)
        for name in view.files:
            yield f"{base}files/{name}.html"

    def _run_paths(self, run_id: str) -> Iterator[str]:
        base = f"runs/{run_id}/"
        try:
            run = self._run(run_id)
        except Outside:
            yield base + "index.html"  # which says why, in one line
            return
        if run is None:
            return
        yield base + "index.html"
        for kind in LEDGERS:
            yield from (
                f"{base}{kind}.html",
                f"{base}{kind}-oldest.html",
                f"{base}{kind}-owner.html",
            )
        yield base + "findings-clusters.html"
        yield base + "collaboration.html"
        for n in range(1, self._event_pages(run) + 1):
            yield f"{base}events-{n}.html"
        yield base + "graph.html"
        yield base + "graph.mmd"
        for path in run.view.files:
            yield f"{base}files/{path.name}.html"
        for member in run.view.members():
            mbase = f"{base}members/{member.name}/"
            yield mbase + "index.html"
            yield mbase + "log.html"
            yield mbase + "log-all.html"
            for s, session in enumerate(sessions(run.run_dir, member.name), 1):
                entries = self._entry_count(session) or 0
                for p in range(1, max(1, -(-entries // PAGE_ENTRIES)) + 1):
                    yield f"{mbase}transcript-{s}-{p}.html"

    def _swimlane(self, run: RunReaders) -> SwimlaneView:
        """The run's graph, kept between pages and caught up (reads what was appended)."""
        confined(self.horde_dir, run.run_dir / "events.jsonl")
        members = [(m.name, m.role) for m in run.view.members()]
        if run.swimlane is None or run.swimlane.members != members:
            if run.swimlane is not None:
                run.swimlane.close()
            run.swimlane = SwimlaneView(run.run_dir, members)
        run.swimlane.refresh()
        run.swimlane.close()
        return run.swimlane

    def _event_pages(self, run: RunReaders) -> int:
        index = run.event_index()
        index.close()
        return max(1, -(-len(index) // EVENTS_PER_PAGE))

    def _entry_count(self, path: Path) -> int | None:
        """A transcript's entries; None for one that leads outside (its page says so)."""
        try:
            return len(self._reader(path))
        except Outside:
            return None

    def _reader(self, path: Path) -> TranscriptReader:
        path = confined(self.horde_dir, path)
        key = str(path)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = TranscriptReader(path, cache_size=PAGE_ENTRIES)
            while len(self._readers) > 4:
                self._readers.popitem(last=False)[1].close()
        self._readers.move_to_end(key)
        reader.refresh()
        return reader

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        for run in self._runs.values():
            run.view.close()
            if run.events is not None:
                run.events.close()
            if run.swimlane is not None:
                run.swimlane.close()


def tail(path: Path, size: int) -> str:
    """The last `size` bytes of a file as text, from its first whole line; "" when unreadable."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            end = fh.tell()
            fh.seek(max(0, end - size))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if end > size and "\n" in text else text


def pick(item: Any, names: list[str]) -> dict[str, Any]:
    """`item`'s attributes `names` as a dict: a page's JSON of a member, horde, review."""
    return {name: getattr(item, name) for name in names}


def pager(n: int, pages: int) -> list[int]:
    """The page numbers a pager links from page `n` of `pages`: the first, the one
    before, this one, the one after, the last."""
    return sorted({1, max(1, n - 1), n, min(pages, n + 1), pages})
