"""`horde-tui resume RUN`: a run whose supervisor died is carried on by a new one.

The end-to-end test SIGKILLs a real headless supervisor in the middle of discovery
(real gateway and member processes, the scripted stub model), resumes the run from
another "shell" and checks that it finishes with a report, that the members carried
their sessions on (the stub saw the earlier conversation again) and that the events
and REPORT.md record the resume. The refusals run in-process against hand-written runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.cli import cli_argv, one_line_refusal, stub_env, wait_for_line
from support.plans import HeldUntilReleased, lifecycle
from support.rundir import RunDir

from horde_tui.commands.cli import main
from horde_tui.common import prompts
from horde_tui.store.runs import run_state
from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread

RUN = "20260102-120000-aaaa"


def run_env(stub: StubThread) -> dict[str, str]:
    """No helper sessions: they add time, not coverage, here."""
    return stub_env(stub, HORDE_DELIVERABLE="false", HORDE_POSTMORTEM="false")


@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
def test_a_sigkilled_supervisor_is_resumed_and_the_run_finishes(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
    policy = HeldUntilReleased()
    with StubThread(policy=policy) as stub:
        env = run_env(stub)
        proc = subprocess.Popen(
            cli_argv("run", "--headless", "2", "Review app.py"),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for_line(proc, "[member-spawn] member-2")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(policy.holding) < 2:
                time.sleep(0.05)
            assert policy.holding == {"member-1", "member-2"}, "the members never got to work"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            policy.released.set()
        finally:
            if proc.poll() is None:
                proc.kill()
        run_dir = next((tmp_path / ".horde" / "runs").iterdir())
        assert run_state(run_dir) == "interrupted"
        before = len(stub.stub.requests)
        resumed = subprocess.run(
            cli_argv("resume", run_dir.name, "--headless"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        after = stub.stub.requests[before:]
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"run {run_dir.name} resumed: phase discovery" in resumed.stdout
    assert "outcome: finished" in resumed.stdout, resumed.stdout[-3000:]

    for member in ("member-1", "member-2"):
        # The old member may still ask once before its watchdog ends it: look for the
        # carried-on session's first request, the one ending with the resume notice.
        carried = [
            r
            for r in after
            if r.member == member and r.body["messages"][-1]["content"] == prompts.RESUMED_NOTICE
        ]
        assert len(carried) == 1, f"{member} did not carry its session on"
        messages = carried[0].body["messages"]
        results = [m["content"] for m in messages if m["role"] == "tool"]
        assert any("ok #" in text for text in results), "the idea it filed is sent again"

    kinds = lifecycle(run_dir)
    resume_at = kinds.index(("run-resume", None))
    spawns_before = [m for k, m in kinds[:resume_at] if k == "member-spawn"]
    spawns_after = [m for k, m in kinds[resume_at:] if k == "member-spawn"]
    assert spawns_before == ["member-1", "member-2"]
    assert spawns_after[:2] == ["member-1", "member-2"]
    assert kinds[-1] == ("run-end", None)
    records = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    resume = next(r for r in records if r.get("kind") == "run-resume")
    assert resume["phase"] == "discovery" and resume["members"] == ["member-1", "member-2"]
    respawned = [r for r in records[records.index(resume) :] if r.get("kind") == "member-spawn"]
    assert [r["attempt"] for r in respawned[:2]] == [1, 1], "a carried-on session, not a new one"

    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert sorted(store.state.findings) == ["F1", "F2"]
    assert all(i.status == "done" for i in store.state.ideas.values())
    report = (run_dir / "REPORT.md").read_text()
    assert "- Resumed: " in report
    assert "# Run " in report and ": finished" in report.splitlines()[0]
    assert run_state(run_dir) == "finished"
    for member in ("member-1", "member-2"):
        assert len(list((run_dir / "sessions" / member).glob("*.jsonl"))) == 1


def test_resume_refuses_a_live_run(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = RunDir(in_dir / ".horde", RUN)
    run.event(0, "run-start", members=3)
    run.live(os.getpid())
    line = one_line_refusal(capsys, "resume", RUN)
    assert line == (
        f"horde-tui: refused: run {RUN} is live (supervisor pid {os.getpid()}); only a run "
        f"whose supervisor is gone can be resumed; watch it with `horde-tui attach {RUN}`"
    )


def test_resume_refuses_an_ended_run(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = RunDir(in_dir / ".horde", RUN)
    run.event(0, "run-start", members=3)
    run.event(9, "run-end", outcome="finished")
    (run.path / "REPORT.md").write_text("# Run report\n")
    line = one_line_refusal(capsys, "resume", RUN, "--detach")
    assert line.startswith(f"horde-tui: refused: run {RUN} already ended (finished); ")
    assert line.endswith("start a new run instead")
    assert not list((in_dir / ".horde").glob("detached-*.log")), "nothing was started"


def test_resume_names_an_unknown_run(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume", "20990101-000000-ffff"]) == 2  # bad usage
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert out == "" and line.startswith(
        "horde-tui resume: no run or swarm named 20990101-000000-ffff in "
    )
    assert line.endswith("; `horde-tui runs` lists them")


def test_a_one_member_runs_canary_result_is_read_from_its_canary_event(in_dir: Path) -> None:
    """With one member no second spawn shows the canary passed: the supervisor's `canary`
    event says so, and a resumed run must not wait for the canary again."""
    from horde_tui.supervisor.resume import load_resume

    run = RunDir(in_dir / ".horde", RUN, members=1)
    run.event(0, "run-start", members=1)
    run.event(1, "phase-start", phase="discovery")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=1)
    assert not load_resume(in_dir / ".horde", RUN, environ={}).canary_passed
    run.event(3, "canary", "member-1", result="ok after a retry")
    assert load_resume(in_dir / ".horde", RUN, environ={}).canary_passed


def test_the_resume_point_is_read_from_the_events(in_dir: Path) -> None:
    """Phase, attempts, resets, the clean stop under way, the start the deadline counts
    from, who is carried on and how, and the budget left, from a hand-written run."""
    from support.rundir import EPOCH_0

    from horde_tui.supervisor.resume import carried_on, load_resume, resumed_supervisor

    run = RunDir(in_dir / ".horde", RUN)
    manifest = json.loads((run.path / "MANIFEST.json").read_text())
    manifest["config"] = {"model": "openai/stub", "max_cost_usd": 1.0, "max_minutes": 30}
    (run.path / "MANIFEST.json").write_text(json.dumps(manifest))
    run.event(0, "run-start", members=3)
    run.event(1, "phase-start", phase="discovery")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=1)
    run.event(3, "member-spawn", "member-2", attempt=1, pid=2)
    run.event(4, "member-exit", "member-2", cause="model_error")
    run.event(5, "member-reset", "member-2", cause="model_error", resets=1)
    run.event(6, "member-spawn", "member-3", attempt=1, pid=3)
    run.event(7, "member-exit", "member-3", cause="completed")
    run.event(
        8,
        "stop-clean",
        reason="stopped at deadline",
        grace_s=90,
        outcome="stopped at deadline",
        diagnosis="the 30-minute deadline was reached",
    )
    run.message(
        "member-1",
        "20260102T120002-aaaaaa",
        role="assistant",
        content="x",
        usage={"cost_usd": 0.25},
    )
    run.message(
        "member-3", "20260102T120006-cccccc", role="assistant", content="y", usage={"cost_usd": 0.5}
    )

    point = load_resume(in_dir / ".horde", RUN, environ={})
    assert (point.phase, point.canary_passed, point.started) == ("discovery", True, EPOCH_0)
    assert point.request.prompt == "Find the SQL injections in app/\nand rank them."
    assert [(m.attempt, m.resets) for m in point.members.values()] == [(1, 0), (1, 1), (1, 0)]
    sup = resumed_supervisor(in_dir, point)
    assert sup.started == EPOCH_0 and sup.settings.supervisor.max_minutes == 30
    assert sup.stop is not None and sup.stop.reason == "stopped at deadline"
    assert sup.stop.deadline == EPOCH_0 + 8 + 90
    assert sup.outcome == "stopped at deadline"
    assert carried_on(sup, point) == {"member-1": "resume", "member-2": "fresh"}
    assert sup.members["member-3"].exit_cause == "completed"
    assert sup.gateway_budget_usd() == pytest.approx(0.25)


def test_resume_flags_go_with_a_run(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`resume member-2 --detach` mixes the two meanings of `resume`: refused, not guessed."""
    assert main(["resume", "member-2", "--detach"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [
        "horde-tui: refused: --detach and --headless go with `resume RUN` (a run whose "
        "supervisor is gone); `resume [target]` resumes paused members"
    ]


# -- one member's session: `resume RUN --member member-N` --------------------------------------


EARLIER = [
    {"role": "system", "content": "You are member-1 of a horde."},
    {"role": "user", "content": "Review app.py"},
    {"role": "assistant", "content": "Filed."},
]
"""A finished session's conversation, as its transcript holds it."""


def finished_run(horde: Path, stub: StubThread) -> Path:
    """A one-member run on `stub` that finished (written as the supervisor writes one,
    without playing it): its events, its REPORT.md, member-1's transcript; no helpers."""
    run = RunDir(horde, RUN, members=1)
    manifest = json.loads((run.path / "MANIFEST.json").read_text())
    manifest["config"] = {
        "model": stub.model,
        "api_base": stub.api_base,
        "deliverable": False,
        "postmortem": False,
    }
    (run.path / "MANIFEST.json").write_text(json.dumps(manifest))
    run.event(0, "run-start", members=1)
    run.event(1, "phase-start", phase="discovery")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=2**22 + 1, role="member")
    run.event(3, "canary", "member-1", result="ok")
    for message in EARLIER:
        run.message("member-1", "20260102T120002-aaaaaa", **message)
    run.event(9, "member-exit", "member-1", cause="completed", turns=1)
    run.event(10, "phase-end", phase="discovery")
    run.event(11, "run-end", outcome="finished", diagnosis="every member finished its work")
    (run.path / "REPORT.md").write_text("# Run report: finished\n")
    return run.path


@pytest.mark.e2e
def test_a_finished_runs_member_is_carried_on_under_the_same_run(tmp_path: Path) -> None:
    """The run ended; `resume RUN --member member-1 --detach` carries member-1's session
    on from its transcript in a one-member continuation (its own process, as `resume
    RUN --detach`): the stub sees the earlier conversation first, the session's new
    post lands in the same run, and REPORT.md says so. (A real transcript, with tool
    calls, is carried on in `test_supervisor_reset.py`'s live run.)"""
    from support.plans import CarriedOn

    with StubThread(policy=CarriedOn({})) as stub:
        run_dir = finished_run(tmp_path / ".horde", stub)
        (transcript,) = (run_dir / "sessions" / "member-1").glob("*.jsonl")
        earlier = transcript.read_text()
        (run_dir / ".stop-clean").write_text("stopped by user\n")  # an old wind-down
        resumed = subprocess.run(
            cli_argv("resume", run_dir.name, "--member", "member-1", "--detach"),
            cwd=tmp_path,
            env=run_env(stub),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
        assert resumed.stdout.startswith(f"run {run_dir.name} resumed in the background (pid ")
        log = Path(resumed.stdout.split("; log: ", 1)[1].splitlines()[0])
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and "\noutcome: " not in log.read_text():
            time.sleep(0.2)
        after = [r for r in stub.stub.requests if r.member == "member-1"]
    output = log.read_text()
    assert "outcome: finished" in output, output[-3000:]
    assert (
        f"run {run_dir.name}: the run had ended (finished); a one-member continuation "
        f"carries member-1's session on from {transcript.relative_to(run_dir)}, model "
        f"{stub.model}\n"
    ) in output
    carried = after[0].body["messages"]
    assert carried[: len(EARLIER)] == EARLIER, "the earlier conversation comes first"
    assert carried[-1]["content"] == prompts.RESUMED_NOTICE

    # The same transcript, grown: the session went on in its own file.
    assert list((run_dir / "sessions" / "member-1").glob("*.jsonl")) == [transcript]
    assert transcript.read_text().startswith(earlier)
    records = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [r.get("kind") for r in records]
    assert kinds.count("run-end") == 2 and kinds[-1] == "run-end"
    resume = next(r for r in records if r.get("kind") == "run-resume")
    assert resume["continuation"] == "member-1" and resume["ended"] == "finished"
    later = records[records.index(resume) :]
    assert [r["attempt"] for r in later if r.get("kind") == "member-spawn"] == [1]
    assert any(r.get("kind") == "session-resume" for r in later)
    assert "repair-skipped" in [r.get("kind") for r in later]
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    posts = [p for p in store.state.posts if p.by == "member-1"]
    assert posts and posts[-1].text == "Carried on from my transcript."
    assert posts[-1].run == run_dir.name
    report = (run_dir / "REPORT.md").read_text()
    assert "- Continued: member-1's session at " in report
    assert (
        f"`horde-tui resume {run_dir.name} --member member-1`, after the run had ended (finished))"
        in report
    )
    assert run_state(run_dir) == "finished"
    assert not (run_dir / ".stop-clean").exists(), "the old wind-down is over"


def test_a_one_member_continuation_leaves_the_runs_stop_and_deadline_behind(in_dir: Path) -> None:
    """A run that ended at its deadline: the continuation's supervisor carries no stop,
    counts the deadline from its own start, does not go on --until-stop, and marks
    the member it carries on (no repair follows)."""
    from horde_tui.supervisor.resume import load_resume, resumed_supervisor

    run = RunDir(in_dir / ".horde", RUN)
    manifest = json.loads((run.path / "MANIFEST.json").read_text())
    manifest["config"] = {"model": "openai/stub", "max_minutes": 30}
    manifest["request"]["until_stop"] = True
    (run.path / "MANIFEST.json").write_text(json.dumps(manifest))
    run.event(0, "run-start", members=3)
    run.event(2, "member-spawn", "member-1", attempt=1, pid=1)
    run.event(3, "member-spawn", "member-2", attempt=1, pid=2)
    run.event(8, "stop-clean", reason="stopped at deadline", grace_s=90)
    run.event(9, "run-end", outcome="stopped at deadline")
    run.message("member-2", "20260102T120003-bbbbbb", role="system", content="s")

    point = load_resume(in_dir / ".horde", RUN, environ={}, member="member-2")
    assert (point.only, point.ended) == ("member-2", "stopped at deadline")
    before = time.time()
    sup = resumed_supervisor(in_dir, point)
    assert sup.stop is None and sup.outcome is None and not sup.hard_stopped
    assert sup.one_member == "member-2" and not sup.request.until_stop
    assert sup.deadline_from is not None and sup.deadline_from >= before
    assert sup.started < before - 60  # the report's times still count from the run's start


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ("--member", "bob"),
            f"horde-tui: refused: run {RUN} has no member named 'bob' (its members: member-1, "
            "member-2, member-3); name one of them",
        ),
        (
            ("--member", "member-7"),
            f"horde-tui: refused: run {RUN} has no member named 'member-7' (its members: "
            "member-1, member-2, member-3); name one of them",
        ),
        (
            ("--member", "2"),
            f"horde-tui: refused: member-2 of run {RUN} has no transcript (sessions/member-2/ "
            "holds none: it never started), so there is no session to carry on",
        ),
    ],
)
def test_resume_member_refuses_bad_members_in_one_line(
    in_dir: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], line: str
) -> None:
    run = RunDir(in_dir / ".horde", RUN)
    run.event(0, "run-start", members=3)
    run.message("member-1", "20260102T120002-aaaaaa", role="system", content="s")
    run.event(9, "run-end", outcome="finished")
    events = (run.path / "events.jsonl").read_text()
    assert one_line_refusal(capsys, "resume", RUN, *argv, code=2) == line
    assert (run.path / "events.jsonl").read_text() == events, "nothing was started"


