"""The on-disk contract of runs and swarms, read one way (`store.runs`): the listing,
the lookup by name, each state from the live marker or SWARM.json with real pids, and
the run documents."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.processes import dead_pid

from horde_tui.common.settings import load_settings
from horde_tui.store import runs
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.setup import RunRequest, assign_roles, write_run_files


def _run(horde: Path, run_id: str, *files: str, pid: int | None = None) -> Path:
    path = horde / "runs" / run_id
    path.mkdir(parents=True)
    for name in files:
        (path / name).write_text("x\n")
    if pid is not None:
        (path / ".live").write_text(f"{pid}\n")
    return path


def _swarm(horde: Path, swarm_id: str, state: str, pid: int | None) -> Path:
    path = horde / "swarms" / swarm_id
    path.mkdir(parents=True)
    data = {
        "id": swarm_id,
        "state": state,
        "parent_pid": pid,
        "runs": {"h1": f"h1/runs/{swarm_id}-h1"},
    }
    (path / "SWARM.json").write_text(json.dumps(data))
    (path / "h1" / "runs" / f"{swarm_id}-h1").mkdir(parents=True)
    return path


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    """One run in every state, a stray file, and two swarms (one live, one orphaned)."""
    h = tmp_path / ".horde"
    _run(h, "20260101-000000-aaaa")  # no TASK.md
    _run(h, "20260101-000001-bbbb", "TASK.md")  # `horde-tui tool` entries only
    _run(h, "20260101-000002-cccc", "TASK.md", "MANIFEST.json", "REPORT.md")
    _run(h, "20260101-000003-dddd", "TASK.md", "MANIFEST.json", pid=dead_pid())
    _run(h, "20260101-000004-eeee", "TASK.md", "MANIFEST.json", pid=os.getpid())
    _run(h, "20260101-000005-ffff", "TASK.md", "MANIFEST.json", pid=os.getpid())
    (h / "runs" / "notes.txt").write_text("not a run\n")
    _swarm(h, "20260101-000006-swa1", "active", os.getpid())
    _swarm(h, "20260101-000007-swa2", "active", dead_pid())
    return h


def test_runs_are_listed_oldest_first_by_state_from_the_live_marker(horde: Path) -> None:
    assert runs.run_ids(horde) == [f"20260101-00000{i}-{c * 4}" for i, c in enumerate("abcdef")]
    assert runs.runs_by_state(horde) == {
        "not started": ["20260101-000000-aaaa"],
        "manual": ["20260101-000001-bbbb"],
        "finished": ["20260101-000002-cccc"],
        "interrupted": ["20260101-000003-dddd"],
        "active": ["20260101-000004-eeee", "20260101-000005-ffff"],
    }
    assert set(runs.runs_by_state(horde)) <= set(runs.RUN_STATES)


def test_the_runs_the_tool_and_the_supervisor_write_read_as_their_state(tmp_path: Path) -> None:
    """The writers' own files, not hand-made ones: a `horde-tui tool` entry's run, and a
    supervisor's run files with the live marker set, cleared, then a report."""
    h = tmp_path / ".horde"
    HordeStore(h, "user").ensure_run("manual")
    request = RunRequest("p", 1)
    written = write_run_files(h, "r-1", request, load_settings(environ={}), assign_roles(request))
    runs.mark_live(written)
    assert runs.runs_by_state(h) == {"manual": ["manual"], "active": ["r-1"]}
    runs.clear_live(written)
    assert runs.runs_by_state(h) == {"manual": ["manual"], "interrupted": ["r-1"]}
    (written / "REPORT.md").write_text("# Report\n")
    assert runs.runs_by_state(h) == {"manual": ["manual"], "finished": ["r-1"]}


def test_the_live_marker_names_this_process_until_cleared(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, "20260101-000000-aaaa", "TASK.md", "MANIFEST.json")
    assert runs.supervisor_pid(run_dir) is None
    runs.mark_live(run_dir)
    assert (runs.supervisor_pid(run_dir), runs.run_state(run_dir)) == (os.getpid(), "active")
    runs.clear_live(run_dir)
    assert (runs.supervisor_pid(run_dir), runs.run_state(run_dir)) == (None, "interrupted")


def test_a_run_is_found_by_name_in_a_swarm_or_as_the_newest_live_one(horde: Path) -> None:
    assert runs.find_run(horde, "20260101-000002-cccc") == horde / "runs" / "20260101-000002-cccc"
    horde_run = horde / "swarms/20260101-000006-swa1/h1/runs/20260101-000006-swa1-h1"
    assert runs.find_run(horde, "20260101-000006-swa1-h1") == horde_run
    assert runs.find_run(horde, None) == horde / "runs" / "20260101-000005-ffff"
    assert runs.find_run(horde, None, ("interrupted",)) == horde / "runs/20260101-000003-dddd"
    # the newest of the states named, whatever their order (`share last`)
    ended = ("interrupted", "finished")
    assert runs.find_run(horde, None, ended) == horde / "runs/20260101-000003-dddd"
    assert runs.find_run(horde, "20991231-000000-zzzz") is None
    assert runs.find_run(horde, "../runs") is None  # never a path outside runs/
    assert runs.find_run(horde / "absent", None) is None


