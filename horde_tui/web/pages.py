"""Every page of the browser view, rendered from the same views the app reads.

One `Site` answers one page at a time (`render(path)`) and lists the pages of its scope
(`paths()`), so the static export writes them one by one and the server renders the one
asked for: neither holds a run in memory (a transcript page reads its fifty lines, an
event-audit page its thousand). Paths are relative to the site root and every link is
made relative to the page it is on, so the same tree opens from disk and over HTTP.

Each page is a `Page`: an HTML fragment and its `data`, the JSON twin the server sends
under `/api/`; the HTML tables are drawn from the same rows the data holds. Whatever a
page shows passes `Masker` last (provider-key-looking values, gateway tokens, this
machine's paths), so no page carries them, whichever way it leaves.
"""

from __future__ import annotations

import functools
import html
import json
import os
import posixpath
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.graph import Node, mermaid_source
from horde_tui.store.jsonl import parse_record
from horde_tui.store.linefile import LineIndex
from horde_tui.store.pagelinks import entry_page
from horde_tui.store.runs import (
    READING_ORDER,
    existing_swarm,
    find_run,
    run_ids,
    swarm_ids,
)
from horde_tui.store.secretfiles import is_secret
from horde_tui.store.transcript import sessions
from horde_tui.supervisor.summary import DEMO_MODEL
from horde_tui.view.events import format_event
from horde_tui.view.ledgers import KINDS, LedgerView
from horde_tui.view.phase import RunPhase
from horde_tui.view.run import RunView
from horde_tui.view.swarm import RunsAndSwarms, SwarmView
from horde_tui.view.swimlane import Mark, SwimlaneView, mark_of
from horde_tui.view.transcript import TranscriptReader
from horde_tui.web.anchors import EVENTS_PER_PAGE, anchor, entry_pages, event_line, event_page
from horde_tui.web.confine import Outside, confined
from horde_tui.web.footer import build_footer
from horde_tui.web.graphsvg import CELL, PLOT_MIN, TimeAxis, lane_open, swimlane_svg
from horde_tui.web.markup import markdown, markdown_line
from horde_tui.web.mask import Masker
from horde_tui.web.project import PROJECT_PAGES, citers, concern_rows, entry_runs
from horde_tui.web.style import CSS

PAGE_ENTRIES = 50
"""Transcript entries per page (the reference's)."""
LOG_TAIL_BYTES = 64 * 1024
"""What a member page shows of its log: the end, where an exit is explained."""
LOG_WHOLE_BYTES = 1024 * 1024
"""The whole-log view's cap (`log-all.html`, `log.html?tail=0`): its last MiB."""
LONG_ENTRY = 600
"""An entry longer than this (characters) is folded into `<details>`."""
LEDGERS = tuple(k for k in KINDS if k != "threads")
"""The six ledgers; threads are on the collaboration page."""
SWARM_DOCS = ("SWARM.md", "REPORT.md", "DELIVERABLE.md")
LIVE = frozenset({"active", "finalizing"})
"""Run states in which its members still write."""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"
"""Every page's Content-Security-Policy: no script, no request off the page's own site.
The server sends it as a header; each page carries it as a meta tag too, so a page
opened from an export's folder is held to it alike."""


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


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def folded(summary: str, inner: str, size: int) -> str:
    """`inner`, behind a `<details>` when it is long; `summary` is HTML."""
    if size <= LONG_ENTRY:
        return inner
    return f"<details><summary>{summary}</summary>{inner}</details>"


