"""Every page of the browser view, rendered from the same views the app reads.

A `Site` answers one page at a time (`render(path)`) over the pages its `Scope` lists,
so the static export writes them one by one and the server renders the one asked for.
Paths are relative to the site root and every link is made relative to the page it is
on, so the same tree opens from disk and over HTTP.

Each page is a `Page`: an HTML fragment and its `data`, the JSON twin the server sends
under `/api/`. A page's builder gathers its data; a Jinja2 template under `templates/`
(autoescaped: text is never HTML unless a template says so) draws the HTML from that
same data. Whatever a page shows passes `Masker` last (provider-key-looking values,
gateway tokens, this machine's paths), so no page carries them, whichever way it leaves.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from markupsafe import Markup

from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.display import MemberRow
from horde_tui.store.graph import Node, mermaid_source
from horde_tui.store.jsonl import parse_record
from horde_tui.store.runs import find_run
from horde_tui.supervisor.summary import DEMO_MODEL
from horde_tui.view.events import format_event
from horde_tui.view.swimlane import Mark, mark_of
from horde_tui.web import memberpages, project, swarmpages
from horde_tui.web.anchors import EVENTS_PER_PAGE, anchor, entry_pages, mark_target
from horde_tui.web.confine import Outside, confined
from horde_tui.web.graphsvg import swimlane_svg
from horde_tui.web.markup import esc
from horde_tui.web.memberpages import MEMBER_FIELDS
from horde_tui.web.render import CSP, Renderer
from horde_tui.web.scope import LEDGERS, PROJECT_PAGES, Page, RunReaders, pager, pick

__all__ = ["CSP", "Page", "Site", "esc"]
Routes = tuple[tuple[str, Callable[..., Page | None]], ...]
"""Path patterns and what builds the page of each (the site's, a run's, a swarm's)."""


class Site(Renderer):
    """The pages of one scope (see `Scope`), rendered one at a time."""

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
        try:
            page = self._dispatch(ROUTES, path)
        except Outside as exc:
            page = self._message(path, "Refused", str(exc), 403, "error")
        except Exception as exc:  # a file torn or replaced mid-read: its page says so
            why = f"this page could not be read: {type(exc).__name__}: {exc}"
            page = self._message(path, "Unreadable", why, 500)
        if page is None:
            page = self._message(path, "Not found", "No such page.", 404)
            page.data = {"error": "not found"}
        page.path = path
        return page

    def _message(self, path: str, title: str, text: str, status: int, cls: str = "") -> Page:
        body = self.tpl("message.html", text=text, cls=cls)
        return Page(path, title, body, {"error": text}, status=status)

    def _run_pages(self, run_id: str, rest: str) -> Page | None:
        """A run's page (`rest`: after `runs/<id>/`), with the run's navigation."""
        run = self._run(run_id)
        page = None if run is None else self._dispatch(RUN_ROUTES, rest, run, run_id)
        if page is not None and run is not None:
            page.live = run.view.live
            page.nav = self._run_nav(run_id, "index.html" if "/" in rest else rest)
        return page

    def _swarm_pages(self, swarm_id: str, rest: str) -> Page | None:
        """A swarm's page (`rest`: after `swarms/<id>/`), with the swarm's navigation."""
        if swarm_id not in self.swarm_list():
            return None
        view = self._swarm(swarm_id)
        page = self._dispatch(SWARM_ROUTES, rest, swarm_id, view)
        if page is not None:
            page.live = view.live
            page.nav = swarmpages.nav(self, swarm_id, "index.html" if "/" in rest else rest)
        return page

    def _project_page(self, kind: str) -> Page | None:
        return project.page(self, kind) if self._whole else None

    def _dispatch(self, routes: Routes, rest: str, *args: Any) -> Page | None:
        """The page of the first route whose pattern `rest` matches (None: no such page)."""
        for pattern, build in routes:
            if found := re.fullmatch(pattern, rest):
                return build(self, *args, **found.groupdict())
        return None

    # -- index and the project -------------------------------------------------------------

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
        live = any(d["state"] in ("active", "finalizing", "pending") for d in data)
        body = self.tpl("index.html", runs=data)
        page = Page("index.html", "Runs and swarms", body, {"runs": data}, live=live)
        page.nav = project.nav(self, "") if self._whole else ""
        return page

    # -- one run ---------------------------------------------------------------------------

    def _run_nav(self, run_id: str, current: str) -> str:
        items = [("index.html", "overview"), *((f"{k}.html", k) for k in LEDGERS)]
        items += [("collaboration.html", "collaboration"), ("graph.html", "graph")]
        links = [
            (f"runs/{run_id}/{p}", label, "current" if p == current else "") for p, label in items
        ]
        swarm = swarmpages.swarm_of(self, run_id)
        tabs = swarmpages.horde_tabs(self, swarm, current, run_id) if swarm else []
        return self.tpl("nav_scope.html", run_id=run_id, swarm=swarm, tabs=tabs, items=links)

    def _overview(self, run: RunReaders, run_id: str) -> Page:
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
            "members": [pick(m, MEMBER_FIELDS) for m in members],
            "files": [p.name for p in run.view.files],
        }
        pairs = [
            ("state", data["state"]),
            ("phase", data["phase"]),
            ("outcome", f"{life.outcome} {('· ' + life.diagnosis) if life.diagnosis else ''}"),
            ("canary", data["canary"] or "-"),
            ("model", f"{DEMO_MODEL}: {info.model}" if info.demo else info.model),
        ]
        if life.stop_clean is not None:
            data["stop_clean"] = {"requested": life.stop_clean[0], "grace_s": life.stop_clean[1]}
            pairs.append(("clean stop", f"grace {life.stop_clean[1]:g} s"))
        body = self.tpl(
            "overview.html",
            data=data,
            pairs=pairs,
            members=[MemberRow.of(m) for m in members],  # as the app's table and REPORT.md
            base=f"runs/{run_id}/",
            prompt=self._prompt(run.run_dir, info.task or info.prompt),
        )
        return Page("", f"Run {run_id}", body, data)

    def _ledger(self, run: RunReaders, run_id: str, kind: str, view: str | None) -> Page | None:
        view = view or "newest"
        if view not in run.ledgers.views(kind):
            return None
        rows = run.ledgers.rows(kind, view)
        columns = run.ledgers.columns(kind)
        data: dict[str, Any] = {
            "ledger": kind,
            "view": view,
            "columns": list(columns),
            "rows": [{"id": r.id, "cells": list(r.cells()), "group": r.group} for r in rows],
        }
        groups: OrderedDict[str, list[Any]] = OrderedDict()
        for r in rows:
            groups.setdefault(r.group, []).append(r)
        body = self.tpl(
            "ledger.html",
            base=f"runs/{run_id}/",
            kind=kind,
            view=view,
            views=run.ledgers.views(kind),
            columns=columns,
            groups=list(groups.items()),
            # the canonical page: every entry in full, under its anchor
            entries=self._entries(run, kind, rows) if view == "newest" else None,
        )
        title = f"{kind.capitalize()} · run {run_id}" + ("" if view == "newest" else f" · {view}")
        return Page("", title, body, data)

    def _entries(self, run: RunReaders, kind: str, rows: Iterable[Any]) -> list[dict[str, str]]:
        """Each row's entry in full: its anchor, its id, its first line, its text."""
        out = []
        for r in rows:
            text = run.ledgers.detail(kind, r.key)
            first = text.strip().splitlines()[0] if text.strip() else r.id
            out.append({"anchor": anchor(r.key), "shown": r.id, "first": first, "text": text})
        return out

    def _collaboration(self, run: RunReaders, run_id: str) -> Page:
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
        body = self.tpl(
            "collaboration.html",
            base=base,
            run_id=run_id,
            data=data,
            threads=threads,
            thread_columns=run.ledgers.columns("threads"),
            entries=self._entries(run, "threads", threads),
            accepted=accepted,
            resources=resources,
            resource_columns=run.ledgers.columns("resources"),
            per_page=EVENTS_PER_PAGE,
            event_href=lambda n: f"{base}events-{n}.html",
        )
        return Page("", f"Collaboration · run {run_id}", body, data)

    def _events(self, run: RunReaders, run_id: str, n: str) -> Page | None:
        confined(self.horde_dir, run.run_dir / "events.jsonl")
        index, at = run.event_index(), int(n)
        try:
            pages = max(1, -(-len(index) // EVENTS_PER_PAGE))
            if not 1 <= at <= pages:
                return None
            first = (at - 1) * EVENTS_PER_PAGE
            raws = index.raw_lines(first, min(len(index), first + EVENTS_PER_PAGE))
        finally:
            index.close()
        lines = []
        for i, raw in enumerate(raws, first):
            record, error = parse_record(raw)
            ident = str(record.get("id")) if record and record.get("id") else f"L{i + 1}"
            lines.append((ident, format_event(record, i, error or "")))
        body = self.tpl(
            "events.html",
            n=at,
            pages=pages,
            numbers=pager(at, pages),
            lines=lines,
            event_href=lambda p: f"runs/{run_id}/events-{p}.html",
        )
        data = {"page": at, "pages": pages, "events": [t for _, t in lines]}
        return Page("", f"Event audit · run {run_id} · page {at}", body, data)

    def _graph(self, run: RunReaders, run_id: str) -> Page:
        graph = self._swimlane(run).graph()
        entries = entry_pages(run.ledgers, run_id, LEDGERS)
        events = run.event_index()
        try:
            svg, data = swimlane_svg(
                graph,
                f"swimlane of run {run_id}",
                lambda mark: self.href(mark_target(f"runs/{run_id}/", mark, entries, events)),
            )
        finally:
            events.close()
        body = self.tpl(
            "graph.html", base=f"runs/{run_id}/", svg=Markup(svg), dropped=graph.dropped
        )
        return Page("", f"Graph · run {run_id}", body, data)

    def _mermaid(self, run: RunReaders, run_id: str) -> Page:
        """The run's graph as Mermaid, every node a `click` link to its page: absolute
        (`/runs/<id>/...`) when served, relative to this file in an export."""
        graph = self._swimlane(run).graph()
        entries = entry_pages(run.ledgers, run_id, LEDGERS)
        events = run.event_index()
        root = f"/runs/{run_id}/" if self.served else ""
        base = f"runs/{run_id}/"

        def href(node: Node) -> str | None:
            text, kind = mark_of(node)
            found = mark_target(base, Mark(0, text, kind, node.event), entries, events)
            return root + found.removeprefix(base) if found else None

        try:
            source = mermaid_source(graph, href)
        finally:
            events.close()
        return Page("", f"graph.mmd · run {run_id}", data={"mermaid": source}, text=source)

    def _run_document(self, run: RunReaders, run_id: str, name: str) -> Page | None:
        return self.document(run.run_dir, name, f"run {run_id}")


_L = "|".join(LEDGERS)
RUN_ROUTES = (
    (r"index\.html", Site._overview),
    (rf"(?P<kind>{_L})(?:-(?P<view>oldest|owner|clusters))?\.html", Site._ledger),
    (r"collaboration\.html", Site._collaboration),
    (r"events-(?P<n>[0-9]+)\.html", Site._events),
    (r"graph\.html", Site._graph),
    (r"graph\.mmd", Site._mermaid),
    (r"files/(?P<name>[^/]+?)(?:\.html)?", Site._run_document),
    (r"members/(?P<name>[^/]+)/(?P<page>[^/]+)", memberpages.page),
)
"""A run's pages (after `runs/<id>/`) -> what builds it."""
SWARM_ROUTES = (
    (r"index\.html", swarmpages.overview),
    (r"graph\.html", swarmpages.graph),
    (r"threads\.html", swarmpages.collaboration),
    (rf"(?P<kind>{_L})\.html", swarmpages.ledger),
    (r"files/(?P<name>[^/]+?)(?:\.html)?", swarmpages.document),
)
"""A swarm's pages (after `swarms/<id>/`) -> what builds it."""
ROUTES = (
    (r"index\.html", Site._index_page),
    (rf"(?P<kind>{'|'.join(PROJECT_PAGES)})\.html", Site._project_page),
    (r"runs/(?P<run_id>[^/]+)/(?P<rest>.+)", Site._run_pages),
    (r"swarms/(?P<swarm_id>[^/]+)/(?P<rest>.+)", Site._swarm_pages),
)
"""Every page of a site: the index, the project's pages, a run's, a swarm's."""
