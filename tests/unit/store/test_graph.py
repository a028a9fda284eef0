"""GRAPH.md: the run's events as a Mermaid flowchart with one lane per member."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Horde

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.graph import MAX_NODES, build_graph, render_graph, swimlane_rows
from horde_tui.store.members import MemberState

SUMMARY = RunSummary(
    "r1",
    "finished",
    "all ideas closed",
    "ok",
    0.0,
    60.0,
    "stub/demo",
    demo=True,
    members=[
        MemberState("member-1", "member"),
        MemberState("member-2", "verifier"),
        MemberState("member-3", "member"),
    ],
)


def _lifecycle(horde: Horde, kind: str, **fields: Any) -> None:
    horde.store("parent").append_event("r1", {"type": "lifecycle", "kind": kind, **fields})


@pytest.fixture
def events(horde: Horde) -> list[dict[str, Any]]:
    """r0 leaves idea #1 behind; r1 has phases, ideas, a delta, a correction, a refusal."""
    assert horde("member-1", "idea", run="r0", text="an idea from an earlier run").ok
    horde.store("parent").ensure_run("r1")
    _lifecycle(horde, "run-start")
    _lifecycle(horde, "phase-start", phase="discovery")
    _lifecycle(horde, "member-spawn", member="member-1", attempt=1)
    assert horde("member-1", "idea", text='Say "hi" [x] | y {z} <b>').ok
    assert horde("member-1", "claim", id="#2").ok
    assert horde(
        "member-1",
        "finding",
        text="Token check skipped on retry",
        concern="auth",
        concernDef="authentication",
        importance="high",
        confidence="medium",
    ).ok
    assert horde("member-2", "finding", deltaOf="1", text="also on the refresh path").ok
    assert not horde("member-2", "claim", id="#2").ok
    assert horde("member-2", "claim", id="#1").ok
    assert horde("member-1", "finding", supersedes="F1", text="Token check skipped twice").ok
    _lifecycle(horde, "member-exit", member="member-2", cause="killed")
    _lifecycle(horde, "phase-end", phase="discovery")
    return horde.events("r1")


def _mermaid(text: str) -> list[str]:
    body = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    return body.splitlines()


def _event_id(events: list[dict[str, Any]], **match: Any) -> str:
    ev = next(e for e in events if all(e.get(k) == v for k, v in match.items()))
    return "e" + ev["id"][1:]


def test_one_lane_per_member_plus_the_parent(events: list[dict[str, Any]]) -> None:
    lines = _mermaid(render_graph(events, SUMMARY))
    assert lines[0] == "flowchart LR"
    assert [line for line in lines if line.lstrip().startswith("subgraph")] == [
        '  subgraph lane0["parent"]',
        '  subgraph lane1["member-1 · member"]',
        '  subgraph lane2["member-2 · verifier"]',
        '  subgraph lane3["member-3 · member"]',
    ]
    assert '    lane3_idle["no events"]' in lines


def test_labels_are_escaped_and_entries_keep_their_ledger_ids(
    events: list[dict[str, Any]],
) -> None:
    lines = _mermaid(render_graph(events, SUMMARY))
    assert (
        '    i2["#35;2 idea: Say #quot;hi#quot; #91;x#93; #124; y #123;z#125; #lt;b#gt;"]' in lines
    )
    assert '    f1["F1 finding: Token check skipped on retry"]' in lines
    assert "  f2 -.->|delta of| f1" in lines
    assert "  f3 ==>|supersedes| f1" in lines


def test_refusals_phases_and_member_events_are_marked(events: list[dict[str, Any]]) -> None:
    lines = _mermaid(render_graph(events, SUMMARY))
    refused = _event_id(events, type="outcome", action="claim", ok=False)
    assert f'    {refused}(("✗ claim #35;2"))' in lines
    assert f"  class {refused} refusal" in lines
    start = _event_id(events, kind="phase-start")
    end = _event_id(events, kind="phase-end")
    assert f'    {start}[/"phase-start discovery"/]' in lines
    assert f"  class {start},{end} phase" in lines
    rows = {lane.name: [n.label for n in lane.marks] for lane in swimlane_rows(events, SUMMARY)}
    assert rows["parent"] == ["run-start", "phase-start discovery", "phase-end discovery"]
    assert rows["member-2"][-1] == "member-exit killed"
    assert rows["member-3"] == []


