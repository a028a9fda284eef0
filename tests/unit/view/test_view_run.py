"""`RunView` and `RunsIndex`: runs read from disk, as the app sees them when attached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.processes import dead_pid
from support.rundir import EPOCH_0, TASK, RunDir, answer

from horde_tui.view.run import RunsIndex, RunView, task_prompt


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    r = RunDir(tmp_path / ".horde", "20260102-120000-abcd")
    r.live(os.getpid())
    r.event(0, "run-start", members=3, model="openai/stub", layers=[])
    r.event(1, "phase-start", phase="discovery")
    return r


def test_task_prompt_is_the_first_line_of_the_task_text():
    assert task_prompt(TASK) == (
        "Find the SQL injections in app/",
        "Find the SQL injections in app/\nand rank them.",
    )
    assert task_prompt("# Task\n\nManual run `x`: entries.\n") == (
        "Manual run `x`: entries.",
        "Manual run `x`: entries.",
    )
    assert task_prompt("") == ("", "")


def test_members_are_rebuilt_from_lifecycle_events(run):
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11, role="member")
    run.event(3, "member-spawn", "member-2", attempt=1, pid=12, role="member")
    run.event(9, "member-exit", "member-2", cause="model_error", code=1, turns=2, detail="429")
    run.event(9, "member-reset", "member-2", cause="model_error", resets=1, released=["#2"])
    run.event(10, "member-spawn", "member-2", attempt=2, pid=13, role="member")
    run.event(11, "pause", targets=["member-1"])
    view = RunView(run.path)
    view.refresh()

    rows = {r.name: r for r in view.members()}
    assert [r.name for r in view.members()] == ["member-1", "member-2", "member-3"]
    m1, m2, m3 = rows["member-1"], rows["member-2"], rows["member-3"]
    assert (m1.status, m1.attempt, m1.pid, m1.started) == ("paused", 1, 11, EPOCH_0 + 2)
    assert (m2.status, m2.attempt, m2.resets, m2.pid, m2.exit_cause) == ("running", 2, 1, 13, None)
    assert (m3.status, m3.role, m3.attempt) == ("pending", "verifier", 0)

    run.event(12, "resume", targets=["member-1"])
    run.event(20, "member-exit", "member-1", cause="completed", code=0, turns=9)
    assert "members" in view.refresh()
    m1 = view.members()[0]
    assert (m1.status, m1.exit_cause, m1.ended) == ("exited", "completed", EPOCH_0 + 20)


def test_turns_tokens_and_current_tool_come_from_the_newest_transcript(run):
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11)
    run.message("member-1", "20260102T120002-aaaaaa", role="system", content="protocol")
    run.message("member-1", "20260102T120002-aaaaaa", **answer((100, 10), ("horde",)))
    run.message("member-1", "20260102T120002-aaaaaa", role="tool", name="horde", content="ok")
    run.message("member-1", "20260102T120002-aaaaaa", **answer((150, 20), ("bash",), "Checking"))
    view = RunView(run.path)
    view.refresh()

    m1 = view.members()[0]
    assert (m1.turns, m1.prompt_tokens, m1.completion_tokens, m1.cost_usd) == (2, 250, 30, 1.0)
    # The call as the member's status line summarizes it (`bash: <command>`; none here).
    assert (m1.current_tool, m1.tool_summary, m1.final_message) == ("bash", "bash:", "Checking")
    assert len(m1.transcripts) == 1

    assert view.refresh() == set(), "nothing changed, nothing to repaint"

    run.message("member-1", "20260102T120002-aaaaaa", role="tool", name="bash", content="...")
    assert view.refresh() == {"members"}
    m1 = view.members()[0]
    assert m1.current_tool == ""
    assert m1.tool_summary == "bash:", "the table shows the last call, dimmed, between tools"

    # a reset: the newer session is followed from now on; the counts add up every
    # session, as the supervisor counts them and the report sums them
    run.message("member-1", "20260102T120510-bbbbbb", **answer((7, 1)))
    view.refresh()
    m1 = view.members()[0]
    assert (m1.turns, m1.prompt_tokens, m1.cost_usd, len(m1.transcripts)) == (3, 257, 1.5, 2)
    assert Path(m1.transcripts[-1]).name == "20260102T120510-bbbbbb.jsonl"


def test_close_releases_descriptors_and_a_refresh_resumes(run):
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11)
    run.message("member-1", "20260102T120002-aaaaaa", **answer((1, 1)))
    view = RunView(run.path)
    view.refresh()
    view.close()
    run.message("member-1", "20260102T120002-aaaaaa", **answer((1, 1)))
    run.event(9, "member-exit", "member-1", cause="completed")
    assert view.refresh() == {"events", "members"}
    assert (view.members()[0].turns, view.members()[0].status) == (2, "exited")


def test_helpers_join_the_table_in_spawn_order(run):
    run.event(30, "member-spawn", "synthesis", attempt=1, pid=40, role="synthesis")
    view = RunView(run.path)
    view.refresh()
    assert [(r.name, r.role, r.status) for r in view.members()][-1] == (
        "synthesis",
        "synthesis",
        "running",
    )


def test_run_states_active_finalizing_finished(run):
    view = RunView(run.path)
    assert view.refresh() == {"state", "events", "files", "members"}
    assert (view.state, view.life.phase) == ("active", "discovery")

    run.event(40, "phase-end", phase="discovery")
    run.event(41, "phase-start", phase="finalize")
    view.refresh()
    assert (view.state, view.life.phase) == ("finalizing", "finalize")

    (run.path / "REPORT.md").write_text("# Report\n")
    run.event(50, "run-end", outcome="finished", diagnosis="every member finished its work")
    (run.path / ".live").unlink()
    assert {"state", "files"} <= view.refresh()
    assert (view.state, view.life.outcome, view.life.ended) == (
        "finished",
        "finished",
        EPOCH_0 + 50,
    )
    assert [p.name for p in view.files] == ["TASK.md", "REPORT.md"]


def test_an_interrupted_run_shows_its_running_members_as_killed(run):
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11)
    run.live(dead_pid())
    view = RunView(run.path)
    view.refresh()
    m1 = view.members()[0]
    assert view.state == "interrupted"
    assert (m1.status, m1.exit_cause) == ("exited", "killed")
    assert view.fold.states["member-1"].status == "running"  # the fold itself is untouched


def test_run_files_are_listed_in_document_order(run):
    for name in ("GRAPH.md", "ACCEPTANCE.json", "ANSWER.md", "PLAN.md", "SUMMARY.md", "x.md"):
        (run.path / name).write_text("x")
    view = RunView(run.path)
    view.refresh()
    assert [p.name for p in view.files] == [
        "TASK.md",
        "PLAN.md",
        "SUMMARY.md",
        "ANSWER.md",
        "ACCEPTANCE.json",
        "GRAPH.md",
    ]


def test_run_info_from_manifest_and_task(run):
    view = RunView(run.path)
    info = view.info
    assert (info.prompt, info.model, info.member_count, info.created) == (
        "Find the SQL injections in app/",
        "openai/stub",
        3,
        EPOCH_0 - 5,
    )


def test_a_clean_stop_records_its_countdown(run):
    run.event(5, "stop-clean", reason="user", grace_s=90)
    view = RunView(run.path)
    view.refresh()
    assert view.life.stop_clean == (EPOCH_0 + 5, 90.0)


def test_runs_index_lists_every_run_with_its_state(tmp_path):
    horde = tmp_path / ".horde"
    active = RunDir(horde, "20260102-120000-aaaa", members=4)
    active.live(os.getpid())
    active.event(0, "run-start", members=4, model="openai/stub")
    finishing = RunDir(horde, "20260102-110000-bbbb")
    finishing.live(os.getpid())
    finishing.event(1, "phase-start", phase="finalize")
    done = RunDir(horde, "20260101-090000-cccc", members=2)
    (done.path / "REPORT.md").write_text("r")
    done.event(2, "run-end", outcome="solved")
    lost = RunDir(horde, "20260101-080000-dddd")
    lost.live(dead_pid())
    manual = horde / "runs" / "manual"
    manual.mkdir()
    (manual / "TASK.md").write_text("# Task\n\nManual run `manual`: entries.\n")
    (horde / "runs" / "empty").mkdir()

    index = RunsIndex(horde)
    assert index.refresh() is True
    rows = {r.run_id: r for r in index.rows()}
    assert {k: r.state for k, r in rows.items()} == {
        "20260102-120000-aaaa": "active",
        "20260102-110000-bbbb": "finalizing",
        "20260101-090000-cccc": "finished",
        "20260101-080000-dddd": "interrupted",
        "manual": "manual",
        "empty": "not started",
    }
    a = rows["20260102-120000-aaaa"]
    assert (a.started, a.members, a.model, a.prompt) == (
        EPOCH_0,
        4,
        "openai/stub",
        "Find the SQL injections in app/",
    )
    c = rows["20260101-090000-cccc"]
    assert (c.outcome, c.members, c.started, c.files) == (
        "solved",
        2,
        EPOCH_0 - 5,
        ("TASK.md", "REPORT.md"),
    )
    assert index.rows()[0].run_id == "20260102-120000-aaaa"  # newest first
    assert index.refresh() is False

    finishing.event(9, "run-end", outcome="finished")
    assert index.refresh() is True
    assert {r.run_id: r.outcome for r in index.rows()}["20260102-110000-bbbb"] == "finished"
