"""Swarm parts that need no full run: the partition (dealt layers, the planner's reply),
horde-targeted control routing, SWARM.json readers, the launch rules, and a planner that
cannot partition (a real planner process, the stub model)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from support.swarm_scene import RecordingHorde

from horde_tui.common.settings import load_settings
from horde_tui.launch.launch import RunOptions, build_host, check_launch
from horde_tui.protocol import controls
from horde_tui.protocol.outcome import RunSummary
from horde_tui.protocol.targets import TargetError, parse_targets, per_horde
from horde_tui.store.runs import (
    SwarmInfo,
    live_swarm,
    swarm_state,
    swarms_by_state,
    write_swarm_json,
)
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSummary, SwarmSupervisor, swarm_outcome
from horde_tui.supervisor.swarm_plan import SwarmError, deal_layers, parse_partition
from horde_tui.view.source import send_control

MODEL_ENV = {"HORDE_MODEL": "openai/stub"}


def test_plan_layers_are_dealt_round_robin() -> None:
    shares = deal_layers(["parser", "checker", "codegen", "linker", "docs"], 2)
    assert [s.layers for s in shares] == [("parser", "codegen", "docs"), ("checker", "linker")]
    assert [s.horde for s in shares] == ["h1", "h2"]
    assert "parser; codegen; docs" in shares[0].workstream and shares[0].criterion


def test_fewer_layers_than_hordes_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SwarmError, match="needs at least 3 layers"):
        deal_layers(["a", "b"], 3)
    check = check_launch(RunOptions("3/2"), tmp_path / ".horde", "a; b", MODEL_ENV)
    assert [r.field for r in check.refusals] == ["layers"]
    assert check.refusals[0].message.startswith("refused: plan 3/M needs at least 3 layers")


def test_a_swarm_count_passes_the_launch_check_and_builds_a_swarm(tmp_path: Path) -> None:
    check = check_launch(RunOptions("2/3", "Audit the repo"), tmp_path / ".horde", None, MODEL_ENV)
    assert check.ok, check.refusals
    assert check.count is not None and (check.count.hordes, check.count.members) == (2, 3)
    host = build_host(check, tmp_path)
    assert isinstance(host, SwarmSupervisor) and host.count == 2
    assert host.swarm_dir == tmp_path.resolve() / ".horde" / "swarms" / host.swarm_id
    assert not host.swarm_dir.exists()  # nothing on disk before run()


def test_the_planners_reply_parses_into_distinct_workstreams() -> None:
    reply = (
        "Here is the split.\n\n**h1:** Audit the HTTP handlers for injection\n"
        "- acceptance: each handler is classified with file:line evidence\n"
        "**h2:** Audit the storage layer for data loss\n"
        "- acceptance criterion: every write path is checked for fsync\n"
    )
    shares = parse_partition(reply, 2)
    assert [(s.horde, s.workstream) for s in shares] == [
        ("h1", "Audit the HTTP handlers for injection"),
        ("h2", "Audit the storage layer for data loss"),
    ]
    assert shares[1].criterion == "every write path is checked for fsync"


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("I cannot split this task.", "expected workstreams h1 to h2, got none"),
        ("h1: a\nacceptance: x\nh2: b\nacceptance: y\nh3: c\nacceptance: z", "got h1, h2, h3"),
        ("h1: Audit the parser\nacceptance: x\nh2: b\n", "no acceptance criterion for h2"),
        (
            "h1: Audit the parser module\nacceptance: x\nh2: Audit the parser module\n"
            "acceptance: y",
            "h1 and h2 are the same workstream",
        ),
    ],
)
def test_a_reply_without_h_distinct_workstreams_is_refused(reply: str, says: str) -> None:
    with pytest.raises(SwarmError, match=says):
        parse_partition(reply, 2)


@pytest.mark.parametrize(
    ("target", "routed"),
    [
        ("all", {1: "all", 2: "all", 3: "all"}),
        ("h2", {2: "all"}),
        ("member-3", {1: "member-3", 2: "member-3", 3: "member-3"}),
        ("h2:3, h1", {1: "all", 2: "member-3"}),
        ("h2:3 h2:member-4", {2: "member-3,member-4"}),
        ("h2:3 h2", {2: "all"}),
    ],
)
def test_swarm_targets_route_to_each_horde(target: str, routed: dict[int, str]) -> None:
    assert per_horde(parse_targets(target), 3) == routed


def test_a_horde_the_swarm_lacks_is_refused() -> None:
    with pytest.raises(TargetError, match="h4 is not in this swarm; it has h1 to h3"):
        per_horde(parse_targets("h4"), 3)


def _summary(outcome: str) -> RunSummary:
    return RunSummary("r", outcome, "", "ok", 0.0, 1.0, "m")


def test_the_swarm_outcome_follows_its_hordes() -> None:
    assert swarm_outcome({"h1": _summary("solved"), "h2": _summary("solved")})[0] == "solved"
    assert swarm_outcome({"h1": _summary("solved"), "h2": _summary("finished")})[0] == "completed"
    mixed = swarm_outcome({"h1": _summary("finished"), "h2": _summary("stopped by user")})
    assert mixed == ("stopped by user", "h1 finished; h2 stopped by user")
    assert swarm_outcome({"h1": _summary("canary failed"), "h2": _summary("finished")})[0] == (
        "failed"
    )
    some = swarm_outcome({"h1": _summary("solved"), "h2": _summary("finished with failures")})
    assert some == ("finished with failures", "h1 solved; h2 finished with failures")


def test_a_swarm_exits_as_a_run_of_the_same_outcome_would() -> None:
    """`run H/M --headless` ends with the run outcome table's status (`completed` is a
    swarm's `finished`)."""
    codes = {
        outcome: SwarmSummary("s", "finished", outcome, "").exit_code
        for outcome in ("completed", "solved", "finished with failures", "stopped by user")
    }
    assert codes == {
        "completed": 0,
        "solved": 3,
        "finished with failures": 5,
        "stopped by user": 130,
    }
    assert SwarmSummary("s", "not started", "not started", "").exit_code == 1


