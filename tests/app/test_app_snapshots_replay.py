"""Snapshot of the replay screen (`horde-tui replay`) at a fixed event: the ledger scene
after its first review, on the Findings tab. Same conventions as the other snapshot
modules (`support.snapshots`); update with `--snapshot-update -k replay` and look."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.app import wait_for
from support.replay_scene import app_on, ended_scene, events_of, first
from support.snapshots import SIZES, snapshots_under_tests  # noqa: F401 (fixture)

from horde_tui.screens.panes import LedgerPane


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    return ended_scene(tmp_path)


@SIZES
def test_replay_screen(snap_compare: Any, scene: Path, size: tuple[int, int]) -> None:
    review = first(events_of(scene), type="outcome", action="review")

    async def findings_tab(pilot: Any) -> None:
        await pilot.press("3")
        pane = pilot.app.screen.query_one("#findings LedgerPane", LedgerPane)
        await wait_for(pilot, lambda: pane._rows is not None and pane.table.row_count == 3)

    app = app_on(scene, f"E{review}")
    assert snap_compare(app, terminal_size=size, run_before=findings_tab)
