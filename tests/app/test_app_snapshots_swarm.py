"""Snapshot tests of swarms in the app: the runs list with swarms, the swarm screen.

The conventions of `test_app_snapshots.py` (whose fixture keeps the SVGs under
`tests/app/snapshots/<module>/`): `AppConfig.deterministic` (a frozen clock, times in UTC,
no file watching, no ticks, no animation, no cursor blink), fixed sizes 120x36 and
80x24, over the fixture swarm of `swarm_scene` (every time in it is fixed). Update with
`pytest tests/app/test_app_snapshots_swarm.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.app import NOW, wait_for
from support.processes import dead_pid
from support.rundir import RunDir
from support.snapshots import SIZES, snapshots_under_tests  # noqa: F401 (fixture)
from support.swarm_scene import swarm_scene, write_swarm
from textual.pilot import Pilot
from textual.widgets import DataTable, Markdown

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.screens.swarm import SwarmScreen


def swarm_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HordeApp:
    """A finished run, the live 3/3 swarm and an interrupted 2/4 swarm, seen from the
    `.horde/`'s parent (paths are shown relative to it)."""
    monkeypatch.chdir(tmp_path)
    horde = tmp_path / ".horde"
    done = RunDir(horde, "20260102-120000-aaaa")
    done.event(0, "run-start", members=3, model="openai/stub")
    done.event(50, "run-end", outcome="solved", diagnosis="F1 verified")
    (done.path / "REPORT.md").write_text("# Report\n")
    swarm_scene(horde)
    write_swarm(
        horde,
        "20260102-110000-0b0b",
        parent_pid=dead_pid(),
        hordes=2,
        members=4,
        runs=(),
        started=1_767_351_600.0,
        prompt="Port the CLI to click",
    )
    return HordeApp(horde_dir=Path(".horde"), config=AppConfig.deterministic(NOW))


async def open_swarm_screen(pilot: Pilot[Any]) -> SwarmScreen:
    """Enter on the newest row (the live swarm); wait for its three hordes."""
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SwarmScreen))
    screen = pilot.app.screen
    assert isinstance(screen, SwarmScreen)
    await wait_for(pilot, lambda: len(screen.shown) == 3)  # rows painted
    return screen


@SIZES
def test_runs_list_with_swarms(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """Bare `horde-tui` with swarms beside a run. A reviewer should see the status line
    "1 runs and 2 swarms in .horde · 1 live", then newest first: the swarm
    20260102-121000-5a5a (active, 12:10, members "3/3", openai/stub, "Audit the web app
    for injection and auth bugs") under the cursor, the finished run (solved, 3), and
    the swarm 20260102-110000-0b0b "interrupted" (its host is gone) with "2/4"; a files
    column ("-R---" for the run's REPORT.md); under the table the selected swarm's
    detail line "... · 3 hordes of 3 members · ... · files: SWARM"."""
    app = swarm_app(tmp_path, monkeypatch)

    async def before(pilot: Pilot[Any]) -> None:
        table = pilot.app.screen.query_one("#runs", DataTable)
        await wait_for(pilot, lambda: table.row_count == 3)

    assert snap_compare(app, terminal_size=size, run_before=before)


@SIZES
def test_swarm_screen(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """Enter on the live swarm. A reviewer should see the horde tabs line "[all] 1:h1
    2:h2 3:h3 · enter or 1-4: a horde's run screen" in the primary colour, the status
    line "swarm 20260102-121000-5a5a · active · 3/3 · openai/stub · merge pending", one
    row per horde: h1 active (3 members, 1 finding, 1 accepted artifact, $0.5000, "SQL
    and shell injection ..."), h2 finished "completed" ($0.0000), h3 pending with "-"
    for findings, accepted and cost; the tabs "a Overview", "l Ledgers", "w SWARM", "o
    REPORT", "d DELIVERABLE" with the overview showing the prompt in bold, the state line, "Merge:
    pending", the partition table (horde, workstream, acceptance criterion, layers) and
    the timeline; a footer with p Pause, r Resume greyed (nothing paused), x Reset, s
    Stop and S Hard stop."""
    app = swarm_app(tmp_path, monkeypatch)

    async def before(pilot: Pilot[Any]) -> None:
        screen = await open_swarm_screen(pilot)
        overview = screen.query_one("#swarm-overview", Markdown)
        await wait_for(pilot, lambda: "## Timeline" in overview.source)

    assert snap_compare(app, terminal_size=size, run_before=before)


@SIZES
def test_swarm_ledgers_tab(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """`l` on the swarm screen: every horde's findings on one page. A reviewer should see
    "findings of every horde · v: next ledger (facts)", then the heading "h1 · SQL and
    shell injection ..." over a table with F1 (unreviewed, member-1, "SQL injection in
    build_query() via the name parameter"; the findings' own columns need 160), "h2 ·
    Authentication ..." with "No findings in h2
    yet.", and "h3 · Template injection ..." with "Not started yet."; the footer has v
    Ledger."""
    app = swarm_app(tmp_path, monkeypatch)

    async def before(pilot: Pilot[Any]) -> None:
        screen = await open_swarm_screen(pilot)
        await pilot.press("l")
        ledgers = screen.query_one("#swarm-ledgers", Markdown)
        await wait_for(pilot, lambda: "Not started yet." in ledgers.source)

    assert snap_compare(app, terminal_size=size, run_before=before)