def test_a_swarm_whose_host_died_reads_as_interrupted_and_a_live_one_blocks_launch(
    tmp_path: Path,
) -> None:
    horde_dir = tmp_path / ".horde"
    dead = horde_dir / "swarms" / "20260101-000000-dead"
    live = horde_dir / "swarms" / "20260101-000001-live"
    for folder, pid in ((dead, 2**22 + 12345), (live, os.getpid())):
        folder.mkdir(parents=True)
        write_swarm_json(folder, {"id": folder.name, "state": "active", "parent_pid": pid})
    ended = SwarmInfo("s0", state="finished", parent_pid=2**22 + 12345)
    assert swarm_state(ended) == "finished"
    assert swarms_by_state(horde_dir) == {"interrupted": [dead.name], "active": [live.name]}
    assert live_swarm(horde_dir) == live
    check = check_launch(RunOptions("3", "x"), horde_dir, environ=MODEL_ENV)
    assert [r.field for r in check.refusals] == ["run"]
    assert f"swarm {live.name} is live" in check.refusals[0].message
    assert check.notes == [
        f"note: swarm {dead.name} was interrupted (its supervisor died); write a horde's "
        f"report with `horde-tui finalize {dead.name}-hN`"
    ]


def test_a_planner_that_cannot_partition_leaves_the_swarm_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")
    plans = {"planner": [{"say": "This task is one indivisible question; no split."}]}
    with StubThread(policy=AgentPolicy(plans)) as stub:
        env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "s"}
        sw = SwarmSupervisor(
            tmp_path, RunRequest("What is 6 x 7?", 2), load_settings(environ=env), 2
        )
        summary = asyncio.run(asyncio.wait_for(sw.run(), 120))
    assert summary.state == "not started" and summary.exit_code == 1
    data = json.loads((sw.swarm_dir / "SWARM.json").read_text())
    assert data["state"] == "not started" and data["ended"] is not None
    assert data["partition"] == [] and data["runs"] == {}
    assert "expected workstreams h1 to h2, got none" in data["diagnosis"]
    swarm_md = (sw.swarm_dir / "SWARM.md").read_text()
    assert "## Not started" in swarm_md and "could not split the task" in swarm_md
    assert list((sw.swarm_dir / "planner-sessions" / "planner").glob("*.jsonl"))
    assert not (sw.swarm_dir / "h1").exists() and not (sw.swarm_dir / "h2").exists()
    assert [t["kind"] for t in data["timeline"]] == ["planner-start", "planner-end", "swarm-end"]


def test_a_stop_while_the_planner_works_ends_it_and_starts_no_horde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_GATEWAY_BACKOFF_MS", "20")
    plans = {"planner": [{"say": "h1: a\nacceptance: x\nh2: b\nacceptance: y", "hold_ms": 60_000}]}

    async def stop_once_planning(sw: SwarmSupervisor) -> str:
        while sw._helper_pid is None:  # the planner process is running
            await asyncio.sleep(0.05)
        return sw.stop_clean()

    async def main(sw: SwarmSupervisor) -> tuple[object, str]:
        run = asyncio.create_task(sw.run())
        answer = await asyncio.wait_for(stop_once_planning(sw), 60)
        return await asyncio.wait_for(run, 60), answer

    with StubThread(policy=AgentPolicy(plans)) as stub:
        env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "s"}
        sw = SwarmSupervisor(tmp_path, RunRequest("Audit it", 2), load_settings(environ=env), 2)
        summary, answer = asyncio.run(main(sw))
    assert answer == "h1: not started\nh2: not started"
    assert summary.state == "not started" and summary.outcome == "stopped by user"  # type: ignore[attr-defined]
    data = json.loads((sw.swarm_dir / "SWARM.json").read_text())
    assert data["runs"] == {} and "stopped while planning" in data["diagnosis"]


