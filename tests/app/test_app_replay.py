"""The replay screen (`horde-tui replay`): keys move the cursor, the tabs follow it,
nothing controls the run; the command refuses a run it cannot replay in one line.

The run is the ledger scene written through the real `horde` tool (`support.replay_scene`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import RUN_ID, wait_for
from support.replay_scene import app_on, ended_scene, events_of, first

from horde_tui.commands.cli import main
from horde_tui.screens.panes import GraphPane, LedgerPane
from horde_tui.screens.replay import ReplayScreen
from horde_tui.store.timestamps import epoch
from horde_tui.view.replay import Replay
from horde_tui.widgets.member_table import MemberTable
from horde_tui.widgets.swimlane import Swimlane


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ended_scene(tmp_path_factory.mktemp("replay-app"))


async def test_keys_move_the_cursor_and_the_tabs_follow(scene: Path) -> None:
    events = events_of(scene)
    finding = first(events, type="outcome", action="finding")
    app = app_on(scene, f"E{finding - 1}")
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        replay: Replay = screen.replay
        assert replay.cursor().number == finding - 1
        await pilot.press("3")  # the Findings tab, at the cursor: none filed yet
        pane = screen.query_one("#findings LedgerPane", LedgerPane)
        await wait_for(pilot, lambda: pane._rows is not None)
        assert pane.table.row_count == 0
        await pilot.press("escape", "full_stop")  # one event on: the finding's answer
        await wait_for(pilot, lambda: pane.table.row_count == 1)
        assert replay.cursor().number == finding
        status = str(screen.query_one("#run-status").render())
        assert status.startswith(f"replay E{finding} · ") and "member-1 finding created" in status
        assert f"{replay.at}/{replay.total}" in status
        await pilot.press("comma")  # and back
        await wait_for(pilot, lambda: pane.table.row_count == 0)
        await pilot.press("right_curly_bracket", "right_curly_bracket")  # the second finding
        findings = [
            int(str(e["id"])[1:])
            for e in events
            if e.get("type") == "outcome" and e.get("action") == "finding"
        ]
        assert replay.cursor().number == findings[1]
        await wait_for(pilot, lambda: pane.table.row_count == 2)
        await pilot.press("left_curly_bracket")
        assert replay.cursor().number == findings[0]
        await pilot.press("right_parenthesis")  # the refused claim
        refused = first(events, type="outcome", ok=False)
        assert replay.cursor().number == refused
        await pilot.press("left_parenthesis")  # no refusal before it: the cursor stays
        assert replay.cursor().number == refused
        await pilot.press("less_than_sign")  # the write before: the seq goes down
        seqs = replay.events.seqs
        wrote = replay.at  # the last event before the refusal that changed the ledger
        assert wrote < refused and seqs[wrote - 1] > seqs[wrote - 2]
        assert seqs[wrote - 1] == seqs[refused - 1]
        await pilot.press("greater_than_sign")  # the next write, past the refusal
        assert replay.at > refused and seqs[replay.at - 1] > seqs[refused - 1]
        assert all(seqs[n - 1] == seqs[refused - 1] for n in range(refused, replay.at))
        # A minute: the last event at most 60 s before (after) the cursor's.
        times = [epoch(e["ts"]) or 0.0 for e in events]
        assert times == sorted(times) and times[-1] - times[0] > 60
        now = times[replay.at - 1]
        await pilot.press("left_square_bracket")
        assert replay.at == max(1, sum(t <= now - 60 for t in times))
        now = times[replay.at - 1]
        await pilot.press("right_square_bracket")
        assert replay.at == sum(t <= now + 60 for t in times)
        await pilot.press("g")
        assert replay.at == 1
        await pilot.press("G")
        assert replay.at == replay.total


async def test_members_and_graph_follow_the_cursor(scene: Path) -> None:
    events = events_of(scene)
    spawn3 = first(events, kind="member-spawn", member="member-3")
    app = app_on(scene, f"E{spawn3 - 1}")
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.screen.query_one(MemberTable)

        def status() -> str:
            return str(table.get_cell("member-3", "status")).strip()

        await wait_for(pilot, lambda: table.row_count == 3)
        assert status() == "pending"  # planned, not spawned yet
        await pilot.press("full_stop")
        await wait_for(pilot, lambda: status() == "running")
        await pilot.press("9")
        lane = app.screen.query_one(Swimlane)
        await wait_for(pilot, lambda: app.screen.query_one(GraphPane).has_class("-empty") is False)
        before = lane.layout_shown
        await pilot.press("escape", "G")
        await wait_for(pilot, lambda: lane.layout_shown is not before)
        assert sum(len(x.marks) for x in lane.layout_shown.lanes) > sum(
            len(x.marks) for x in before.lanes
        )


async def test_replay_controls_nothing(scene: Path) -> None:
    app = app_on(scene)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await pilot.pause()
        for action in ("pause", "resume", "reset", "stop_clean", "stop_hard"):
            assert screen.check_action(action, ()) is False, action
        assert (await screen.source.pause("all")).startswith("refused: a replay is read-only")
        await pilot.press("p", "s")  # nothing happens: no control screen, no notice
        assert app.screen is screen and not app._notifications


def test_replay_of_a_missing_run_is_refused_in_one_line(
    scene: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_DIR", str(scene))
    for argv, expected in (
        (["replay", "nosuch"], "horde-tui: refused: no run named nosuch in "),
        (["replay", RUN_ID, "--at", "E9999"], f"refused: run {RUN_ID} has no event E9999"),
        (["replay", RUN_ID, "--at", "soon"], "refused: --at 'soon' is not an event id"),
    ):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert expected in err


async def test_the_cost_line_says_what_was_spent_by_the_cursor(tmp_path: Path) -> None:
    """The spend at the cursor: the calls `usage.jsonl` records up to its time."""
    import json

    horde_dir = ended_scene(tmp_path)
    run_dir = horde_dir / "runs" / RUN_ID
    times = [epoch(e["ts"]) for e in events_of(horde_dir)]
    lines = [(times[0], 1000, 0.01), (times[-1], 3000, 0.02)]
    (run_dir / "usage.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "ts": ts,
                    "member": "member-1",
                    "prompt_tokens": tok,
                    "completion_tokens": 0,
                    "cost_usd": cost,
                }
            )
            + "\n"
            for ts, tok, cost in lines
        )
    )
    app = app_on(horde_dir, "E1")
    async with app.run_test(size=(120, 36)) as pilot:
        line = app.screen.query_one("#run-cost")
        await wait_for(pilot, lambda: "spent $0.0100, 1.0k tok" in str(line.render()))
        await pilot.press("G")  # the last event: both calls made
        await wait_for(pilot, lambda: "spent $0.0300, 4.0k tok" in str(line.render()))
        await pilot.press("g")
        await wait_for(pilot, lambda: "spent $0.0100, 1.0k tok" in str(line.render()))