def table(columns: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """An HTML table; cells are HTML already (escape text before)."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


@dataclass
class _Run:
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
    from horde_tui.store.timestamps import epoch

    found = epoch(value)
    return found if found is not None else 0.0


class Site:
    """The pages of one scope: every run and swarm (`runs=None, swarms=None`) or the
    named ones (a swarm brings its hordes' runs)."""

    def __init__(
        self,
        horde_dir: Path,
        runs: Iterable[str] | None = None,
        swarms: Iterable[str] | None = None,
        *,
        masker: Masker | None = None,
    ) -> None:
        self.horde_dir = Path(horde_dir)
        self.mask = masker or Masker(self.horde_dir)
        self.top = Path(os.path.realpath(self.horde_dir))
        self._runs_only = None if runs is None else set(runs)
        self._swarms_only = None if swarms is None else set(swarms)
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._swarms: dict[str, SwarmView] = {}
        self._readers: OrderedDict[str, TranscriptReader] = OrderedDict()
        self._index = RunsAndSwarms(self.horde_dir)
        self._at = "index.html"
        self._query = ""
        """What every link of the page being rendered carries (`?refresh=0`)."""
        self._fresh: set[str] = set()
        """Swarms caught up for the page being rendered."""
        self._args: dict[str, str] = {}
        """The query of the page being rendered (`?run=` narrows a project page)."""
        self._project: LedgerView | None = None
        self.served = False
        """Set by the server: `graph.mmd` links absolute (`/runs/...`), as served; an
        export's are relative."""

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

    def _run(self, run_id: str) -> _Run | None:
        run = self._runs.get(run_id)
        if run is None:
            if not self._in_scope(run_id):
                return None
            path = find_run(self.horde_dir, run_id)
            if path is None:
                return None
            confined(self.horde_dir, path)
            run = _Run(path, RunView(path), LedgerView(path.parent.parent, path.name))
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

    def _event_pages(self, run: _Run) -> int:
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

    # -- rendering -------------------------------------------------------------------------

    def render(
        self, path: str, *, still: bool = False, query: dict[str, str] | None = None
    ) -> Page:
        """The page at `path` (relative, e.g. `runs/<id>/findings.html`); a page that
        does not exist is a 404 page (the export never links to one), one that fails to
        read its files an error page (exported as such, so no link dangles). `still`:
        its links keep `?refresh=0` (the server's; an export never sets it)."""
        self._at = path
        self._query = "?refresh=0" if still else ""
        self._args = dict(query or {})
        self._fresh.clear()
        parts = path.split("/")
        try:
            page = self._route(parts)
        except Outside as exc:
            page = Page(path, "Refused", f'<p class="error">{esc(exc)}</p>', {"error": str(exc)})
            page.status = 403
        except Exception as exc:  # a file torn or replaced mid-read: its page says so
            why = f"this page could not be read: {type(exc).__name__}: {exc}"
            page = Page(path, "Unreadable", f"<p>{esc(why)}</p>", {"error": why}, status=500)
        if page is None:
            page = Page(
                path, "Not found", "<p>No such page.</p>", {"error": "not found"}, status=404
            )
        page.path = path
        return page

    def _route(self, parts: list[str]) -> Page | None:
        if parts == ["index.html"]:
            return self._index_page()
        if len(parts) == 1 and parts[0].removesuffix(".html") in PROJECT_PAGES:
            return self._project_page(parts[0].removesuffix(".html")) if self._whole else None
        if len(parts) >= 3 and parts[0] == "runs":
            run = self._run(parts[1])
            return None if run is None else self._run_page(run, parts[1], parts[2:])
        if len(parts) >= 3 and parts[0] == "swarms" and parts[1] in self.swarm_list():
            return self._swarm_page(parts[1], parts[2:])
        return None

    def href(self, target: str) -> str:
        """`target` (a site path, `#anchor` allowed) relative to this page; "" stays ""."""
        if not target:
            return ""
        path, _, frag = target.partition("#")
        rel = _relative(path, posixpath.dirname(self._at) or ".") + self._query if path else ""
        return rel + (f"#{frag}" if frag else "")

    def link(self, target: str, text: str, cls: str = "") -> str:
        """`<a>` to `target` (a site path, `#anchor` allowed) relative to this page."""
        klass = f' class="{cls}"' if cls else ""
        return f'<a href="{esc(self.href(target))}"{klass}>{esc(text)}</a>'

    def html(self, page: Page, refresh: bool = False) -> str:
        """The whole document of `page`, masked; `refresh`: reload every three seconds
        (the server's live pages; an export never refreshes)."""
        reload = '<meta http-equiv="refresh" content="3">' if refresh else ""
        doc = (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"{reload}<title>{esc(page.title)}</title><style>{CSS}</style></head><body>"
            f"<header>{self.link('index.html', 'runs')} {page.nav}</header>"
            f"<main><h1>{esc(page.title)}</h1>{page.body}</main>"
            f"<footer>{build_footer()}</footer></body></html>"
        )
        return self.mask(doc)

    def json(self, page: Page) -> str:
        return self.mask(json.dumps(page.data, ensure_ascii=False, default=str))

    # -- index -----------------------------------------------------------------------------

    def _index_page(self) -> Page:
        self._index.refresh()
        runs, swarms = set(self.run_list()), set(self.swarm_list())
        rows = [r for r in self._index.rows() if r.run_id in (swarms if r.hordes else runs)]
        data: list[dict[str, Any]] = [
            {
                "id": r.run_id,
                "kind": "swarm" if r.hordes else "run",
                "state": r.state,
                "started": r.started,
                "count": r.count,
                "model": r.model,
                "outcome": r.outcome,
                "prompt": r.prompt
                if r.hordes
                else self._prompt(find_run(self.horde_dir, r.run_id), r.prompt),
                "files": list(r.files),
            }
            for r in rows
        ]
        cells = [
            (
                self.link(
                    f"{'swarms' if d['kind'] == 'swarm' else 'runs'}/{d['id']}/index.html", d["id"]
                ),
                esc(d["kind"]),
                esc(d["state"]),
                esc(_when(d["started"])),
                esc(d["count"]),
                esc(d["model"]),
                esc(d["outcome"]),
                esc(d["prompt"]),
                esc(", ".join(d["files"])),
            )
            for d in data
        ]
        cols = ("id", "kind", "state", "started", "count", "model", "outcome", "prompt", "files")
        body = table(cols, cells, "runs") if rows else "<p>No runs yet.</p>"
        live = any(d["state"] in ("active", "finalizing", "pending") for d in data)
        page = Page("index.html", "Runs and swarms", body, {"runs": data}, live=live)
        page.nav = self._project_nav("") if self._whole else ""
        return page

    # -- the project -----------------------------------------------------------------------

    def _project_nav(self, current: str) -> str:
        links = " ".join(
            self.link(f"{k}.html", k, "current" if k == current else "") for k in PROJECT_PAGES
        )
        return f'<div class="scope">project</div><nav>{links}</nav>'

    def _project_page(self, kind: str) -> Page:
        """One project ledger across every single run, each row tagged with its run;
        `?run=` keeps one run's rows."""
        if self._project is None:
            self._project = LedgerView(self.horde_dir)
        self._project.refresh()
        state = self._project.state
        self._index.refresh()
        singles = set(run_ids(self.horde_dir))
        live = [r.run_id for r in self._index.rows() if r.run_id in singles and r.state in LIVE]
        only = self._args.get("run") or None
        runs = entry_runs(state, kind)
        rows: list[tuple[str, tuple[str, ...], str]]
        if kind == "concerns":
            rows = [(c[0], (c[1], c[3]), c[2]) for c in concern_rows(state)]
            columns: tuple[str, ...] = ("concern", "by", "definition")
        else:
            rows = [
                (r.id, tuple(r.cells())[1:], runs.get(r.key, ""))
                for r in self._project.rows(kind, "newest")
            ]
            columns = self._project.columns(kind)
        rows = [r for r in rows if only is None or r[2] == only]
        cited = citers(state, live) if kind == "resources" else {}
        data: dict[str, Any] = {
            "ledger": kind,
            "run": only,
            "columns": ["run", *columns],
            "rows": [{"id": i, "run": run, "cells": [i, *cells]} for i, cells, run in rows],
        }
        cells = []
        for ident, rest, run in rows:
            tag = self.link(f"runs/{run}/index.html", run) if run in singles else esc(run)
            at = self.link(f"runs/{run}/{kind}.html#{anchor(ident)}", ident)
            line = [tag, at if run in singles and kind != "concerns" else esc(ident)]
            line += [esc(c) for c in rest]
            if kind == "resources":
                line.append(
                    esc("; ".join(f"{r}: {', '.join(m)}" for r, m in cited.get(ident, {}).items()))
                )
            cells.append(line)
        if kind == "resources":
            data["columns"].append("cited in a live run")
            for row in data["rows"]:
                row["cited_in_live_runs"] = cited.get(row["id"], {})
        parts = [
            self._swarm_pointer(kind),
            self._run_filter(kind, only, sorted(set(runs.values()))),
        ]
        parts.append(
            table(data["columns"], cells, f"ledger {kind}")
            if cells
            else f"<p>No {esc(kind)} yet.</p>"
        )
        title = f"{kind.capitalize()} · project" + (f" · run {only}" if only else "")
        return Page("", title, "".join(parts), data, live=bool(live), nav=self._project_nav(kind))

    def _swarm_pointer(self, kind: str) -> str:
        """While a swarm runs, its hordes write their own ledgers: say where to look."""
        out = []
        for swarm in self.swarm_list():
            view = self._swarm(swarm)
            if view.live:
                page = f"{kind}.html" if kind in LEDGERS else "index.html"
                out.append(
                    f'<p class="warn">Swarm {esc(swarm)} is running: its hordes write ledgers of '
                    f"their own and leave these ledgers untouched; see "
                    f"{self.link(f'swarms/{swarm}/{page}', f'its {kind}')}.</p>"
                )
        return "".join(out)

    def _run_filter(self, kind: str, only: str | None, runs: list[str]) -> str:
        """`runs: all | <id> ...` (served only: an exported page takes no query)."""
        if not self.served or not runs:
            return ""
        joiner = "&" if self._query else "?"
        tabs = [self.link(f"{kind}.html", "all", "" if only else "current")]
        for run in runs:
            href = esc(self.href(f"{kind}.html") + f"{joiner}run={quote(run)}")
            cls = ' class="current"' if run == only else ""
            tabs.append(f'<a href="{href}"{cls}>{esc(run)}</a>')
        return f'<p class="pager">runs: {" | ".join(tabs)}</p>'

    def _prompt(self, run_dir: Path | None, prompt: str) -> str:
        """A run's prompt, read from its TASK.md, or the line saying why not when that
        file leads outside the horde directory."""
        try:
            if run_dir is not None:
                confined(self.horde_dir, run_dir / "TASK.md")
        except Outside as exc:
            return str(exc)
        return prompt

    # -- one run ---------------------------------------------------------------------------

    def _run_nav(self, run_id: str, current: str) -> str:
        base = f"runs/{run_id}/"
        items = [("index.html", "overview"), *((f"{k}.html", k) for k in LEDGERS)]
        items += [("collaboration.html", "collaboration"), ("graph.html", "graph")]
        links = " ".join(
            self.link(base + p, label, "current" if p == current else "") for p, label in items
        )
        scope = f'<div class="scope">run {esc(run_id)}</div>'
        swarm = self._swarm_of(run_id)
        if swarm is not None:
            scope = f'<div class="scope">{self._tabs(swarm, current, run_id)}</div>'
        return f"{scope}<nav>{links}</nav>"

    def _swarm_of(self, run_id: str) -> str | None:
        for swarm in self.swarm_list():
            if run_id.startswith(swarm + "-h"):
                return swarm
        return None

    def _tabs(self, swarm_id: str, page: str, current: str | None) -> str:
        """`swarm <id>: all | h1 | h2 ...`, each keeping the page type."""
        view = self._swarm(swarm_id)
        swarm_page = (
            page
            if page.removesuffix(".html") in (*LEDGERS, "threads", "index", "graph")
            else "index.html"
        )
        if page == "collaboration.html":
            swarm_page = "threads.html"
        tabs = [self.link(f"swarms/{swarm_id}/{swarm_page}", "all", "" if current else "current")]
        for line in view.lines():
            if line.run_dir is None:
                tabs.append(f'<span class="dim">{esc(line.horde)}</span>')
                continue
            run_page = "collaboration.html" if page == "threads.html" else page
            if not run_page.endswith(".html") or run_page.startswith("events-"):
                run_page = "index.html"  # no such page in every horde: its overview
            run_id = line.run_dir.name
            cls = "current" if run_id == current else ""
            tabs.append(self.link(f"runs/{run_id}/{run_page}", line.horde, cls))
        return f"swarm {esc(swarm_id)}: " + " | ".join(tabs)

    def _run_page(self, run: _Run, run_id: str, rest: list[str]) -> Page | None:
        name = rest[0]
        nav = self._run_nav(run_id, name if len(rest) == 1 else "index.html")
        page: Page | None = None
        if rest == ["index.html"]:
            page = self._overview(run, run_id)
        elif len(rest) == 1 and name.endswith(".html"):
            stem = name.removesuffix(".html")
            kind, _, view = stem.partition("-")
            if kind in LEDGERS and view in ("", "oldest", "owner", "clusters"):
                page = self._ledger(run, run_id, kind, view or "newest")
            elif stem == "collaboration":
                page = self._collaboration(run, run_id)
            elif kind == "events" and view.isdigit():
                page = self._events(run, run_id, int(view))
            elif stem == "graph":
                page = self._graph(run, run_id)
        elif rest == ["graph.mmd"]:
            page = self._mermaid(run, run_id)
        elif len(rest) == 2 and rest[0] == "files":
            page = self._document(run.run_dir, rest[1].removesuffix(".html"), f"run {run_id}")
        elif len(rest) == 3 and rest[0] == "members":
            page = self._member_page(run, run_id, rest[1], rest[2])
        if page is not None:
            page.nav, page.live = nav, run.view.live
        return page

    def _overview(self, run: _Run, run_id: str) -> Page:
        info, life, members = run.view.info, run.view.life, run.view.members()
        data: dict[str, Any] = {
            "id": run_id,
            "state": run.view.state,
            "prompt": self._prompt(run.run_dir, info.task),
            "model": info.model,
            "demo": info.demo,
            "outcome": life.outcome,
            "diagnosis": life.diagnosis,
            "phase": run.phase.phase,
            "canary": run.phase.canary,
            "layers": list(info.layers),
            "members": [_member_json(m) for m in members],
            "files": [p.name for p in run.view.files],
        }
        if life.stop_clean is not None:
            data["stop_clean"] = {"requested": life.stop_clean[0], "grace_s": life.stop_clean[1]}
        base = f"runs/{run_id}/"
        facts = [
            ("state", esc(data["state"])),
            ("phase", esc(data["phase"])),
            ("outcome", esc(f"{life.outcome} {('· ' + life.diagnosis) if life.diagnosis else ''}")),
            ("canary", esc(data["canary"] or "-")),
            ("model", esc(f"{DEMO_MODEL}: {info.model}" if info.demo else info.model)),
        ]
        if "stop_clean" in data:
            facts.append(("clean stop", esc(f"grace {life.stop_clean[1]:g} s")))  # type: ignore[index]
        parts = [table(("", ""), facts, "facts")]
        shown = self._prompt(run.run_dir, info.task or info.prompt)
        parts.append(f"<h2>Prompt</h2><pre>{esc(shown)}</pre>")
        if info.layers:
            items = "".join(f"<li>{esc(layer)}</li>" for layer in info.layers)
            parts.append(f"<h2>Plan layers</h2><ol>{items}</ol>")
        rows = [
            (
                self.link(f"{base}members/{m['name']}/index.html", m["name"]),
                esc(m["role"]),
                esc(m["status"]),
                esc(m["exit_cause"] or ""),
                esc(m["turns"]),
                esc(f"{m['prompt_tokens']} / {m['completion_tokens']}"),
                esc(_cost(m["cost_usd"])),
                esc(m["tool_summary"]),
            )
            for m in data["members"]
        ]
        cols = ("member", "role", "status", "end", "turns", "tokens in / out", "cost", "last call")
        parts.append("<h2>Members</h2>" + table(cols, rows, "members"))
        files = " · ".join(self.link(f"{base}files/{f}.html", f) for f in data["files"])
        parts.append(f"<h2>Run files</h2><p>{files or 'none yet'}</p>")
        return Page("", f"Run {run_id}", "".join(parts), data)

    def _ledger(self, run: _Run, run_id: str, kind: str, view: str) -> Page | None:
        if view not in run.ledgers.views(kind):
            return None
        base = f"runs/{run_id}/"
        rows = run.ledgers.rows(kind, view)
        columns = run.ledgers.columns(kind)
        data: dict[str, Any] = {
            "ledger": kind,
            "view": view,
            "columns": list(columns),
            "rows": [{"id": r.id, "cells": list(r.cells()), "group": r.group} for r in rows],
        }
        views = " ".join(
            self.link(
                f"{base}{kind}{'' if v == 'newest' else '-' + v}.html",
                v,
                "current" if v == view else "",
            )
            for v in run.ledgers.views(kind)
        )
        parts = [f'<p class="pager">views: {views}</p>']
        groups: OrderedDict[str, list[Any]] = OrderedDict()
        for r in rows:
            cells = [esc(c) for c in r.cells()]
            cells[0] = self.link(f"{base}{kind}.html#{anchor(r.key)}", r.id)
            groups.setdefault(r.group, []).append(cells)
        for group, cells in groups.items():
            if group:
                parts.append(f"<h3>{esc(group)}</h3>")
            parts.append(table(columns, cells, f"ledger {kind}"))
        if not rows:
            parts.append(f"<p>No {esc(kind)} yet.</p>")
        if view == "newest":  # the canonical page: every entry in full, under its anchor
            parts.append("<h2>Entries</h2>")
            for r in rows:
                parts.append(self._entry(run, kind, r.key, r.id))
        title = f"{kind.capitalize()} · run {run_id}" + ("" if view == "newest" else f" · {view}")
        return Page("", title, "".join(parts), data)

    def _entry(self, run: _Run, kind: str, key: str, shown: str) -> str:
        text = run.ledgers.detail(kind, key)
        first = text.strip().splitlines()[0] if text.strip() else shown
        inner = markdown(text)
        return (
            f'<section class="entry" id="{anchor(key)}"><h3>{esc(shown)}</h3>'
            f"{folded(markdown_line(first), inner, len(text))}</section>"
        )

    def _collaboration(self, run: _Run, run_id: str) -> Page:
        base = f"runs/{run_id}/"
        threads = run.ledgers.rows("threads", "newest")
        accepted = acceptance_all(run.ledgers.state, run_id)
        resources = run.ledgers.rows("resources", "newest")
        data: dict[str, Any] = {
            "threads": [{"id": r.id, "cells": list(r.cells())} for r in threads],
            "acceptance": [a.as_json() for a in accepted],
            "resources": [{"id": r.id, "cells": list(r.cells())} for r in resources],
            "event_pages": self._event_pages(run),
        }
        parts = ["<h2>Threads</h2>"]
        rows = []
        for r in threads:
            cells = [esc(c) for c in r.cells()]
            cells[0] = self.link(f"{base}collaboration.html#{anchor(r.key)}", r.id)
            rows.append(cells)
        parts.append(
            table(run.ledgers.columns("threads"), rows, "threads") if rows else "<p>No threads.</p>"
        )
        parts += [self._entry(run, "threads", r.key, r.id) for r in threads]
        parts.append("<h2>Artifact acceptance and review scope</h2>")
        parts.append(self._acceptance_table(run_id, accepted, anchored=True))
        parts.append("<h2>Resources</h2>")
        rrows = [[esc(c) for c in r.cells()] for r in resources]
        parts.append(table(run.ledgers.columns("resources"), rrows) if rrows else "<p>None.</p>")
        pages = " ".join(
            self.link(f"{base}events-{n}.html", str(n)) for n in range(1, data["event_pages"] + 1)
        )
        parts.append(
            f'<h2>Event audit</h2><p class="pager">pages of {EVENTS_PER_PAGE}: {pages}</p>'
        )
        return Page("", f"Collaboration · run {run_id}", "".join(parts), data)

    def _acceptance_table(self, run_id: str, accepted: list[Any], anchored: bool) -> str:
        """Each target's acceptance; `anchored`: this is the run's collaboration page,
        which anchors its artifacts (elsewhere they link to it)."""
        rows = [
            (
                self._acceptance_target(run_id, a.target)
                if anchored
                else self._entity_link(run_id, a.target),
                esc(f"r{a.revision}"),
                esc(a.owner),
                esc(a.label),
                esc(a.reason),
                esc(", ".join(a.deciding)),
                esc("; ".join(f"{v}: {u}" for v, u in a.unchecked)),
            )
            for a in accepted
        ]
        cols = (
            "target",
            "revision",
            "owner",
            "state",
            "reason",
            "deciding reviews",
            "left unchecked",
        )
        return table(cols, rows, "acceptance") if rows else "<p>Nothing under review.</p>"

    def _reviews(self, run: _Run, run_id: str) -> tuple[str, list[dict[str, Any]]]:
        """The run's V# reviews, oldest first: a table and its data."""
        found = sorted(
            (v for v in run.ledgers.state.reviews.values() if v.run == run_id), key=lambda v: v.seq
        )
        data = [
            {
                "id": v.id,
                "by": v.by,
                "target": v.target,
                "revision": v.revision,
                "verdict": v.verdict,
                "support": v.support,
                "checked": v.checked,
            }
            for v in found
        ]
        rows = [
            (
                esc(v["id"]),
                esc(v["by"]),
                self._entity_link(run_id, str(v["target"])),
                esc(f"r{v['revision']}"),
                esc(v["verdict"]),
                esc(v["support"]),
                esc(v["checked"]),
            )
            for v in data
        ]
        cols = ("review", "by", "target", "revision", "verdict", "support", "checked")
        return (table(cols, rows, "reviews") if rows else "<p>No reviews.</p>"), data

    def _swarm_collaboration(self, swarm_id: str, view: SwarmView) -> Page:
        """Every horde's threads, then each horde's acceptance and reviews under its own
        heading (each horde's event audit stays on its run page)."""
        text = view.ledgers_markdown("threads")
        parts = [markdown(text)]
        hordes: dict[str, Any] = {}
        for line in view.lines():
            run = self._run(line.run_dir.name) if line.run_dir is not None else None
            if run is None or line.run_dir is None:
                hordes[line.horde] = None
                parts.append(f"<h2>{esc(line.horde)}: not started yet</h2>")
                continue
            run_id = line.run_dir.name
            accepted = acceptance_all(run.ledgers.state, run_id)
            reviews, data = self._reviews(run, run_id)
            hordes[line.horde] = {"acceptance": [a.as_json() for a in accepted], "reviews": data}
            parts += [
                f"<h2>{esc(line.horde)}: acceptance and reviews</h2>",
                self._acceptance_table(run_id, accepted, anchored=False),
                reviews,
            ]
        data_all = {"ledger": "threads", "markdown": text, "hordes": hordes}
        return Page("", f"Collaboration · swarm {swarm_id}", "".join(parts), data_all)

    def _acceptance_target(self, run_id: str, ident: str) -> str:
        """A finding links to its entry; an artifact, which has no ledger page, is
        anchored here (the graph's review marks link to it)."""
        if ident.startswith("A"):
            return f'<span id="{anchor(ident)}">{esc(ident)}</span>'
        return self._entity_link(run_id, ident)

    def _entity_link(self, run_id: str, ident: str) -> str:
        found = entry_page(ident)
        return self.link(f"runs/{run_id}/{found}", ident) if found else esc(ident)

    def _events(self, run: _Run, run_id: str, n: int) -> Page | None:
        confined(self.horde_dir, run.run_dir / "events.jsonl")
        index = run.event_index()
        try:
            pages = max(1, -(-len(index) // EVENTS_PER_PAGE))
            if not 1 <= n <= pages:
                return None
            first = (n - 1) * EVENTS_PER_PAGE
            raws = index.raw_lines(first, min(len(index), first + EVENTS_PER_PAGE))
        finally:
            index.close()
        lines = []
        for i, raw in enumerate(raws, first):
            record, error = parse_record(raw)
            line = format_event(record, i, error or "")
            ident = str(record.get("id")) if record and record.get("id") else f"L{i + 1}"
            lines.append((ident, line))
        base = f"runs/{run_id}/"
        pager = " ".join(
            self.link(f"{base}events-{p}.html", str(p), "current" if p == n else "")
            for p in sorted({1, max(1, n - 1), n, min(pages, n + 1), pages})
        )
        body = f'<p class="pager">page {n} of {pages}: {pager}</p><pre>'
        body += "\n".join(f'<span id="{esc(anchor(i))}">{esc(text)}</span>' for i, text in lines)
        body += "</pre>"
        data = {"page": n, "pages": pages, "events": [t for _, t in lines]}
        return Page("", f"Event audit · run {run_id} · page {n}", body, data)

    def _swimlane(self, run: _Run) -> SwimlaneView:
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

    def _graph(self, run: _Run, run_id: str) -> Page:
        graph = self._swimlane(run).graph()
        entries = entry_pages(run.ledgers, run_id, LEDGERS)
        events = run.event_index()
        try:
            svg, data = swimlane_svg(
                graph,
                f"swimlane of run {run_id}",
                lambda mark: self.href(self._mark_target(run_id, mark, entries, events)),
            )
        finally:
            events.close()
        base = f"runs/{run_id}/"
        body = (
            "<p>One lane per member plus the parent, on a real-time axis with the phases as "
            "bands; arrows are reviews, challenges and what answered them, findings under "
            "their idea, deltas and supersessions (hover one for its label); every mark "
            f"links to its entry. {self.link(base + 'graph.mmd', 'Mermaid source (GRAPH.md)')}</p>"
            f'<div class="graph">{svg}</div>'
        )
        if graph.dropped:
            body += f"<p class=warn>{graph.dropped} events left out (node cap).</p>"
        return Page("", f"Graph · run {run_id}", body, data)

    def _mark_target(
        self, run_id: str, mark: Any, entries: dict[str, str], events: LineIndex
    ) -> str:
        """Where a mark links: its ledger entry (a review: the finding or artifact it
        checked), else its event in the audit; "" when neither is on any page."""
        base = f"runs/{run_id}/"
        ident = mark.text
        if mark.kind in ("review", "refuted"):
            ident = re.split(r"[✓~✗?]", mark.text, maxsplit=1)[-1]
        if mark.kind in ("review", "refuted", "idea", "finding", "entity") and ident in entries:
            return base + entries[ident]
        line = event_line(events, mark.event) if mark.event else None
        if line is None:
            return ""
        return f"{base}{event_page(line)}#{anchor(mark.event)}"

    def _mermaid(self, run: _Run, run_id: str) -> Page:
        """The run's graph as Mermaid, every node a `click` link to its page: absolute
        (`/runs/<id>/...`) when served, relative to this file in an export."""
        graph = self._swimlane(run).graph()
        entries = entry_pages(run.ledgers, run_id, LEDGERS)
        events = run.event_index()
        root = f"/runs/{run_id}/" if self.served else ""
        base = f"runs/{run_id}/"

        def href(node: Node) -> str | None:
            text, kind = mark_of(node)
            found = self._mark_target(run_id, Mark(0, text, kind, node.event), entries, events)
            return root + found.removeprefix(base) if found else None

        try:
            source = mermaid_source(graph, href)
        finally:
            events.close()
        return Page("", f"graph.mmd · run {run_id}", data={"mermaid": source}, text=source)

    def _document(self, folder: Path, name: str, scope: str) -> Page | None:
        allowed = READING_ORDER if "run" in scope else SWARM_DOCS
        if name not in allowed or is_secret(Path(os.path.realpath(folder / name)), self.top):
            return None  # a document linked to a secret file (store/secretfiles.py) is not shown
        try:
            text = confined(self.horde_dir, folder / name).read_text(
                encoding="utf-8", errors="replace"
            )
        except OSError:
            return None
        if name.endswith(".json"):
            body = f"<pre>{esc(text)}</pre>"
        else:
            body = markdown(text)
        return Page("", f"{name} · {scope}", body, {"name": name, "text": text})

    def _member_page(self, run: _Run, run_id: str, name: str, page: str) -> Page | None:
        member = next((m for m in run.view.members() if m.name == name), None)
        if member is None:
            return None
        base = f"runs/{run_id}/members/{name}/"
        found = sessions(run.run_dir, name)
        if page == "index.html":
            data = _member_json(member)
            data["sessions"] = [p.name for p in found]
            parts = [
                table(
                    ("", ""),
                    [
                        (esc(k), esc(data[k]))
                        for k in (
                            "role",
                            "status",
                            "exit_cause",
                            "turns",
                            "prompt_tokens",
                            "completion_tokens",
                            "tool_summary",
                            "detail",
                        )
                    ],
                    "facts",
                )
            ]
            final = member.final_message or ""
            parts.append(
                "<h2>Final text</h2>"
                + (
                    folded(esc(final[:80]), f"<pre>{esc(final)}</pre>", len(final))
                    if final
                    else "<p>none yet</p>"
                )
            )
            logs = f"{self.link(base + 'log.html', 'log tail')} · {self.link(base + 'log-all.html', 'whole log')}"
            parts.append(f"<p>{logs}</p><h2>Transcripts</h2><ul>")
            for s, path in enumerate(found, 1):
                n = self._entry_count(path)
                count = "refused: outside the horde directory" if n is None else f"{n} entries"
                parts.append(
                    f"<li>{self.link(f'{base}transcript-{s}-1.html', path.name)} · {count}</li>"
                )
            parts.append("</ul>")
            return Page("", f"{name} · run {run_id}", "".join(parts), data)
        if page in ("log.html", "log-all.html"):
            return self._log(run, run_id, name, page)
        match = re.fullmatch(r"transcript-(\d+)-(\d+)\.html", page)
        if match is None or not 1 <= int(match.group(1)) <= len(found):
            return None
        return self._transcript(run_id, name, found, int(match.group(1)), int(match.group(2)))

    def _log(self, run: _Run, run_id: str, name: str, page: str) -> Page:
        """The end of a member's log (64 KiB; `?tail=N`: its last N lines), or the whole
        log up to its last MiB (`log-all.html`, `?tail=0`)."""
        lines = self._args.get("tail", "") if page == "log.html" else "0"
        whole = lines.strip() == "0"
        size = LOG_WHOLE_BYTES if whole or lines.strip().isdigit() else LOG_TAIL_BYTES
        tail = _tail(confined(self.horde_dir, run.run_dir / f"{name}.log"), size)
        if lines.strip().isdigit() and not whole:
            kept = tail.splitlines(keepends=True)[-int(lines) :]
            tail = "".join(kept)
        base = f"runs/{run_id}/members/{name}/"
        views = f"{self.link(base + 'log.html', 'tail')} · {self.link(base + 'log-all.html', 'whole log')}"
        shown = "whole log (its last MiB)" if whole else "tail"
        body = f'<p class="pager">{shown}: {views}</p>'
        body += f"<pre>{esc(tail)}</pre>" if tail else "<p>No log.</p>"
        return Page("", f"{name}.log · run {run_id}", body, {"tail": tail, "whole": whole})

    def _transcript(self, run_id: str, name: str, found: list[Path], s: int, p: int) -> Page | None:
        reader = self._reader(found[s - 1])
        total = len(reader)
        pages = max(1, -(-total // PAGE_ENTRIES))
        if not 1 <= p <= pages:
            return None
        base = f"runs/{run_id}/members/{name}/"
        first = (p - 1) * PAGE_ENTRIES
        entries, parts = [], []
        for i in range(first, min(total, first + PAGE_ENTRIES)):
            m = reader.message(i)
            raw = reader.index.raw_line(i).decode("utf-8", errors="replace")
            entries.append(
                {"line": i, "role": m.role, "kind": m.kind, "head": m.head, "body": m.body}
            )
            body = f"<pre>{esc(m.body)}</pre>" if m.body else ""
            shown = (
                f"<details><summary>{esc(m.head)}</summary>{body}</details>"
                if m.folds or len(m.body) > LONG_ENTRY
                else f'<div class="role">{esc(m.head)}</div>{body}'
            )
            parts.append(
                f'<div class="msg {esc(m.kind)}" id="m{i}">{shown}'
                f'<details class="raw"><summary class="dim">raw JSON</summary><pre>{esc(raw)}</pre></details></div>'
            )
        pager = " ".join(
            self.link(f"{base}transcript-{s}-{q}.html", str(q), "current" if q == p else "")
            for q in sorted({1, max(1, p - 1), p, min(pages, p + 1), pages})
        )
        head = f'<p class="pager">{esc(found[s - 1].name)} · entries {first + 1}-{first + len(entries)} of {total} · page {p} of {pages}: {pager} · {self.link(base + "index.html", name)}</p>'
        data = {
            "session": found[s - 1].name,
            "page": p,
            "pages": pages,
            "total": total,
            "entries": entries,
        }
        return Page("", f"Transcript · {name} · run {run_id}", head + "".join(parts), data)

    # -- swarms ----------------------------------------------------------------------------

    def _swarm_page(self, swarm_id: str, rest: list[str]) -> Page | None:
        view = self._swarm(swarm_id)
        name = rest[0]
        current = name if len(rest) == 1 else "index.html"
        items = [("index.html", "overview"), *((f"{k}.html", k) for k in LEDGERS)]
        items += [("threads.html", "collaboration"), ("graph.html", "graph")]
        row = " ".join(
            self.link(f"swarms/{swarm_id}/{p}", label, "current" if p == current else "")
            for p, label in items
        )
        nav = f'<div class="scope">{self._tabs(swarm_id, current, None)}</div><nav>{row}</nav>'
        page: Page | None = None
        if rest == ["index.html"]:
            page = self._swarm_overview(swarm_id, view)
        elif rest == ["graph.html"]:
            page = self._swarm_graph(swarm_id, view)
        elif rest == ["threads.html"]:
            page = self._swarm_collaboration(swarm_id, view)
        elif len(rest) == 1 and name.removesuffix(".html") in (*LEDGERS, "threads"):
            kind = name.removesuffix(".html")
            text = view.ledgers_markdown(kind)
            page = Page(
                "",
                f"{kind.capitalize()} · swarm {swarm_id}",
                markdown(text),
                {"ledger": kind, "markdown": text},
            )
        elif len(rest) == 2 and rest[0] == "files":
            page = self._document(
                view.swarm_dir, rest[1].removesuffix(".html"), f"swarm {swarm_id}"
            )
        if page is not None:
            page.nav, page.live = nav, view.live
        return page

    def _swarm_graph(self, swarm_id: str, view: SwarmView) -> Page:
        """One lane per horde (and the swarm's own steps: planning, the merge) with its
        lifecycle marks from SWARM.json's timeline, on a real-time axis."""
        info = view.info
        steps = list(info.timeline) if info else []
        lanes = ["swarm", *(info.horde_names() if info else [])]
        runs = {ln.horde: ln.run_dir.name for ln in view.lines() if ln.run_dir is not None}
        axis = TimeAxis([t for t, _, _ in steps], 90, PLOT_MIN)
        lane_h = 24
        width, height = int(axis.left + axis.plot + 160), lane_h * (len(lanes) + 1)
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="group" aria-label="hordes of swarm {esc(swarm_id)}">'
        ]
        for row, lane in enumerate(lanes):
            y = lane_h * (row + 1)
            out.append(lane_open(lane, lane, y, width))
            for ts, kind, horde in steps:
                if (horde or "swarm") != lane:
                    continue
                x = axis.place(lane, ts, CELL * (len(kind) + 1))
                mark = f'<text class="k-lifecycle" x="{x:.1f}" y="{y}">{esc(kind)}</text>'
                target = (
                    f"runs/{runs[lane]}/graph.html"
                    if lane in runs
                    else f"swarms/{swarm_id}/index.html"
                )
                out.append(f'<a href="{esc(self.href(target))}">{mark}</a>')
            out.append("</g>")
        out.append("</svg>")
        data = {
            "lanes": lanes,
            "timeline": [{"ts": t, "kind": k, "horde": h} for t, k, h in steps],
        }
        body = f'<p>One lane per horde; each mark opens that horde\'s own graph.</p><div class="graph">{"".join(out)}</div>'
        return Page("", f"Graph · swarm {swarm_id}", body, data)

    def _swarm_overview(self, swarm_id: str, view: SwarmView) -> Page:
        info = view.info
        lines = view.lines()
        data: dict[str, Any] = {
            "id": swarm_id,
            "state": view.state,
            "prompt": info.prompt if info else "",
            "outcome": info.outcome if info else "",
            "merge": info.merge if info else "",
            "hordes": [
                {
                    "horde": ln.horde,
                    "state": ln.state,
                    "outcome": ln.outcome,
                    "members": ln.members,
                    "findings": ln.findings,
                    "accepted": ln.accepted,
                    "cost_usd": ln.cost_usd,
                    "workstream": ln.workstream,
                    "run": ln.run_dir.name if ln.run_dir else None,
                }
                for ln in lines
            ],
            "files": list(view.files),
        }
        rows = [
            (
                self.link(f"runs/{h['run']}/index.html", h["horde"])
                if h["run"]
                else esc(h["horde"]),
                esc(h["state"]),
                esc(h["outcome"]),
                esc(h["members"]),
                esc(h["findings"]),
                esc(h["accepted"]),
                esc(_cost(h["cost_usd"])),
                esc(h["workstream"]),
            )
            for h in data["hordes"]
        ]
        cols = (
            "horde",
            "state",
            "outcome",
            "members",
            "findings",
            "accepted",
            "cost",
            "workstream",
        )
        files = " · ".join(self.link(f"swarms/{swarm_id}/files/{f}.html", f) for f in view.files)
        body = (
            f"<pre>{esc(data['prompt'])}</pre>"
            f"<p>state {esc(data['state'])} · merge {esc(data['merge'] or '-')} · outcome {esc(data['outcome'] or '-')}</p>"
            + table(cols, rows, "hordes")
            + f"<h2>Swarm files</h2><p>{files or 'none yet'}</p>"
        )
        return Page("", f"Swarm {swarm_id}", body, data)


@functools.lru_cache(maxsize=4096)
def _relative(path: str, start: str) -> str:
    """`posixpath.relpath`, remembered: a graph page makes hundreds of the same links."""
    return posixpath.relpath(path, start)


def _member_json(m: Any) -> dict[str, Any]:
    return {
        "name": m.name,
        "role": m.role,
        "status": m.status,
        "exit_cause": m.exit_cause,
        "turns": m.turns,
        "prompt_tokens": m.prompt_tokens,
        "completion_tokens": m.completion_tokens,
        "cost_usd": m.cost_usd,
        "tool_summary": m.tool_summary,
        "detail": m.detail,
        "final_message": m.final_message,
    }


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _when(epoch: float | None) -> str:
    if epoch is None:
        return ""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _tail(path: Path, size: int) -> str:
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
