"""GRAPH.md: the run as a Mermaid flowchart, one lane per member plus the parent.

Built from `events.jsonl` alone (the ledgers show where the run ended, the events show
how it got there). Each outcome event becomes a node in its actor's lane: entries it
created get their ledger id as node id (`#3` -> `i3`, `F2` -> `f2`), so every later
action on that entry (claim, done, verify, a review, a citation) is an edge to the same
node, across lanes when another member acted. Refusals are small marked nodes, parent
lifecycle events mark phases, spawns, exits and resets. Node ids come from ledger ids and
event ids only, so the same events always give the same graph, and the node count is
capped so a long run still renders.

`build_graph` returns the model; `render_graph` draws it as Mermaid, and
`swimlane_rows` hands the same lanes to a terminal view. `GraphBuilder` is the same walk
fed in pieces: a live view feeds it only the events appended since its last look and
takes a finished copy (`graph_so_far()`) whenever it repaints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Protocol

from horde_tui.store.ledgers.common import one_line
from horde_tui.store.pagelinks import entry_page, event_page
from horde_tui.store.state import normalize_id

MAX_NODES = 300
LABEL_CHARS = 48
PARENT = "parent"


class LaneOwner(Protocol):
    """A member as a lane needs it (the supervisor's `MemberState` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


class GraphRun(Protocol):
    """What the graph reads of a run's summary (`supervisor.outcome.RunSummary`): the
    supervisor writes GRAPH.md with it and the view draws it, and neither layer is
    imported here."""

    @property
    def run_id(self) -> str: ...

    @property
    def outcome(self) -> str: ...

    @property
    def members(self) -> Sequence[LaneOwner]: ...


_ENTITY = re.compile(r"^(#|[FTCRVAQ])(\d+)$")
_NODE_PREFIX = {"#": "i", "F": "f", "T": "t", "C": "c", "R": "r", "V": "v", "A": "a", "Q": "q"}
CREATES = {
    "idea": "idea",
    "finding": "finding",
    "fact": "fact",
    "assert": "claim",
    "supersede": "claim",
    "resource": "resource",
    "review": "review",
    "artifact": "artifact",
    "message": "thread",
}
"""Actions whose successful outcome creates the entry named by `entry`."""
MEMBER_KINDS = frozenset({"member-spawn", "member-exit", "member-reset"})
"""Lifecycle kinds drawn in the member's own lane; the rest are the parent's."""
_ESCAPES = {
    '"': "#quot;",
    "#": "#35;",
    "|": "#124;",
    "[": "#91;",
    "]": "#93;",
    "{": "#123;",
    "}": "#125;",
    "(": "#40;",
    ")": "#41;",
    "<": "#lt;",
    ">": "#gt;",
    "`": "#96;",
    ";": "#59;",
}
_SHAPES = {
    "entity": '["{}"]',
    "action": '("{}")',
    "refusal": '(("{}"))',
    "phase": '[/"{}"/]',
    "lifecycle": '(["{}"])',
    "ghost": '["{}"]',
}
_ARROWS = {"solid": "-->", "dotted": "-.->", "thick": "==>"}
THREAD_NOTES = frozenset({"ack", "respond", "defer", "resolve"})
"""Actions that move a thread (Q#): an edge to it, labelled with where it led."""
_FILED_UNDER = re.compile(r"\bfiled under (#\d+)")
_CHALLENGE = re.compile(r"\b(Q\d+) challenge opened")


@dataclass(frozen=True)
class Node:
    id: str
    lane: str | None
    """Lane (actor) name; None for entries of earlier runs drawn outside every lane."""
    label: str
    kind: str
    """entity, action, refusal, phase, lifecycle or ghost."""
    event: str = ""
    ts: str = ""
    line: int = -1
    """The event's line in `events.jsonl` (its page of the event audit), -1 if none."""


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str = ""
    style: str = "solid"


@dataclass
class RunGraph:
    lanes: list[str]
    lane_labels: dict[str, str]
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    dropped: int = 0
    """Events not drawn because the node cap was reached."""


@dataclass(frozen=True)
class SwimLane:
    """One lane of the run for a terminal view: its marks in event order."""

    name: str
    label: str
    marks: tuple[Node, ...]


def escape(text: str, limit: int = LABEL_CHARS) -> str:
    """Mermaid-safe label text: one line, clipped, quotes/brackets/pipes as entity codes."""
    return "".join(_ESCAPES.get(ch, ch) for ch in one_line(str(text), limit))


def entity_node(ref: Any) -> str | None:
    """The node id of a ledger entry (`#3` -> `i3`, `F2` -> `f2`), None if not one."""
    m = _ENTITY.match(str(ref or "").strip())
    return f"{_NODE_PREFIX[m.group(1)]}{int(m.group(2))}" if m else None


def _ref(raw: Any, prefix: str) -> str | None:
    """A parameter as the member typed it (`3`, `f2`) -> its node id, if it names one."""
    if not raw:
        return None
    return entity_node(normalize_id(str(raw), prefix))


class GraphBuilder:
    """Walks the events once, keeping lanes, nodes and edges in first-seen order.

    `members` are (name, role) pairs whose lanes come first, in that order, even before
    they act; other actors get a lane when their first event arrives.
    """

    def __init__(self, members: Iterable[tuple[str, str]], cap: int = MAX_NODES) -> None:
        self.graph = RunGraph([PARENT], {PARENT: PARENT})
        for name, role in members:
            self._lane(name, f"{name} · {role}" if role else name)
        self.cap = cap
        self.node_ids: set[str] = set()
        self.pending: dict[str, dict[str, Any]] = {}
        self.answers = 0
        self.fed = 0
        """Events fed so far: the position of the next one (ids of events without one)."""

    def feed(self, events: Iterable[dict[str, Any]]) -> None:
        """Walk more events, continuing where the last call stopped."""
        for ev in events:
            if isinstance(ev, dict):
                self.event({**ev, "_pos": self.fed})
            self.fed += 1

    def _lane(self, name: str, label: str | None = None) -> str:
        if name not in self.graph.lane_labels:
            self.graph.lanes.append(name)
            self.graph.lane_labels[name] = label or name
        return name

    def add(self, node: Node) -> bool:
        """Add a node unless it exists; False (and the event counted) when over the cap."""
        if node.id in self.node_ids:
            return True
        if len(self.graph.nodes) >= self.cap:
            self.graph.dropped += 1
            return False
        self.node_ids.add(node.id)
        self.graph.nodes.append(node)
        return True

    def edge(self, src: str | None, dst: str | None, label: str = "", style: str = "solid") -> None:
        if src and dst and src != dst:
            self.graph.edges.append(Edge(src, dst, label, style))

    def event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        actor = str(ev.get("actor") or "?")
        if kind == "intent":
            params = ev.get("params")
            self.pending[actor] = dict(params) if isinstance(params, dict) else {}
        elif kind == "outcome":
            self._lane(actor)
            self.outcome(ev, actor, self.pending.pop(actor, {}))
        elif kind == "lifecycle":
            self.lifecycle(ev)

    def lifecycle(self, ev: dict[str, Any]) -> None:
        what = str(ev.get("kind", "lifecycle"))
        member = ev.get("member")
        lane = self._lane(str(member)) if member and what in MEMBER_KINDS else PARENT
        detail = ev.get("phase") or ev.get("cause") or ev.get("outcome") or ""
        if member and lane == PARENT:
            detail = f"{member} {detail}".strip()
        shape = "phase" if what.startswith("phase-") else "lifecycle"
        label = f"{what} {detail}".strip()
        self.add(Node(_event_node(ev), lane, label, shape, *_at(ev)))

    def outcome(self, ev: dict[str, Any], actor: str, params: dict[str, Any]) -> None:
        action = str(ev.get("action", "?"))
        eid = _event_node(ev)
        if not ev.get("ok"):
            target = params.get("id") or params.get("target") or ""
            label = f"✗ {action} {target}".strip()
            self.add(Node(eid, actor, label, "refusal", *_at(ev)))
            return
        entry = ev.get("entry")
        created = entity_node(entry) if action in CREATES else None
        if created and ev.get("outcome") in ("created", "superseded", "reviewed", None):
            self._created(ev, actor, params, created)
        elif action == "solved":
            self.answers += 1
            node = f"ans{self.answers}"
            if self.add(Node(node, actor, f"answer round {self.answers}", "entity", *_at(ev))):
                for ref in _as_list(params.get("cites")):
                    self.edge(node, _ref(ref, str(ref)[:1].upper()), "cites", "dotted")
        else:
            self._action(ev, actor, params, action, entry)

    def _created(self, ev: dict[str, Any], actor: str, params: dict[str, Any], node: str) -> None:
        action = str(ev["action"])
        text = params.get("name") if action == "resource" else params.get("text", "")
        if action == "review":
            text = f"{params.get('verdict', '')} {params.get('target', '')}"
        elif action == "artifact":
            text = params.get("path", "")
        elif action == "message":
            text = f"{params.get('kind', '')} to {params.get('to', '')}"
        label = f"{ev['entry']} {CREATES[action]}: {one_line(str(text or ''))}"
        if not self.add(Node(node, actor, label, "entity", *_at(ev))):
            return
        prefix = "F" if action == "finding" else "T"
        self.edge(node, _ref(params.get("deltaOf"), prefix), "delta of", "dotted")
        old_prefix = "C" if action == "supersede" else "F"
        old = params.get("id") if action == "supersede" else params.get("supersedes")
        self.edge(node, _ref(old, old_prefix), "supersedes", "thick")
        outcome_text = str(ev.get("text", ""))
        if action == "finding" and (under := _FILED_UNDER.search(outcome_text)):
            self.edge(node, entity_node(under.group(1)), "under", "dotted")
        if action in ("review", "message"):
            target = _target(params.get("target"))
            label = str(params.get("verdict" if action == "review" else "kind", ""))
            self.edge(node, target, label)
            if action == "review" and (opened := _CHALLENGE.search(outcome_text)):
                self._challenge(ev, actor, opened.group(1), node, target)

    def _challenge(
        self, ev: dict[str, Any], actor: str, thread: str, review: str, target: str | None
    ) -> None:
        """A refuting review opens a challenge thread to the target's owner: drawn as its
        own node, so the answers and the resolution have something to point at."""
        node = entity_node(thread)
        if node and self.add(Node(node, actor, f"{thread} challenge", "entity", *_at(ev))):
            self.edge(review, node, "opens")
            self.edge(node, target, "challenge")

    def _action(
        self, ev: dict[str, Any], actor: str, params: dict[str, Any], action: str, entry: Any
    ) -> None:
        if action == "post":
            label = f"post: {one_line(str(params.get('text', '')))}"
        elif action in ("confirm-solved", "contest-solved"):
            label = str(ev.get("outcome") or action)
        else:
            label = f"{action} {entry or ''}".strip()
            if ev.get("outcome") in ("duplicate", "reused", "unchanged", "updated"):
                label += f" ({ev['outcome']})"
        node = _event_node(ev)
        if not self.add(Node(node, actor, label, "action", *_at(ev))):
            return
        if action in ("confirm-solved", "contest-solved") and self.answers:
            self.edge(node, f"ans{self.answers}", label)
        targets = [entity_node(entry)] + [_ref(i, "#") for i in _as_list(params.get("ids"))]
        note = str(ev.get("outcome") or action) if action in THREAD_NOTES else ""
        for target in dict.fromkeys(t for t in targets if t):
            self.edge(node, target, note)

    def graph_so_far(self) -> RunGraph:
        """The graph of the events fed so far, finished: entries of earlier runs that
        edges point at are drawn, dangling edges dropped. The builder itself is left as
        it was, so feeding can go on."""
        graph = replace(
            self.graph,
            lanes=list(self.graph.lanes),
            lane_labels=dict(self.graph.lane_labels),
            nodes=list(self.graph.nodes),
        )
        ids = set(self.node_ids)
        for e in self.graph.edges:
            for end in (e.src, e.dst):
                room = len(graph.nodes) < self.cap
                if room and end not in ids and _is_entity(end):
                    ids.add(end)
                    graph.nodes.append(
                        Node(end, None, f"{_entity_label(end)} (earlier run)", "ghost")
                    )
        graph.edges = [e for e in self.graph.edges if e.src in ids and e.dst in ids]
        return graph


def _target(raw: Any) -> str | None:
    """A review's or a message's target (`F2`, `A1`, `2`: a bare number is a finding)."""
    text = str(raw or "").strip()
    return _ref(text, text[:1].upper() if text[:1].isalpha() else "F")


def _as_list(value: Any) -> list[Any]:
    """A list parameter as recorded; a hand-written string is split like the tool does."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return list(value) if isinstance(value, list) else []


def ev_ts(ev: dict[str, Any]) -> str:
    return str(ev.get("ts", ""))


def _at(ev: dict[str, Any]) -> tuple[str, str, int]:
    """A node's event fields: its E#, its time and its line."""
    return str(ev.get("id", "")), ev_ts(ev), int(ev.get("_pos", -1))


def _event_node(ev: dict[str, Any]) -> str:
    """`E12` -> `e12`; an event without a valid id gets its position (set by the builder)."""
    ident = str(ev.get("id", ""))
    return f"e{ident[1:]}" if ident[:1] == "E" and ident[1:].isdigit() else f"x{ev['_pos']}"


def _is_entity(node_id: str) -> bool:
    return bool(re.match(r"^[iftcrvaq]\d+$", node_id))


def _entity_label(node_id: str) -> str:
    prefix = {v: k for k, v in _NODE_PREFIX.items()}[node_id[0]]
    return f"{prefix}{node_id[1:]}"


def build_graph(
    events: Iterable[dict[str, Any]], summary: GraphRun, cap: int = MAX_NODES
) -> RunGraph:
    """The run's lanes, nodes and edges, in event order, at most `cap` nodes."""
    builder = GraphBuilder(((m.name, m.role) for m in summary.members), cap)
    builder.feed(events)
    return builder.graph_so_far()


def swimlane_rows(events: Iterable[dict[str, Any]], summary: GraphRun) -> list[SwimLane]:
    """Lanes with their marks in event order, for a terminal swimlane (parent first)."""
    graph = build_graph(events, summary)
    return [
        SwimLane(
            name,
            graph.lane_labels[name],
            tuple(n for n in graph.nodes if n.lane == name),
        )
        for name in graph.lanes
    ]


def node_target(node: Node) -> str | None:
    """Where a node opens in the run's pages (relative to the run's folder): an entry of
    this run its ledger entry, anything else its event in the audit; None for an entry
    of an earlier run and an event whose line is unknown."""
    if node.lane is not None and _is_entity(node.id):
        found = entry_page(_entity_label(node.id))
        if found:
            return found
    if node.event and node.line >= 0:
        return f"{event_page(node.line)}#{node.event}"
    return None


def _mermaid(graph: RunGraph, href: Callable[[Node], str | None] | None = None) -> list[str]:
    lines = ["flowchart LR"]
    for index, lane in enumerate(graph.lanes):
        nodes = [n for n in graph.nodes if n.lane == lane]
        lines.append(f'  subgraph lane{index}["{escape(graph.lane_labels[lane])}"]')
        lines.append("    direction LR")
        lines += [f"    {n.id}{_SHAPES[n.kind].format(escape(n.label))}" for n in nodes]
        if not nodes:
            # An empty subgraph does not render in every Mermaid version; say it is idle.
            lines.append(f'    lane{index}_idle["no events"]')
        lines.append("  end")
        # Invisible links keep each lane in time order.
        lines += [f"  {a.id} ~~~ {b.id}" for a, b in pairwise(nodes)]
    for n in graph.nodes:
        if n.lane is None:
            lines.append(f"  {n.id}{_SHAPES[n.kind].format(escape(n.label))}")
    for e in graph.edges:
        label = f"|{escape(e.label, 24)}|" if e.label else ""
        lines.append(f"  {e.src} {_ARROWS[e.style]}{label} {e.dst}")
    if href is not None:
        links = ((n.id, href(n)) for n in graph.nodes)
        lines += [f'  click {i} href "{url.replace(chr(34), "%22")}"' for i, url in links if url]
    lines += [
        "  classDef refusal fill:#fde2e2,stroke:#c0392b,font-size:10px",
        "  classDef phase fill:#e8eaf6,stroke:#3949ab",
        "  classDef ghost stroke-dasharray:4 3",
    ]
    for kind in ("refusal", "phase", "ghost"):
        ids = [n.id for n in graph.nodes if n.kind == kind]
        if ids:
            lines.append(f"  class {','.join(ids)} {kind}")
    return lines


def mermaid_source(graph: RunGraph, href: Callable[[Node], str | None] | None = None) -> str:
    """The flowchart alone (the browser view's `graph.mmd`); `href` gives each node's
    `click` link, None for a node without one."""
    return "\n".join(_mermaid(graph, href)) + "\n"


def render_graph(events: list[dict[str, Any]], summary: GraphRun, base: str | None = None) -> str:
    """GRAPH.md: a short legend and the Mermaid flowchart, with a note when it was cut.
    Each node clicks through to its page of the dashboard (`horde-tui serve`): under
    `base`, `/runs/<id>/` unless given (`""`: relative to the run's folder)."""
    graph = build_graph(events, summary)
    root = f"/runs/{summary.run_id}/" if base is None else base

    def href(node: Node) -> str | None:
        found = node_target(node)
        return root + found if found else None

    lines = [
        f"# Run {summary.run_id} graph",
        "",
        f"Outcome: {summary.outcome}. One lane per member plus the parent, in event order; "
        "phase marks in the parent's lane; ✗ marks a refused action; arrows are reviews "
        "(with their verdict), challenges and what answered them; dotted arrows are "
        "deltas, citations and findings under their idea, thick arrows supersessions. "
        "Each node opens its page of the dashboard (`horde-tui serve`).",
        "",
        "```mermaid",
        *_mermaid(graph, href),
        "```",
        "",
    ]
    if graph.dropped:
        lines += [
            f"_Cut at {MAX_NODES} nodes: {graph.dropped} more events are in events.jsonl._",
            "",
        ]
    return "\n".join(lines)
