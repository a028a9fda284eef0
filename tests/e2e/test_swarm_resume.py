"""`horde-tui resume SWARM`: a swarm whose host died is carried on by a new one.

The end-to-end test SIGKILLs a real headless swarm host while h1's member is mid-session
and h2 has not started (a long stagger), resumes the swarm from another "shell" and
checks it ends as a swarm does: h1's session carried on, h2 started, both reported,
the merged DELIVERABLE.md written, the resume on the timeline. The refusals run
in-process against hand-written swarms.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.app import NOW, wait_for
from support.cli import cli_argv, one_line_refusal, stub_env, wait_for_line
from support.plans import HeldUntilReleased, lifecycle, slow_worker
from support.processes import dead_pid, wait_until
from support.swarm_scene import SWARM_ID, FakeSwarm, write_swarm
from textual.widgets import Button

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.commands.cli import main
from horde_tui.common import prompts
from horde_tui.common.settings import Settings, load_settings
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.store.runs import read_swarm, swarm_info, swarm_state
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor

PARTITION = (
    "h1: Audit app.py for hard-coded secrets\n"
    "acceptance: every secret in app.py is filed with its line\n"
    "h2: Audit login() for timing attacks\n"
    "acceptance: the comparison in login() is classified with evidence\n"
)
MERGED = "# Swarm deliverable\n\n- The password is hard-coded [h1 F1: open] [h2 F1: open].\n"
PLANS: dict[str, list[dict[str, Any]]] = {
    "planner": [{"say": PARTITION}],
    "member-1": slow_worker("Check app.py line 1", "app.py:1 hard-codes a password", "secrets"),
    "synthesis": [{"say": "# Deliverable\n\nF1 holds."}],
    "merge": [{"say": MERGED}],
}


def swarm_policy() -> HeldUntilReleased:
    """Members' `list` replies held until released (see `HeldUntilReleased`), with the
    swarm helpers' plans."""
    policy = HeldUntilReleased()
    policy.agent = AgentPolicy(PLANS)
    return policy


def swarm_env(stub: StubThread) -> dict[str, str]:
    """A long stagger keeps h2 unstarted while h1 works; no post-mortems (time only)."""
    return stub_env(stub, HORDE_POSTMORTEM="false", HORDE_SWARM_STAGGER_MS="600000")


def assert_swarm_carried_on(swarm_dir: Path, after: list[Any]) -> dict[str, Any]:
    """The swarm ended normally after a resume: h1 carried its session on, h2 started
    there, both reported, the merge written; returns SWARM.json."""
    data = json.loads((swarm_dir / "SWARM.json").read_text())
    assert data["state"] == "finished", data
    assert data["outcome"] in ("completed", "solved"), data
    assert data["merge"] == "done" and sorted(data["runs"]) == ["h1", "h2"]
    kinds = [(t["kind"], t["horde"]) for t in data["timeline"]]
    resumed = kinds.index(("swarm-resume", None))
    assert kinds.index(("horde-start", "h1")) < resumed < kinds.index(("horde-start", "h2"))
    assert kinds.count(("planner-end", None)) == 1, "the recorded partition is reused"
    assert kinds[-1] == ("swarm-end", None)
    resume = next(t for t in data["timeline"] if t["kind"] == "swarm-resume")
    assert resume["horde"] is None
    for name in ("h1", "h2"):
        run_dir = swarm_dir / data["runs"][name]
        assert lifecycle(run_dir)[-1] == ("run-end", None)
        assert (run_dir / "DELIVERABLE.md").is_file()
    assert ("run-resume", None) in lifecycle(swarm_dir / data["runs"]["h1"])
    assert ("run-resume", None) not in lifecycle(swarm_dir / data["runs"]["h2"])
    carried = [
        r
        for r in after
        if r.member == "member-1" and r.body["messages"][-1]["content"] == prompts.RESUMED_NOTICE
    ]
    assert len(carried) == 1, "h1's member-1 did not carry its session on"
    report = (swarm_dir / "REPORT.md").read_text()
    assert "## h1: " in report and "## h2: " in report and "not started" not in report
    assert (swarm_dir / "DELIVERABLE.md").read_text().strip() == MERGED.strip()
    return data


