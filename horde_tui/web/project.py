"""The project scope's pages and their data: the project ledgers (`.horde/*.md`, what
single runs share) across every run, each entry with the run that wrote it, the concerns as rows, and who
cited each resource in a live run (a swarm's hordes keep ledgers of their own, so they
are not in this scope).

A resource is cited where an entry's text names its R#: the ideas, board posts,
findings (with their evidence), facts and claims of a run that is still live, each
credited to the member who wrote it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from horde_tui.store.runs import run_ids
from horde_tui.store.state import LedgerState
from horde_tui.view.ledgers import LedgerView
from horde_tui.web.render import Renderer
from horde_tui.web.scope import LEDGERS, PROJECT_PAGES, Page

LIVE = frozenset({"active", "finalizing"})
"""Run states in which its members still write."""
_CITE = re.compile(r"\bR([0-9]+)\b")


def _tables(state: LedgerState) -> dict[str, dict[str, Any]]:
    return {
        "ideas": state.ideas,
        "findings": state.findings,
        "facts": state.facts,
        "claims": state.claims,
        "resources": state.resources,
        "concerns": state.concerns,
    }


def entry_runs(state: LedgerState, kind: str) -> dict[str, str]:
    """Each entry of `kind` -> the run that wrote it."""
    if kind == "board":
        return {p.id: p.run for p in state.posts}
    return {key: entry.run for key, entry in _tables(state).get(kind, {}).items()}


def concern_rows(state: LedgerState) -> list[tuple[str, str, str, str]]:
    """(slug, by, run, definition) of every concern, newest first."""
    found = sorted(state.concerns.values(), key=lambda c: c.seq, reverse=True)
    return [(c.id, c.by, c.run, c.definition) for c in found]


def _writings(state: LedgerState) -> Iterator[tuple[str, str, str]]:
    """(run, author, text) of every entry a member wrote."""
    for idea in state.ideas.values():
        yield idea.run, idea.by, idea.text
    for post in state.posts:
        yield post.run, post.by, post.text
    for finding in state.findings.values():
        yield finding.run, finding.by, f"{finding.text}\n{finding.evidence}"
    for fact in state.facts.values():
        yield fact.run, fact.by, fact.text
    for claim in state.claims.values():
        yield claim.run, claim.by, claim.text


def citers(state: LedgerState, live_runs: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """R# -> {live run -> the members who cited it there, in first-citation order}."""
    live = set(live_runs)
    out: dict[str, dict[str, list[str]]] = {}
    for run, author, text in _writings(state):
        if run not in live:
            continue
        for number in dict.fromkeys(_CITE.findall(text or "")):
            ident = f"R{int(number)}"
            if ident in state.resources:
                names = out.setdefault(ident, {}).setdefault(run, [])
                if author not in names:
                    names.append(author)
    return out


def project_data(
    ledgers: LedgerView, kind: str, only: str | None, live: list[str]
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """A project page's JSON (`{"ledger", "run", "columns", "rows"}`, each row tagged
    with its run, `only`'s rows when set; a resource with the members citing it in a
    `live` run), each resource's citers as one line, and the runs its entries came from."""
    state = ledgers.state
    runs = entry_runs(state, kind)
    rows: list[tuple[str, tuple[str, ...], str]]
    if kind == "concerns":
        rows = [(c[0], (c[1], c[3]), c[2]) for c in concern_rows(state)]
        columns: tuple[str, ...] = ("concern", "by", "definition")
    else:
        rows = [(r.id, r.cells()[1:], runs.get(r.key, "")) for r in ledgers.rows(kind, "newest")]
        columns = ledgers.columns(kind)
    rows = [r for r in rows if only is None or r[2] == only]
    data: dict[str, Any] = {
        "ledger": kind,
        "run": only,
        "columns": ["run", *columns],
        "rows": [{"id": i, "run": run, "cells": [i, *cells]} for i, cells, run in rows],
    }
    cited = citers(state, live) if kind == "resources" else {}
    if kind == "resources":
        data["columns"].append("cited in a live run")
        for row in data["rows"]:
            row["cited_in_live_runs"] = cited.get(row["id"], {})
    shown = {
        i: "; ".join(f"{r}: {', '.join(m)}" for r, m in cited.get(i, {}).items())
        for i, _, _ in rows
    }
    return data, shown, sorted(set(runs.values()))


def nav(site: Renderer, current: str) -> str:
    """`project` and its pages, the current one marked."""
    return site.tpl("nav_project.html", pages=PROJECT_PAGES, current=current)


def page(site: Renderer, kind: str) -> Page:
    """One project ledger across every single run, each row tagged with its run;
    `?run=` keeps one run's rows."""
    if site._project is None:
        site._project = LedgerView(site.horde_dir)
    site._project.refresh()
    site._index.refresh()
    singles = set(run_ids(site.horde_dir))
    live = [r.run_id for r in site._index.rows() if r.run_id in singles and r.state in LIVE]
    only = site._args.get("run") or None
    data, shown, runs = project_data(site._project, kind, only, live)
    pointers = [  # while a swarm runs, its hordes write their own ledgers
        (s, f"swarms/{s}/{kind if kind in LEDGERS else 'index'}.html")
        for s in site.swarm_list()
        if site._swarm(s).live
    ]
    joiner = "&" if site._query else "?"
    filters = [  # `runs: all | <id> ...`, served only: an exported page takes no query
        (run, site.href(f"{kind}.html") + f"{joiner}run={quote(run)}")
        for run in (runs if site.served else ())
    ]
    body = site.tpl(
        "project.html",
        kind=kind,
        data=data,
        singles=singles,
        cited=shown,
        pointers=pointers,
        filters=filters,
    )
    title = f"{kind.capitalize()} · project" + (f" · run {only}" if only else "")
    return Page("", title, body, data, live=bool(live), nav=nav(site, kind))