def test_resume_member_needs_a_run(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line_refusal(capsys, "resume", "--member", "member-1", code=2) == (
        "horde-tui: refused: --member goes with a run id: `horde-tui resume RUN --member "
        "member-N` (`horde-tui runs` lists the runs)"
    )


def test_help_resume_lists_member(in_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "resume"]) == 0
    assert "--member member-N" in capsys.readouterr().out


def test_resume_member_of_a_swarm_is_refused_in_one_line(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A swarm id names no one run; a horde's run whose swarm host is gone is carried on
    with its swarm (`resume SWARM`), not one member alone."""
    from support.swarm_scene import SWARM_ID, horde_run, write_swarm

    swarm_dir = write_swarm(in_dir / ".horde", state="interrupted", parent_pid=2**22 + 1)
    run = horde_run(swarm_dir, "h2")
    run.message("member-1", "20260102T120002-aaaaaa", role="system", content="s")
    assert one_line_refusal(capsys, "resume", SWARM_ID, "--member", "member-1", code=2) == (
        f"horde-tui: refused: {SWARM_ID} is a swarm and --member carries on a member of one "
        f"run; carry the swarm on with `horde-tui resume {SWARM_ID}`"
    )
    assert one_line_refusal(capsys, "resume", f"{SWARM_ID}-h2", "--member", "member-1") == (
        f"horde-tui: refused: run {SWARM_ID}-h2 is a horde of swarm {SWARM_ID}, whose host is "
        f"gone; carry the swarm on with `horde-tui resume {SWARM_ID}` (--member reaches a "
        "live horde only)"
    )
