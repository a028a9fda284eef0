"""`SwimlaneView`: the run's swimlane laid out as text, kept current by tailing events.

The lanes are `store.graph`'s (the model behind GRAPH.md): one per member plus the
parent, marks in event order. A `LineIndex` on `events.jsonl` hands over only the lines
appended since the last `refresh`, and they are fed to one long-lived `GraphBuilder`,
so a refresh costs what was appended, not the file's length (the builder keeps at
most `MAX_NODES` nodes, never the events).

`layout` turns lanes into rows of short marks at fixed columns: a mark's column is
strictly after the previous mark's (in any lane), so reading left to right is reading
the run in event order, while marks of different lanes pack side by side. Columns are
terminal cells: a mark of wide characters (a model's CJK or emoji) takes what it draws.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from horde_tui.store.graph import PARENT, GraphBuilder, Node, RunGraph
from horde_tui.store.linefile import LineIndex
from horde_tui.view.cells import cell_len, cut

LABEL_WIDTH = 22
"""Widest lane label; longer ones are cut (the lane name always fits)."""
ACTION_CHARS = 14
"""Cells of an action's or a refusal's mark (a refused action is named by the model)."""
_VERDICT_MARK = {"supports": "✓", "partially-supports": "~", "refutes": "✗"}


@dataclass(frozen=True)
class Mark:
    """One mark of a lane: its text, the column it starts at, and its style kind
    (phase, lifecycle, idea, finding, review, refuted, entity, answer, action, refusal)."""

    x: int
    text: str
    kind: str
    event: str = ""
    """The E# of the event that made it (the browser view links the mark to it)."""


@dataclass(frozen=True)
class LaneLine:
    name: str
    label: str
    marks: tuple[Mark, ...]


@dataclass(frozen=True)
class SwimlaneLayout:
    lanes: tuple[LaneLine, ...]
    width: int
    """Columns the marks span (after the label column)."""
    label_width: int
    dropped: int = 0
    """Events left out because the graph reached its node cap."""


def mark_of(node: Node) -> tuple[str, str]:
    """A node's short text and style kind: `F2`, `V1✓F2`, `[discovery`, `✗claim`."""
    words = node.label.split()
    if node.kind == "phase":
        phase = " ".join(words[1:])
        return (f"[{phase}" if words[0] == "phase-start" else f"{phase}]"), "phase"
    if node.kind == "lifecycle":
        return words[0].removeprefix("member-"), "lifecycle"
    if node.kind == "refusal":
        return cut(f"✗{words[1] if len(words) > 1 else '?'}", ACTION_CHARS), "refusal"
    if node.kind == "entity":
        if node.id.startswith("ans"):
            return f"answer{node.id[3:]}", "answer"
        ident = words[0]
        if node.id.startswith("v") and len(words) >= 4:
            verdict, target = words[2], words[3]
            kind = "refuted" if verdict == "refutes" else "review"
            return f"{ident}{_VERDICT_MARK.get(verdict, '?')}{target}", kind
        kind = {"i": "idea", "f": "finding"}.get(node.id[:1], "entity")
        return ident, kind
    label = "post" if node.label.startswith("post:") else node.label
    return cut(label, ACTION_CHARS), "action"


def layout(graph: RunGraph) -> SwimlaneLayout:
    """The graph's lanes as text rows (the parent's only when it has marks); see the
    module docstring for how columns are chosen."""
    lane_next: dict[str, int] = {}
    marks: dict[str, list[Mark]] = {name: [] for name in graph.lanes}
    last_x = -1
    for node in graph.nodes:  # in event order
        if node.lane is None:  # an entry of an earlier run: no lane to draw it in
            continue
        text, kind = mark_of(node)
        x = max(lane_next.get(node.lane, 0), last_x + 1)
        lane_next[node.lane] = x + cell_len(text) + 1
        last_x = x
        marks[node.lane].append(Mark(x, text, kind, node.event))
    names = [name for name in graph.lanes if marks[name] or name != PARENT]
    labels = [graph.lane_labels[name] for name in names]
    return SwimlaneLayout(
        tuple(
            LaneLine(name, label, tuple(marks[name]))
            for name, label in zip(names, labels, strict=True)
        ),
        width=max(lane_next.values(), default=0),
        label_width=min(LABEL_WIDTH, max((cell_len(label) for label in labels), default=0)),
        dropped=graph.dropped,
    )


class SwimlaneView:
    """The swimlane of one run directory, live: `refresh` then `layout`."""

    def __init__(self, run_dir: Path, members: Iterable[tuple[str, str]]) -> None:
        self.members = list(members)
        self.index = LineIndex(Path(run_dir) / "events.jsonl")
        self._builder = GraphBuilder(self.members)
        self._generation = self.index.generation
        self._fed = 0
        self._layout: SwimlaneLayout | None = None
        self._graph: RunGraph | None = None

    def refresh(self) -> bool:
        """Feed the events appended since the last call; return whether any were."""
        self.index.refresh()
        if self.index.generation != self._generation:  # the file was replaced: start over
            self._generation, self._fed = self.index.generation, 0
            self._builder = GraphBuilder(self.members)
            self._layout = self._graph = None
        stop = len(self.index)
        if stop == self._fed and self._layout is not None:
            return False
        self._builder.feed(self.index.record(i) or {} for i in range(self._fed, stop))
        self._fed = stop
        self._layout = self._graph = None
        return True

    def graph(self) -> RunGraph:
        """The graph so far (the browser view draws it on a time axis, with its edges)."""
        if self._graph is None:
            self._graph = self._builder.graph_so_far()
        return self._graph

    def layout(self) -> SwimlaneLayout:
        """The current layout (recomputed only after a refresh that fed events)."""
        if self._layout is None:
            self._layout = layout(self.graph())
        return self._layout

    def close(self) -> None:
        self.index.close()
