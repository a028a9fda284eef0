"""The swimlane as text: lanes, marks in event order, incremental feeding, no Textual."""

from __future__ import annotations

import json

from rich.cells import cell_len
from support.app import RUN_ID
from support.ledger_scene import fill_run, lifecycle

from horde_tui.store.graph import Edge, GraphBuilder
from horde_tui.view.swimlane import SwimlaneView

MEMBERS = [("member-1", "auditor"), ("member-2", "auditor"), ("member-3", "verifier")]


def marks(view: SwimlaneView) -> dict[str, list[tuple[str, str]]]:
    return {lane.name: [(m.text, m.kind) for m in lane.marks] for lane in view.layout().lanes}


def test_lanes_show_phases_entries_and_reviews_in_event_order(tmp_path):
    fill_run(tmp_path)
    view = SwimlaneView(tmp_path / ".horde" / "runs" / RUN_ID, MEMBERS)
    assert view.refresh()
    lanes = marks(view)
    assert list(lanes) == ["parent", "member-1", "member-2", "member-3"]
    assert lanes["parent"] == [
        ("run-start", "lifecycle"),
        ("[discovery", "phase"),
        ("discovery]", "phase"),
        ("[verify", "phase"),
    ]
    assert ("F1", "finding") in lanes["member-1"] and ("#1", "idea") in lanes["member-1"]
    assert lanes["member-3"][-2:] == [("V1✓F1", "review"), ("V2~F2", "review")]
    assert ("V3✗F3", "refuted") in lanes["member-1"]
    layout = view.layout()
    assert [lane.label for lane in layout.lanes][1] == "member-1 · auditor"
    # Left to right is event order: every mark starts after the previous one, any lane.
    xs = sorted((m.x, m.text) for lane in layout.lanes for m in lane.marks)
    assert len({x for x, _ in xs}) == len(xs)
    assert xs[0] == (0, "run-start") and xs[-1][1] == "[verify"
    lane_3 = [m.x for m in layout.lanes[3].marks]
    assert lane_3 == sorted(lane_3)
    assert layout.width >= max(m.x + len(m.text) for lane in layout.lanes for m in lane.marks)


def test_refresh_feeds_only_appended_events_and_sees_a_new_lane(tmp_path):
    horde = fill_run(tmp_path)
    view = SwimlaneView(tmp_path / ".horde" / "runs" / RUN_ID, MEMBERS)
    view.refresh()
    first = view.layout()
    assert not view.refresh(), "nothing appended: nothing to do"
    assert view.layout() is first
    fed = view.index.size
    horde("member-4", "idea", run=RUN_ID, text="Audit src/cli.py")
    lifecycle(horde, "phase-end", phase="verify")
    assert view.refresh()
    assert view.index.size > fed
    lanes = marks(view)
    assert lanes["member-4"] == [("#4", "idea")]
    assert lanes["parent"][-1] == ("verify]", "phase")


def test_an_empty_run_has_member_lanes_and_no_marks(tmp_path):
    run_dir = tmp_path / ".horde" / "runs" / RUN_ID
    view = SwimlaneView(run_dir, MEMBERS)
    view.refresh()
    layout = view.layout()
    assert [lane.name for lane in layout.lanes] == ["member-1", "member-2", "member-3"]
    assert all(not lane.marks for lane in layout.lanes) and layout.width == 0


def test_feeding_in_pieces_gives_the_graph_of_feeding_at_once(tmp_path):
    horde = fill_run(tmp_path)
    events = horde.events(RUN_ID)
    whole = GraphBuilder(MEMBERS)
    whole.feed(events)
    pieces = GraphBuilder(MEMBERS)
    for start in range(0, len(events), 7):
        pieces.feed(events[start : start + 7])
        pieces.graph_so_far()  # taking a copy mid-way changes nothing
    assert pieces.graph_so_far() == whole.graph_so_far()


def test_a_review_is_drawn_as_an_entry_linked_to_its_target(tmp_path):
    horde = fill_run(tmp_path)
    builder = GraphBuilder(MEMBERS)
    builder.feed(horde.events(RUN_ID))
    graph = builder.graph_so_far()
    reviews = {n.id: (n.lane, n.label) for n in graph.nodes if n.id.startswith("v")}
    assert reviews["v1"] == ("member-3", "V1 review: supports F1")
    assert Edge("v1", "f1", "supports") in graph.edges
    assert Edge("v3", "f3", "refutes") in graph.edges


def test_marks_with_wide_characters_take_their_cells(tmp_path):
    """Issue 12: a refused action named in CJK or emoji by a model is drawn as a mark
    twice as wide as its code points; the layout counted code points, so the marks after
    it overlapped it and every later column moved."""
    run_dir = tmp_path / ".horde" / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    events = [
        {"type": "lifecycle", "kind": "run-start", "actor": "parent", "id": "E1"},
        {"type": "intent", "actor": "member-1", "params": {"action": "读取文件🚀"}},
        {"type": "outcome", "actor": "member-1", "action": "读取文件🚀", "ok": False, "id": "E3"},
        {"type": "intent", "actor": "member-1", "params": {"action": "list"}},
        {"type": "outcome", "actor": "member-1", "action": "list", "ok": True, "id": "E5"},
        {"type": "intent", "actor": "member-2", "params": {"action": "list"}},
        {"type": "outcome", "actor": "member-2", "action": "list", "ok": True, "id": "E7"},
    ]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    view = SwimlaneView(run_dir, [("member-1", "首席审计员"), ("member-2", "auditor")])
    view.refresh()
    layout = view.layout()
    ordered = sorted((m.x, m.text) for lane in layout.lanes for m in lane.marks)
    assert [text for _, text in ordered] == ["run-start", "✗读取文件🚀", "list", "list"]
    refusal_x = ordered[1][0]
    assert ordered[2][0] >= refusal_x + cell_len("✗读取文件🚀") + 1, "no overlap in cells"
    assert layout.width >= max(x + cell_len(text) for x, text in ordered)
    assert layout.label_width == cell_len("member-1 · 首席审计员") == 21
