"""Detaching a run the app hosts: the quit dialog's Detach hands the run to a detached
`horde-tui resume`, which carries the members' sessions on and finishes the run.

A real supervisor hosted by `HordeApp` under the pilot, real gateway and member
processes, the scripted stub model; the detached supervisor is a real process of its
own session, which the test watches through the run's files as `attach` does.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support.app import NOW, FakeSupervisor, deterministic_app, wait_for
from support.plans import HeldUntilReleased, lifecycle, settings
from support.processes import wait_until
from textual.widgets import Button

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.modals import ChoiceScreen
from horde_tui.store.runs import run_state, supervisor_pid
from horde_tui.store.store import HordeStore
from horde_tui.stubmodel import StubThread
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest
from horde_tui.view.source import AttachedSource

SIZE = (120, 30)


@pytest.mark.slow  # a real run in the app (6-16 s): `pytest -m slow`
@pytest.mark.e2e
async def test_detach_hands_a_hosted_run_to_a_detached_supervisor(
    tmp_path: Path, fast_gateway: None
) -> None:
    (tmp_path / "app.py").write_text("PASSWORD = 'hunter2'\n")
    policy = HeldUntilReleased()
    with StubThread(policy=policy) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False)
        sup = Supervisor(tmp_path, RunRequest("Review app.py", 2), cfg)
        run_dir = sup.run_dir
        app = HordeApp(sup, config=AppConfig.deterministic(NOW))
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_for(pilot, lambda: len(policy.holding) == 2, 120)
                await pilot.press("q")
                await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
                assert not app.screen.query_one("#detach", Button).disabled
                await pilot.click("#detach")
                policy.released.set()  # the sessions carried on are not held
                await wait_for(pilot, lambda: not app.is_running, 120)
            assert app.return_value == 0
            assert app.handed_off is not None, "the app quit without handing the run off"
            assert f"horde-tui attach {run_dir.name}" in app.handed_off
            assert str(tmp_path) in app.handed_off, "attach works from the run's folder: named"
            pid = supervisor_pid(run_dir)
            assert pid is not None and pid != os.getpid()
            assert run_state(run_dir) == "active", "the run goes on after the app"
            source = AttachedSource(run_dir)
            source.poll()
            assert source.live and sorted(source.members) == ["member-1", "member-2"]
            source.close()
            assert wait_until(lambda: (run_dir / "REPORT.md").is_file(), 180), "no report"
            assert wait_until(lambda: run_state(run_dir) == "finished", 30)
        finally:
            if run_state(run_dir) == "active" and (live := supervisor_pid(run_dir)):
                os.killpg(live, signal.SIGKILL)

    kinds = lifecycle(run_dir)
    handoff = kinds.index(("run-handoff", None))
    resume = kinds.index(("run-resume", None))
    assert handoff < resume < kinds.index(("run-end", None))
    records = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    exits = [r for r in records if r.get("kind") == "member-exit" and r.get("cause") == "handoff"]
    assert sorted(r["member"] for r in exits) == ["member-1", "member-2"]
    assert not [r for r in records if r.get("kind") == "member-reset"], "a handoff resets nobody"
    # The terminal that read the detach message may be gone (a hang-up): the run's own
    # events and the detached supervisor's log say where to re-attach.
    reattach = f"cd {tmp_path.resolve()} && horde-tui attach {run_dir.name}"
    detached = [r for r in records if r.get("kind") == "run-detached"]
    assert [r["reattach"] for r in detached] == [reattach]
    log = Path(detached[0]["log"])
    assert (
        log.parent == (tmp_path / ".horde").resolve()
        and f"re-attach: {reattach}" in log.read_text()
    )
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    assert sorted(store.state.findings) == ["F1", "F2"]
    report = (run_dir / "REPORT.md").read_text()
    assert "- Resumed: " in report and "partial" not in report


class FinalizingRun(FakeSupervisor):
    """A hosted run already writing its report: too late to hand off."""

    def handoff(self) -> str:
        self.calls.append(("handoff", "all"))
        return "refused: the run is finalizing (writing its report); it ends in moments"


async def test_detach_of_a_finalizing_run_quits_once_the_report_is_written(
    tmp_path: Path,
) -> None:
    fake = FinalizingRun(tmp_path, demo=False)
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.click("#detach")
        await wait_for(
            pilot,
            lambda: any(
                "quits once the report is written" in n.message for n in app._notifications
            ),
        )
        assert fake.calls == [("handoff", "all")] and app.is_running
        fake.finish()
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0 and app.handed_off is None


async def test_detach_of_the_demo_is_refused_in_one_line(tmp_path: Path) -> None:
    """The demo's model lives in this app and dies with it: a handed-off demo could only
    fail. The dialog greys Detach and says why; asked anyway (as a hang-up asks), the
    app refuses in one line and hands nothing off."""
    fake = FakeSupervisor(tmp_path)  # the demo
    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        assert app.screen.query_one("#detach", Button).disabled
        assert "demo" in str(app.screen.query_one(".dialog-detail").render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        app.quitting.detach_run()
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert said[-1].startswith("refused: the demo cannot be detached") and "\n" not in said[-1]
        assert ("handoff", "all") not in fake.calls and app.is_running
