"""A swarm's pages: its overview, its hordes' ledgers and threads, its graph, its files;
and the `swarm <id>: all | h1 | h2` tabs its hordes' run pages carry too.

Each builder gathers the page's data (the `/api/` twin) and hands it to its template, as
`pages.Site`'s run pages do; `pages.SWARM_ROUTES` maps the paths to them.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from horde_tui.store.acceptance import acceptance_all
from horde_tui.view.swarm import SwarmView
from horde_tui.web.graphsvg import hordes_svg
from horde_tui.web.render import Renderer
from horde_tui.web.scope import LEDGERS, Page, pick

HORDE_FIELDS = "horde state outcome members findings accepted cost_usd workstream".split()
REVIEW_FIELDS = "id by target revision verdict support checked".split()
"""What the JSON of a horde and of a review carries, in this order."""


def swarm_of(site: Renderer, run_id: str) -> str | None:
    return next((s for s in site.swarm_list() if run_id.startswith(s + "-h")), None)


def horde_tabs(
    site: Renderer, swarm_id: str, page: str, current: str | None
) -> list[dict[str, str]]:
    """`swarm <id>: all | h1 | h2 ...`, each keeping the page type."""
    view = site._swarm(swarm_id)
    same = page.removesuffix(".html") in (*LEDGERS, "threads", "index", "graph")
    swarm_page = page if same else "index.html"
    if page == "collaboration.html":
        swarm_page = "threads.html"
    tabs = [
        {
            "run_page": f"swarms/{swarm_id}/{swarm_page}",
            "label": "all",
            "cls": "" if current else "current",
        }
    ]
    for line in view.lines():
        run_page = "collaboration.html" if page == "threads.html" else page
        if not run_page.endswith(".html") or run_page.startswith("events-"):
            run_page = "index.html"  # no such page in every horde: its overview
        run_id = line.run_dir.name if line.run_dir is not None else None
        tabs.append(
            {
                "run_page": f"runs/{run_id}/{run_page}" if run_id else "",
                "label": line.horde,
                "cls": "current" if run_id is not None and run_id == current else "",
            }
        )
    return tabs


def nav(site: Renderer, swarm_id: str, current: str) -> str:
    items = [("index.html", "overview"), *((f"{k}.html", k) for k in LEDGERS)]
    items += [("threads.html", "collaboration"), ("graph.html", "graph")]
    links = [
        (f"swarms/{swarm_id}/{p}", label, "current" if p == current else "") for p, label in items
    ]
    tabs = horde_tabs(site, swarm_id, current, None)
    return site.tpl("nav_scope.html", run_id="", swarm=swarm_id, tabs=tabs, items=links)


def ledger(site: Renderer, swarm_id: str, view: SwarmView, kind: str) -> Page:
    text = view.ledgers_markdown(kind)
    body = site.tpl("text.html", text=text, pre=False)
    data = {"ledger": kind, "markdown": text}
    return Page("", f"{kind.capitalize()} · swarm {swarm_id}", body, data)


def document(site: Renderer, swarm_id: str, view: SwarmView, name: str) -> Page | None:
    return site.document(view.swarm_dir, name, f"swarm {swarm_id}")


def collaboration(site: Renderer, swarm_id: str, view: SwarmView) -> Page:
    """Every horde's threads, then each horde's acceptance and reviews under its own
    heading (each horde's event audit stays on its run page)."""
    text = view.ledgers_markdown("threads")
    hordes: dict[str, Any] = {}
    shown: list[tuple[str, str | None, list[Any], list[dict[str, Any]]]] = []
    for line in view.lines():
        run = site._run(line.run_dir.name) if line.run_dir is not None else None
        if run is None or line.run_dir is None:
            hordes[line.horde] = None
            shown.append((line.horde, None, [], []))
            continue
        run_id = line.run_dir.name
        accepted = acceptance_all(run.ledgers.state, run_id)
        found = sorted(
            (v for v in run.ledgers.state.reviews.values() if v.run == run_id),
            key=lambda v: v.seq,
        )
        reviews = [pick(v, REVIEW_FIELDS) for v in found]
        hordes[line.horde] = {"acceptance": [a.as_json() for a in accepted], "reviews": reviews}
        shown.append((line.horde, run_id, accepted, reviews))
    body = site.tpl("swarm_collaboration.html", text=text, hordes=shown)
    data = {"ledger": "threads", "markdown": text, "hordes": hordes}
    return Page("", f"Collaboration · swarm {swarm_id}", body, data)


def graph(site: Renderer, swarm_id: str, view: SwarmView) -> Page:
    """One lane per horde (and the swarm's own steps: planning, the merge) with its
    lifecycle marks from SWARM.json's timeline, on a real-time axis."""
    info = view.info
    steps = list(info.timeline) if info else []
    lanes = ["swarm", *(info.horde_names() if info else [])]
    runs = {ln.horde: ln.run_dir.name for ln in view.lines() if ln.run_dir is not None}

    def target(lane: str) -> str:
        found = runs.get(lane)
        return site.href(f"runs/{found}/graph.html" if found else f"swarms/{swarm_id}/index.html")

    svg = hordes_svg(f"hordes of swarm {swarm_id}", lanes, steps, target)
    data = {
        "lanes": lanes,
        "timeline": [{"ts": t, "kind": k, "horde": h} for t, k, h in steps],
    }
    body = site.tpl("swarm_graph.html", svg=Markup(svg))
    return Page("", f"Graph · swarm {swarm_id}", body, data)


def overview(site: Renderer, swarm_id: str, view: SwarmView) -> Page:
    info = view.info
    data: dict[str, Any] = {
        "id": swarm_id,
        "state": view.state,
        "prompt": info.prompt if info else "",
        "outcome": info.outcome if info else "",
        "merge": info.merge if info else "",
        "hordes": [
            {**pick(ln, HORDE_FIELDS), "run": ln.run_dir.name if ln.run_dir else None}
            for ln in view.lines()
        ],
        "files": list(view.files),
    }
    body = site.tpl("swarm.html", data=data)
    return Page("", f"Swarm {swarm_id}", body, data)