def test_a_swarm_state_is_its_swarm_json_unless_its_host_is_gone(horde: Path) -> None:
    assert runs.swarm_ids(horde) == ["20260101-000006-swa1", "20260101-000007-swa2"]
    assert runs.swarms_by_state(horde) == {
        "active": ["20260101-000006-swa1"],
        "interrupted": ["20260101-000007-swa2"],
    }
    live = runs.live_swarm(horde)
    assert live == horde / "swarms" / "20260101-000006-swa1"
    data = json.loads((live / "SWARM.json").read_text())
    runs.write_swarm_json(live, {**data, "state": "finished"})
    assert runs.live_swarm(horde) is None
    (live / "SWARM.json").write_text('{"state": "act')  # torn: a swarm being created
    assert runs.read_swarm(live) is None


def test_a_bad_id_is_refused_before_it_becomes_a_path(tmp_path: Path) -> None:
    assert runs.run_dir(tmp_path, "20260101-000000-aaaa") == tmp_path / "runs/20260101-000000-aaaa"
    for bad in ("..", "a/b", ""):
        with pytest.raises(ValueError, match="invalid run id"):
            runs.run_dir(tmp_path, bad)
        with pytest.raises(ValueError, match="invalid swarm id"):
            runs.swarm_dir(tmp_path, bad)


def test_run_documents_are_one_list_read_by_the_runs_list_and_the_files_pane(
    tmp_path: Path,
) -> None:
    from horde_tui.screens import panes

    run_dir = _run(tmp_path, "r", "GRAPH.md", "ACCEPTANCE.json", "SYSTEM.md", "TASK.md", "x.md")
    assert [p.name for p in runs.run_files(run_dir)] == ["TASK.md", "ACCEPTANCE.json", "GRAPH.md"]
    assert panes.FilesPane(run_dir).documents() == ["GRAPH.md", "TASK.md", "SYSTEM.md", "x.md"]


def test_a_swarm_is_told_from_a_run_by_where_it_lives_and_its_host_read_one_way(
    horde: Path,
) -> None:
    swarm = horde / "swarms" / "20260101-000006-swa1"
    run = horde / "runs" / "20260101-000004-eeee"
    assert runs.is_swarm_dir(swarm)
    assert not runs.is_swarm_dir(run)
    assert not runs.is_swarm_dir(swarm / "h1" / "runs" / "20260101-000006-swa1-h1")
    assert runs.host_pid(swarm) == os.getpid() == runs.host_pid(run)
    assert runs.host_pid(horde / "runs" / "20260101-000000-aaaa") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{ torn", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"hordes": 2}', "`id`"),
        ('{"id": "s1", "hordes": "two"}', "`hordes`"),
        ('{"id": "s1", "partition": [{"workstream": "no horde"}]}', "`partition`"),
        ('{"id": "s1", "partition": [3]}', "`partition`"),
        ('{"id": "s1", "runs": ["h1"]}', "`runs`"),
        ('{"id": "s1", "timeline": [{"ts": "noon", "kind": "horde-start"}]}', "`timeline`"),
    ],
)
def test_the_one_swarm_json_parser_refuses_a_malformed_file_in_one_line(
    tmp_path: Path, text: str, says: str
) -> None:
    swarm_dir = tmp_path / "swarms" / "s1"
    swarm_dir.mkdir(parents=True)
    (swarm_dir / "SWARM.json").write_text(text)
    with pytest.raises(runs.SwarmFileError) as refused:
        runs.swarm_info(swarm_dir)
    line = str(refused.value)
    assert line.startswith(f"refused: {swarm_dir / 'SWARM.json'} ") and says in line, line
    assert "\n" not in line and "start a new swarm" in line, line
    assert runs.read_swarm(swarm_dir) is None, "the lists skip it, as a torn one"


def test_the_swarm_json_parser_reads_every_contract_key_and_defaults_missing_ones(
    horde: Path,
) -> None:
    swarm = horde / "swarms" / "20260101-000006-swa1"
    info = runs.swarm_info(swarm)
    assert (info.swarm_id, info.hordes, info.partition, info.state) == (swarm.name, 0, (), "active")
    assert runs.horde_run_dirs(swarm, info) == {"h1": swarm / "h1/runs/20260101-000006-swa1-h1"}
    data = {
        "id": "s1",
        "hordes": 2,
        "partition": [{"horde": "h1", "workstream": "api", "criterion": "c", "layers": ["a"]}],
        "timeline": [{"ts": 1.5, "kind": "planner-start", "horde": None}],
    }
    info = runs.parse_swarm(data)
    assert info.partition == (runs.Workstream("h1", "api", "c", ("a",)),)
    assert info.timeline == ((1.5, "planner-start", None),)
    assert [w.as_json() for w in info.partition] == data["partition"]
