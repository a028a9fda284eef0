"""A run's graph as an SVG swimlane on a real-time axis, with its edges.

The lanes and edges are `store.graph`'s (the model GRAPH.md draws): one lane per member
plus the parent. A mark sits at the time of its event, pushed right only as far as the
mark before it in the same lane needs to stay readable, so a quiet hour is wide and a
busy second is narrow; the phase bands span their phases' real times. Edges (reviews
with their verdict, challenges and what answered them, findings under their idea,
deltas, supersessions) are curves from mark to mark, each with its label as a tooltip.
A swarm's graph (`hordes_svg`) is drawn here too: one lane per horde with its lifecycle
marks. The terminal's swimlane (`view.swimlane.layout`) keeps event order: a terminal has no
room for a time axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from horde_tui.store.graph import PARENT, RunGraph
from horde_tui.store.timestamps import epoch
from horde_tui.view.swimlane import Mark, mark_of
from horde_tui.web.markup import esc

CELL = 7.4
"""Pixels per character of the monospace marks."""
LANE_H = 30
LABEL_W = 160
PLOT_MIN = 900
PX_PER_MARK = 36
"""The time axis grows with the marks, so a long run stays readable (scrolled)."""
PLOT_MAX = 14000


class TimeAxis:
    """Seconds -> x: `t0` at `left`, the last moment at `left + plot`; `place` keeps a
    mark clear of the one before it in its row."""

    def __init__(self, times: list[float], left: float, plot: float) -> None:
        self.t0 = min(times, default=0.0)
        self.span = (max(times, default=0.0) - self.t0) or 1.0
        self.left, self.plot = left, plot
        self._next: dict[str, float] = {}

    def x(self, t: float) -> float:
        return self.left + (t - self.t0) / self.span * self.plot

    def place(self, row: str, t: float, width: float) -> float:
        x = max(self.x(t), self._next.get(row, 0.0))
        self._next[row] = x + width + CELL
        return x

    @property
    def right(self) -> float:
        return max([self.left + self.plot, *self._next.values()])


@dataclass(frozen=True)
class Placed:
    node: str
    lane: int
    x: float
    t: float
    mark: Mark

    @property
    def width(self) -> float:
        return CELL * len(self.mark.text)


def place(graph: RunGraph) -> tuple[list[str], list[Placed], TimeAxis]:
    """The lanes drawn (the parent's only when it has marks) and every lane node at
    its time; nodes without a readable time follow the node before them."""
    nodes = [n for n in graph.nodes if n.lane is not None]
    lanes = [ln for ln in graph.lanes if ln != PARENT or any(n.lane == ln for n in nodes)]
    times: list[float] = []
    last = 0.0
    for n in nodes:
        found = epoch(n.ts)
        last = found if found is not None else last
        times.append(last)
    marks = len(nodes)
    axis = TimeAxis(times, LABEL_W, min(PLOT_MAX, max(PLOT_MIN, PX_PER_MARK * marks)))
    placed = []
    for n, t in zip(nodes, times, strict=True):
        text, kind = mark_of(n)
        mark = Mark(0, text, kind, n.event)
        row = lanes.index(str(n.lane))
        placed.append(Placed(n.id, row, axis.place(str(n.lane), t, CELL * len(text)), t, mark))
    return lanes, placed, axis


def lane_open(name: str, label: str, y: float, width: int) -> str:
    """A lane's group with its rule and label; its marks follow, then `</g>`."""
    return (
        f'<g class="lane" data-lane="{esc(name)}"><line x1="0" y1="{y + 6}" x2="{width}" '
        f'y2="{y + 6}" stroke="currentColor" stroke-opacity=".12"/>'
        f'<text class="lane-label" x="4" y="{y}">{esc(label)}</text>'
    )


def _bands(placed: list[Placed], axis: TimeAxis, height: int) -> list[str]:
    """Phase bands at their real times, from the phase-start/-end marks."""
    out, starts = [], {}
    for p in placed:
        if p.mark.kind != "phase":
            continue
        if p.mark.text.startswith("["):
            starts[p.mark.text[1:]] = p.t
        else:
            name = p.mark.text.rstrip("]")
            out.append(_band(name, axis.x(starts.pop(name, axis.t0)), axis.x(p.t), height))
    out += [_band(name, axis.x(t), axis.right, height) for name, t in starts.items()]
    return out


def _band(name: str, x0: float, x1: float, height: int) -> str:
    w = max(CELL, x1 - x0)
    return (
        f'<rect class="phase" data-phase="{esc(name)}" x="{x0:.1f}" y="2" width="{w:.1f}" '
        f'height="{height - 4}"/><text class="phase-label" x="{x0 + 2:.1f}" y="12">{esc(name)}</text>'
    )


def swimlane_svg(
    graph: RunGraph, label: str, href: Callable[[Mark], str]
) -> tuple[str, dict[str, Any]]:
    """The SVG and its JSON twin; `href(mark)` is the link of a mark ("" for none)."""
    lanes, placed, axis = place(graph)
    where = {p.node: p for p in placed}
    width = int(axis.right + 160)
    height = LANE_H * (len(lanes) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="group" aria-label="{esc(label)}">'
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" '
        'fill="currentColor"/></marker></defs>',
        *_bands(placed, axis, height),
    ]
    edges = [e for e in graph.edges if e.src in where and e.dst in where]
    out.append('<g class="edges">')
    for e in edges:
        a, b = where[e.src], where[e.dst]
        x1, y1 = a.x + a.width / 2, LANE_H * (a.lane + 1) - 4
        x2, y2 = b.x + b.width / 2, LANE_H * (b.lane + 1) - 4
        bend = 10 if a.lane == b.lane else 0
        d = f"M{x1:.1f},{y1 - bend}C{x1:.1f},{(y1 + y2) / 2 - bend * 2:.1f} {x2:.1f},{(y1 + y2) / 2 - bend * 2:.1f} {x2:.1f},{y2 - bend}"
        out.append(
            f'<path class="edge e-{esc(e.style)}" data-src="{esc(e.src)}" data-dst="{esc(e.dst)}" '
            f'd="{d}" marker-end="url(#arrow)"><title>{esc(e.label or e.style)}</title></path>'
        )
    out.append("</g>")
    for row, name in enumerate(lanes):
        y = LANE_H * (row + 1)
        out.append(lane_open(name, graph.lane_labels[name], y, width))
        for p in placed:
            if p.lane != row:
                continue
            text = (
                f'<text class="k-{esc(p.mark.kind)}" data-node="{esc(p.node)}" x="{p.x:.1f}" '
                f'y="{y}">{esc(p.mark.text)}</text>'
            )
            link = href(p.mark)
            out.append(f'<a href="{esc(link)}">{text}</a>' if link else text)
        out.append("</g>")
    out.append("</svg>")
    data = {
        "lanes": [
            {
                "name": name,
                "marks": [
                    {
                        "node": p.node,
                        "x": round(p.x, 1),
                        "t": round(p.t - axis.t0, 3),
                        "text": p.mark.text,
                        "kind": p.mark.kind,
                    }
                    for p in placed
                    if p.lane == row
                ],
            }
            for row, name in enumerate(lanes)
        ],
        "edges": [{"src": e.src, "dst": e.dst, "label": e.label, "style": e.style} for e in edges],
        "plot": {"left": axis.left, "width": axis.plot},
        "dropped": graph.dropped,
    }
    return "".join(out), data


def hordes_svg(
    label: str,
    lanes: list[str],
    steps: list[tuple[float, str, str | None]],
    href: Callable[[str], str],
) -> str:
    """A swarm's lanes (`swarm`, then each horde) with the lifecycle marks of SWARM.json's
    timeline (`(ts, kind, horde)`, horde None for the swarm's own steps) on a real-time
    axis; `href(lane)` is where a lane's marks link."""
    axis = TimeAxis([t for t, _, _ in steps], 90, PLOT_MIN)
    lane_h = 24
    width, height = int(axis.left + axis.plot + 160), lane_h * (len(lanes) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="group" aria-label="{esc(label)}">'
    ]
    for row, lane in enumerate(lanes):
        y = lane_h * (row + 1)
        out.append(lane_open(lane, lane, y, width))
        for ts, kind, horde in steps:
            if (horde or "swarm") == lane:
                x = axis.place(lane, ts, CELL * (len(kind) + 1))
                mark = f'<text class="k-lifecycle" x="{x:.1f}" y="{y}">{esc(kind)}</text>'
                out.append(f'<a href="{esc(href(lane))}">{mark}</a>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)
