"""`view.swarm`: SWARM.json as `store.runs` parses it, horde lines from the run readers,
swarms listed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support.processes import dead_pid
from support.rundir import RunDir, answer
from support.swarm_scene import STARTED, SWARM_ID, swarm_scene, write_swarm

from horde_tui.store.runs import parse_swarm, read_swarm, swarm_state
from horde_tui.view.swarm import RunsAndSwarms, SwarmView, overview_markdown


def test_swarm_json_missing_keys_read_as_empty_and_a_torn_one_as_none(tmp_path: Path) -> None:
    """(A key of the wrong shape is refused: `test_store_runs`.)"""
    info = parse_swarm({"id": "s1"})
    assert (info.hordes, info.partition, info.runs, info.state) == (0, (), (), "")
    (tmp_path / "SWARM.json").write_text("{ torn")
    assert read_swarm(tmp_path) is None


def test_a_live_state_whose_host_is_gone_reads_interrupted(tmp_path: Path) -> None:
    for state in ("pending", "active", "finalizing"):
        write_swarm(tmp_path, state=state, parent_pid=dead_pid())
        info = read_swarm(tmp_path / "swarms" / SWARM_ID)
        assert info is not None and swarm_state(info) == "interrupted", state
    write_swarm(tmp_path, state="active", parent_pid=os.getpid())
    info = read_swarm(tmp_path / "swarms" / SWARM_ID)
    assert info is not None and swarm_state(info) == "active"
    write_swarm(tmp_path, state="finished", parent_pid=dead_pid(), outcome="completed")
    info = read_swarm(tmp_path / "swarms" / SWARM_ID)
    assert info is not None and swarm_state(info) == "finished", "an ended swarm needs no host"


def test_each_horde_line_comes_from_its_run_and_ledgers(tmp_path: Path) -> None:
    scene = swarm_scene(tmp_path / ".horde")
    view = SwarmView(scene.swarm_dir)
    assert view.refresh()
    h1, h2, h3 = view.lines()
    assert (h1.horde, h1.state, h1.members, h1.findings, h1.accepted, h1.cost_usd) == (
        "h1",
        "active",
        3,
        1,
        1,
        0.5,
    )
    assert h1.statuses == ("running", "running", "running")
    assert (h2.state, h2.outcome) == ("finished", "completed")
    assert (h3.state, h3.run_dir, h3.workstream) == (
        "pending",
        None,
        "Template injection in app/web",
    )
    assert view.state == "active" and view.files == ("SWARM.md",)
    assert not view.refresh(), "nothing changed on disk: nothing to repaint"

    scene.runs["h1"].event(30, "pause", targets=["member-2"])
    scene.runs["h1"].message("member-2", "20260102T120004-bbbbbb", **answer((10, 2)))
    assert view.refresh()
    h1 = view.lines()[0]
    assert h1.statuses == ("running", "paused", "running") and h1.cost_usd == 1.0


def test_a_horde_appears_once_swarm_json_names_its_run(tmp_path: Path) -> None:
    scene = swarm_scene(tmp_path / ".horde")
    view = SwarmView(scene.swarm_dir)
    view.refresh()
    h3 = RunDir(scene.swarm_dir / "h3", f"{SWARM_ID}-h3")
    h3.event(0, "run-start", members=3, model="openai/stub")
    h3.live(os.getpid())
    assert view.line("h3") is not None and view.line("h3").state == "pending"  # type: ignore[union-attr]
    write_swarm(tmp_path / ".horde", runs=("h1", "h2", "h3"), merge="running")
    os.utime(scene.swarm_dir / "SWARM.json", ns=(1, 1))  # a replaced file: a new mtime
    assert view.refresh()
    assert view.line("h3").state == "active"  # type: ignore[union-attr]
    assert view.info is not None and view.info.merge == "running"


def test_the_overview_has_the_partition_merge_and_timeline(tmp_path: Path) -> None:
    scene = swarm_scene(tmp_path / ".horde")
    view = SwarmView(scene.swarm_dir)
    view.refresh()
    text = overview_markdown(view, lambda ts: f"t+{ts - STARTED:g}")
    assert "| h2 | Authentication and session handling in app/auth |" in text
    assert "Merge: pending" in text
    assert "- t+45 horde-start h1" in text
    empty = SwarmView(tmp_path / "nowhere")
    empty.refresh()
    assert "has no readable SWARM.json yet" in overview_markdown(empty, str)


def test_swarms_list_with_runs_newest_first(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    run = RunDir(horde, "20260102-120000-aaaa")
    run.event(0, "run-start", members=3, model="openai/stub")
    swarm_scene(horde)
    (horde / "swarms" / "not-a-swarm").mkdir()  # no SWARM.json: not listed
    index = RunsAndSwarms(horde)
    assert index.refresh()
    rows = index.rows()
    assert [r.run_id for r in rows] == [SWARM_ID, "20260102-120000-aaaa"]
    assert [r.count for r in rows] == ["3/3", "3"]
    assert index.is_swarm(rows[0]) and not index.is_swarm(rows[1])
    assert index.swarm_dir(rows[0]) == horde / "swarms" / SWARM_ID
    assert not index.refresh()
    data = json.loads((horde / "swarms" / SWARM_ID / "SWARM.json").read_text())
    data.update(state="finished", outcome="completed")
    (horde / "swarms" / SWARM_ID / "SWARM.json").write_text(json.dumps(data))
    os.utime(horde / "swarms" / SWARM_ID / "SWARM.json", ns=(2, 2))
    assert index.refresh()
    assert (index.rows()[0].state, index.rows()[0].outcome) == ("finished", "completed")