def test_an_entry_of_an_earlier_run_is_drawn_outside_the_lanes(
    events: list[dict[str, Any]],
) -> None:
    lines = _mermaid(render_graph(events, SUMMARY))
    claim = _event_id(events, type="outcome", action="claim", entry="#1")
    assert '  i1["#35;1 #40;earlier run#41;"]' in lines
    assert f"  {claim} --> i1" in lines
    assert "  class i1 ghost" in lines


def test_the_graph_is_deterministic(events: list[dict[str, Any]]) -> None:
    assert render_graph(events, SUMMARY) == render_graph([dict(e) for e in events], SUMMARY)


def test_a_long_run_is_cut_at_the_node_cap_with_a_note() -> None:
    posts = [
        {
            "id": f"E{i}",
            "ts": "2026-01-01T00:00:00Z",
            "actor": f"member-{i % 3 + 1}",
            "action": "post",
            "type": "outcome",
            "ok": True,
            "entry": None,
        }
        for i in range(1, MAX_NODES + 101)
    ]
    graph = build_graph(posts, SUMMARY)
    assert (len(graph.nodes), graph.dropped) == (MAX_NODES, 100)
    assert render_graph(posts, SUMMARY).endswith(
        f"```\n\n_Cut at {MAX_NODES} nodes: 100 more events are in events.jsonl._\n"
    )


def _story(horde: Horde) -> list[dict[str, Any]]:
    """An idea, a finding under it, a review of it, a refuting review (which opens a
    challenge) answered and resolved, an artifact and a refuting review of it."""
    (horde.workdir / "src").mkdir()
    (horde.workdir / "src" / "a.py").write_text("x = 1\n")
    horde.store("parent").ensure_run("r1")
    assert horde("member-1", "idea", text="check tokens").ok
    assert horde("member-1", "claim", id="#1").ok
    assert horde(
        "member-1", "finding", text="Token check skipped", concern="auth", concernDef="authn"
    ).ok
    review = {"support": "reproduced", "checked": "ran it", "evidence": "src/a.py:1"}
    assert horde("member-2", "review", target="F1", verdict="supports", **review).ok
    assert horde("member-2", "artifact", path="src/a.py", text="the fix", criteria="runs").ok
    assert horde("member-3", "review", target="F1", verdict="refutes", **review).ok  # Q1
    assert horde("member-1", "respond", id="Q1", text="fixed").ok
    assert horde("member-3", "resolve", id="Q1", text="ok").ok
    assert horde("member-3", "review", target="A1", verdict="refutes", **review).ok  # Q2
    return horde.events("r1")


def test_reviews_challenges_and_findings_under_ideas_are_edges(horde: Horde) -> None:
    events = _story(horde)
    lines = _mermaid(render_graph(events, SUMMARY))
    respond = _event_id(events, type="outcome", action="respond")
    resolve = _event_id(events, type="outcome", action="resolve")
    for edge in (
        "  f1 -.->|under| i1",  # the finding, filed under its idea
        "  v1 -->|supports| f1",
        "  v2 -->|refutes| f1",
        "  v3 -->|refutes| a1",  # an artifact's review
        "  v2 -->|opens| q1",
        "  q1 -->|challenge| f1",
        f"  {respond} -->|responded| q1",
        f"  {resolve} -->|resolved| q1",
        "  q2 -->|challenge| a1",
    ):
        assert edge in lines, (edge, [x for x in lines if "--" in x])
    assert '    a1["A1 artifact: src/a.py"]' in lines


def test_graph_nodes_click_through_to_the_dashboard(horde: Horde) -> None:
    events = _story(horde)
    lines = _mermaid(render_graph(events, SUMMARY))
    base = "/runs/r1/"
    assert f'  click f1 href "{base}findings.html#F1"' in lines
    assert f'  click i1 href "{base}ideas.html#idea-1"' in lines
    assert f'  click q1 href "{base}collaboration.html#Q1"' in lines
    assert f'  click a1 href "{base}collaboration.html#A1"' in lines
    resolve = next(e for e in events if e.get("action") == "resolve" and e["type"] == "outcome")
    line = events.index(resolve)
    node = "e" + resolve["id"][1:]
    assert f'  click {node} href "{base}events-1.html#{resolve["id"]}"' in lines
    assert line < 1000
    # the export's copy links relative to the run's folder
    relative = _mermaid(render_graph(events, SUMMARY, base=""))
    assert '  click f1 href "findings.html#F1"' in relative
