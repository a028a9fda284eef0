"""The run screen's state line (phase, canary, clean-stop countdown) and the runs list's
files column, on real run directories: a hosted run scripted through `FakeSupervisor`
(whose lifecycle lands in the run's events.jsonl), and an attached run whose events the
app reads back from disk."""

from __future__ import annotations

import os
from pathlib import Path

from support.app import FakeSupervisor, deterministic_app, wait_for
from support.rundir import EPOCH_0, RunDir
from textual.widgets import DataTable, Static

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.run import RunScreen
from horde_tui.screens.runs import RunsScreen

SIZE = (120, 30)


def status(app: HordeApp) -> str:
    screen = app.run_screen
    assert screen is not None
    return str(screen.query_one("#run-status", Static).render())


async def test_hosted_run_shows_canary_countdown_and_synthesizing(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path, count=3)
    app = deterministic_app(fake)  # the clock is frozen at 200 s into the run
    async with app.run_test(size=SIZE) as pilot:
        fake.emit("run-start", at=0, members=3, model=fake.settings.gateway.model)
        fake.emit("phase-start", at=1, phase="discovery")
        fake.spawn("member-1", at=2)
        await wait_for(pilot, lambda: "canary: member-1 alone until it answers" in status(app))
        fake.emit("canary", "member-1", at=20, result="ok")
        fake.spawn("member-2", at=21)
        fake.spawn("member-3", at=21)
        # A first-try ok leaves the line: it would say only that the run is running.
        await wait_for(pilot, lambda: status(app) == "discovery · 3 members: 3 running")

        fake.stop_clean(grace_s=90)  # at 195 s: 85 s of the 90 s grace are left at 200 s
        await wait_for(pilot, lambda: "stopping clean (stopped by user): 1:25 left" in status(app))
        fake.emit("stop-extended", at=199, reason="active output", grace_s=15)
        await wait_for(pilot, lambda: "stopping clean (stopped by user): 0:14 left" in status(app))

        fake.emit("phase-start", at=196, phase="finalize")
        await wait_for(pilot, lambda: status(app).startswith("finalize · "))
        assert "left" not in status(app), "the grace is over once finalize starts"
        fake.emit("phase-start", at=197, phase="deliverable")
        await wait_for(pilot, lambda: status(app).startswith("synthesizing: deliverable · "))
        fake.emit("phase-end", at=198, phase="deliverable", cause="completed")
        await wait_for(pilot, lambda: status(app).startswith("synthesizing · "))
        fake.emit("phase-start", at=198, phase="post-mortem")
        await wait_for(pilot, lambda: status(app).startswith("synthesizing: post-mortem · "))
        fake.emit("phase-end", at=199, phase="post-mortem", cause="completed")
        await wait_for(pilot, lambda: status(app).startswith("synthesizing · "))
        fake.finish("stopped by user")
        await wait_for(pilot, lambda: status(app).startswith("ended: stopped by user"))
        assert "left" not in status(app)


async def test_attached_run_reads_canary_retry_and_countdown_from_disk(tmp_path: Path) -> None:
    run = RunDir(tmp_path / ".horde", "20260102-120000-aaaa")
    run.event(0, "run-start", members=3, model="openai/stub")
    run.event(1, "phase-start", phase="discovery")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=os.getpid())
    run.event(9, "member-exit", "member-1", cause="model_error", detail="500", canary=True)
    run.event(10, "member-spawn", "member-1", attempt=2, pid=os.getpid())
    run.live(os.getpid())
    app = HordeApp(attach=run.path, config=AppConfig.deterministic(EPOCH_0 + 60))
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunScreen)
        await wait_for(pilot, lambda: "canary: member-1 retrying (0:50)" in status(app))
        run.event(12, "canary", "member-1", result="ok after a retry")
        run.event(13, "member-spawn", "member-2", attempt=1, pid=os.getpid())
        run.event(13, "member-spawn", "member-3", attempt=1, pid=os.getpid())
        await wait_for(pilot, lambda: "canary ok after a retry" in status(app))
        run.event(30, "stop-clean", reason="stopped at deadline", grace_s=90)
        await wait_for(
            pilot, lambda: "stopping clean (stopped at deadline): 1:00 left" in status(app)
        )
        run.event(40, "stop-extended", reason="active output", grace_s=15)
        await wait_for(pilot, lambda: "grace over" in status(app))  # 55 s: already behind
        run.event(61, "phase-start", phase="finalize")
        run.event(62, "phase-start", phase="deliverable")
        await wait_for(pilot, lambda: status(app).startswith("synthesizing: deliverable"))


def runs_cells(app: HordeApp) -> dict[str, dict[str, str]]:
    table = app.screen.query_one("#runs", DataTable)
    keys = [c.key.value for c in table.ordered_columns]
    return {
        str(row.value): dict(zip(keys, (str(c) for c in table.get_row(row)), strict=True))
        for row in table.rows
    }


async def test_runs_list_has_a_files_present_column(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    done = RunDir(horde, "20260102-120000-aaaa")
    done.event(0, "run-start", members=3, model="openai/stub")
    done.event(9, "run-end", outcome="finished", diagnosis="every member finished")
    for name in ("REPORT.md", "SUMMARY.md", "DELIVERABLE.md", "GRAPH.md"):
        (done.path / name).write_text(f"# {name}\n")
    live = RunDir(horde, "20260102-120100-bbbb")
    live.event(10, "run-start", members=3, model="openai/stub")
    live.live(os.getpid())
    (live.path / "PLAN.md").write_text("# Plan\n")
    app = HordeApp(horde_dir=horde, config=AppConfig.deterministic(EPOCH_0 + 60))
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, RunsScreen)
        cells = runs_cells(app)
        assert cells[done.path.name]["files"] == "-RD--"
        assert cells[live.path.name]["files"] == "P----"
        detail = str(app.screen.query_one("#runs-detail", Static).render())
        assert "files: TASK PLAN" in detail  # the highlighted (newest) run, spelled out
        (done.path / "POSTMORTEM.md").write_text("# Post-mortem\n")
        (done.path / "ANSWER.md").write_text("# Answer\n")
        app.screen.poll()
        await wait_for(pilot, lambda: runs_cells(app)[done.path.name]["files"] == "-RDMA")
