"""`screenshots/` holds the snapshot tests' scenes, byte for byte (`python -m
horde_tui.commands.screenshots` copies them): a README picture never shows an unchecked screen."""

from __future__ import annotations

from pathlib import Path

from horde_tui.commands import screenshots


def test_scene_names_come_from_the_120x36_snapshots() -> None:
    assert screenshots.scene_name(Path("test_live_run_with_six_members[120x36].svg")) == (
        "live-run-with-six-members"
    )
    assert screenshots.scene_name(Path("test_report_screen[80x24].svg")) is None
    assert screenshots.scene_name(Path("test_board_tab.svg")) == "board-tab"


def test_every_120x36_snapshot_is_a_current_screenshot() -> None:
    snapshots = {
        name: svg for svg in screenshots.snapshot_svgs() if (name := screenshots.scene_name(svg))
    }
    shots = {p.stem: p for p in screenshots.OUT.glob("*.svg")}
    assert snapshots, "no snapshots found"
    assert set(shots) == set(snapshots), "run: python -m horde_tui.commands.screenshots"
    for name, svg in snapshots.items():
        assert shots[name].read_bytes() == svg.read_bytes(), (
            f"screenshots/{name}.svg is stale: python -m horde_tui.commands.screenshots"
        )