def test_controls_reach_the_hordes_a_target_names_and_hold_back_unstarted_ones(
    tmp_path: Path,
) -> None:
    """h1 is running, h2 has ended, h3 has not started."""
    sw = SwarmSupervisor(
        tmp_path, RunRequest("x", 2), load_settings(environ=MODEL_ENV), 3, swarm_id="s1"
    )
    h1, h2 = RecordingHorde("h1"), RecordingHorde("h2")
    sw.hordes = {"h1": h1, "h2": h2}  # type: ignore[dict-item]
    sw.summaries["h2"] = _summary("finished")

    assert sw.pause("h1:3") == "h1: pause member-3"
    assert sw.resume("member-2") == (
        "h1: resume member-2\nh2: nothing to do, it ended (finished)\nh3: not started"
    )
    assert sw.pause("h4") == "refused: h4 is not in this swarm; it has h1 to h3"
    assert sw.stop_clean("h3") == "h3: not started" and sw.skipped == {"h3"}
    assert not sw.halted  # one horde held back, not the swarm
    assert asyncio.run(sw.reset("h1")).startswith("refused: reset needs members")
    assert asyncio.run(sw.reset("h1:2")) == "h1: reset member-2"
    assert h1.calls == [("pause", "member-3"), ("resume", "member-2"), ("reset", "member-2")]
    assert h2.calls == []

    assert asyncio.run(sw.stop_hard()).splitlines()[0] == "h1: stop-hard all"
    assert sw.hard_stopped and sw.halted == "stopped hard by the user"


def test_the_swarms_control_folder_is_answered_for_every_control_it_can_route(
    tmp_path: Path,
) -> None:
    """Another shell's request in the swarm's own `control/` (the CLI's, the swarm
    screen's) is routed as a method call is: pause, resume, reset and status of
    `<horde>:<member>` or a whole horde reach that horde once; one answer comes back."""
    sw = SwarmSupervisor(
        tmp_path, RunRequest("x", 2), load_settings(environ=MODEL_ENV), 3, swarm_id="s1"
    )
    h1, h2 = RecordingHorde("h1"), RecordingHorde("h2")
    sw.hordes = {"h1": h1, "h2": h2}  # type: ignore[dict-item]
    sw.summaries["h2"] = _summary("finished")

    async def ask_all() -> list[str]:
        serving = asyncio.create_task(controls.serve(sw.swarm_dir, sw, 0.02))
        asked = [
            ("pause", "h1:member-3"),
            ("resume", "h1"),
            ("reset", "h1:2"),
            ("status", "h1"),
            ("pause", "h4"),
        ]
        try:
            return [
                await asyncio.to_thread(send_control, sw.swarm_dir, action, target, 10)
                for action, target in asked
            ]
        finally:
            serving.cancel()

    answers = asyncio.run(ask_all())
    assert answers == [
        "h1: pause member-3",
        "h1: resume all",
        "h1: reset member-2",
        "swarm s1: pending, 3 hordes of 2 members, merge pending\n\nh1: (not partitioned yet)"
        "\nstatus all",
        "refused: h4 is not in this swarm; it has h1 to h3",
    ]
    assert h1.calls == [
        ("pause", "member-3"),
        ("resume", "all"),
        ("reset", "member-2"),
        ("status", "all"),
    ]
    assert h2.calls == []
    assert not list((sw.swarm_dir / "control").glob("req-*")), "every request answered"


def test_an_answer_with_a_hordes_refusal_is_not_ok(tmp_path: Path) -> None:
    """`horde-tui reset h1:2` exits 1 when h1 refuses, as when the swarm itself does."""
    sw = SwarmSupervisor(
        tmp_path, RunRequest("x", 2), load_settings(environ=MODEL_ENV), 2, swarm_id="s1"
    )
    sw.hordes = {  # type: ignore[assignment]
        "h1": RecordingHorde("h1", refusing=frozenset({"member-2"})),
        "h2": RecordingHorde("h2"),
    }

    async def ask(target: str) -> tuple[bool, str]:
        serving = asyncio.create_task(controls.serve(sw.swarm_dir, sw, 0.02))
        try:
            request = controls.new_request("reset", target)
            got = await asyncio.to_thread(controls.ask, sw.swarm_dir, request, 10)
        finally:
            serving.cancel()
        assert got is not None
        return got["ok"], got["text"]

    assert asyncio.run(ask("member-2")) == (
        False,
        "h1: refused: reset member-2\nh2: reset member-2",
    )
    assert asyncio.run(ask("h2:member-2")) == (True, "h2: reset member-2")
    assert asyncio.run(ask("h1")) == (
        False,
        "refused: reset needs members, not whole hordes (h1); reset h2:member-3, or "
        "member-3 in every horde; to end a horde, stop it",
    )