@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
def test_a_sigkilled_swarm_host_is_resumed_and_the_swarm_finishes(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
    policy = swarm_policy()
    with StubThread(policy=policy) as stub:
        env = swarm_env(stub)
        host = subprocess.Popen(
            cli_argv("run", "--headless", "2/1", "Review app.py"),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for_line(host, "h1 [member-spawn] member-1", 90)
            assert wait_until(lambda: "member-1" in policy.holding, 60), "h1 never got to work"
            os.kill(host.pid, signal.SIGKILL)
            host.wait(10)
            policy.released.set()
        finally:
            if host.poll() is None:
                host.kill()
        swarm_dir = next((tmp_path / ".horde" / "swarms").iterdir())
        info = swarm_info(swarm_dir)
        assert swarm_state(info) == "interrupted"
        assert [h for h, _ in info.runs] == ["h1"], "h2 must not have started yet"
        before = len(stub.stub.requests)
        resumed = subprocess.run(
            cli_argv("resume", swarm_dir.name, "--headless"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        after = stub.stub.requests[before:]
    out = resumed.stdout
    assert resumed.returncode in (0, 3), out[-3000:] + resumed.stderr[-3000:]  # completed, solved
    assert f"swarm {swarm_dir.name} resumed: 0 hordes ended, 1 carried on" in out
    data = assert_swarm_carried_on(swarm_dir, after)
    assert data["parent_pid"] not in (host.pid, os.getpid())
    assert not any(r.member == "planner" for r in after), "the planner did not run again"


def test_resume_refuses_a_live_an_ended_and_an_unknown_swarm(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    horde_dir = in_dir / ".horde"
    write_swarm(horde_dir, state="active")
    assert one_line_refusal(capsys, "resume", SWARM_ID) == (
        f"horde-tui: refused: swarm {SWARM_ID} is live (host pid {os.getpid()}); only a swarm "
        "whose host is gone can be resumed; watch it with `horde-tui status`"
    )
    swarm_dir = write_swarm(horde_dir, state="finished", outcome="completed")
    assert one_line_refusal(capsys, "resume", SWARM_ID) == (
        f"horde-tui: refused: swarm {SWARM_ID} already ended (completed); its report is "
        f"{swarm_dir / 'REPORT.md'}; start a new swarm instead"
    )
    assert main(["resume", "20991231-235959-zzzz"]) == 2  # bad usage
    assert capsys.readouterr().err == (
        f"horde-tui resume: no run or swarm named 20991231-235959-zzzz in {horde_dir} "
        f"(newest: {SWARM_ID}); `horde-tui runs` lists them\n"
    )
    assert json.loads((swarm_dir / "SWARM.json").read_text())["state"] == "finished"


def test_resume_refuses_a_malformed_swarm_json_in_one_line(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SWARM.json whose partition is not the contract's (its host gone, its settings
    there) is refused by the one SWARM.json parser, not read into a traceback."""
    swarm_dir = write_swarm(in_dir / ".horde", state="active", parent_pid=dead_pid())
    (swarm_dir / "CONFIG.json").write_text('{"request": {}, "config": {}}\n')
    data = json.loads((swarm_dir / "SWARM.json").read_text())
    (swarm_dir / "SWARM.json").write_text(json.dumps({**data, "partition": ["h1: api"]}))
    line = one_line_refusal(capsys, "resume", SWARM_ID)
    assert line.startswith(f"horde-tui: refused: {swarm_dir / 'SWARM.json'} "), line
    assert "`partition`" in line, line


@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
async def test_detach_hands_a_hosted_swarm_to_a_detached_resume_that_finishes_it(
    tmp_path: Path, fast_gateway: None
) -> None:
    (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
    policy = swarm_policy()
    with StubThread(policy=policy) as stub:
        env = {"HORDE_MODEL": stub.model, "HORDE_API_BASE": stub.api_base, "HORDE_API_KEY": "stub"}
        overrides = {"postmortem": False, "swarm_stagger_ms": 600_000, "active_grace_ms": 300}
        cfg = load_settings(environ=env, overrides=overrides)
        swarm = SwarmSupervisor(tmp_path, RunRequest("Review app.py", 1), cfg, 2)
        swarm_dir = swarm.swarm_dir

        def finished() -> bool:
            info = read_swarm(swarm_dir)
            return info is not None and info.state == "finished"

        app = HordeApp(
            horde_dir=tmp_path / ".horde", swarm=swarm, config=AppConfig.deterministic(NOW)
        )
        try:
            async with app.run_test(size=(120, 30)) as pilot:
                await wait_for(pilot, lambda: "member-1" in policy.holding, 120)
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
                assert not app.screen.query_one("#detach", Button).disabled
                before = len(stub.stub.requests)
                await pilot.click("#detach")
                policy.released.set()  # the session carried on is not held
                await wait_for(pilot, lambda: not app.is_running, 120)
            assert app.return_value == 0
            assert app.handed_off is not None, "the app quit without handing the swarm off"
            assert f"swarm {swarm.swarm_id} goes on in the background" in app.handed_off
            assert f"horde-tui attach {swarm.swarm_id}-h2" in app.handed_off
            info = swarm_info(swarm_dir)
            assert info.parent_pid != os.getpid()
            assert swarm_state(info) == "active", "the swarm goes on after the app"
            assert wait_until(finished, 240), "the detached resume did not finish the swarm"
            after = stub.stub.requests[before:]
        finally:
            info = read_swarm(swarm_dir)
            host = info.parent_pid if info is not None else None
            if host is not None and host != os.getpid() and not finished():
                os.killpg(host, signal.SIGKILL)
    data = assert_swarm_carried_on(swarm_dir, after)
    kinds = [t["kind"] for t in data["timeline"]]
    assert kinds.index("swarm-handoff") < kinds.index("swarm-resume")
    h1 = lifecycle(swarm_dir / data["runs"]["h1"])
    assert h1.index(("run-handoff", None)) < h1.index(("run-resume", None))


class MergingSwarm(FakeSwarm):
    """A hosted swarm already merging its hordes' deliverables: too late to hand off."""

    def handoff(self) -> str:
        self.calls.append(("handoff", "all"))
        return "refused: the swarm is merging (writing its deliverable); it ends in moments"


async def test_detach_of_a_merging_swarm_says_so_and_quits_once_it_has_ended(
    tmp_path: Path,
) -> None:
    settings = Settings(model="openai/stub")
    fake = MergingSwarm(tmp_path, RunRequest("Audit the web app", 3), settings, 2)
    app = HordeApp(horde_dir=tmp_path / ".horde", config=AppConfig.deterministic(NOW), swarm=fake)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.swarm_live and fake.sink is not None)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#detach")
        await wait_for(
            pilot,
            lambda: any("the swarm is merging" in n.message for n in app._notifications),
        )
        assert fake.calls == [("handoff", "all")] and app.is_running
        fake.finish()
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 130 and app.handed_off is None
