"""Confirm mode on the swarm screen: the commands waiting in every live horde in one
queue, `y` allow, `n` refuse, `a` allow all from that horde's member (and `a` still the
overview tab while nothing waits).

The swarm is a fixture directory of two live hordes, served as another process's swarm
is: a real `SwarmSupervisor` answers its own `control/` and routes each decision to the
horde the target names, whose stand-in decides it on a real `ConfirmDesk` over the
horde's run directory. The commands are real `bash` calls of member tools (threads)
asking through each horde's `control/`, as members do."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from support.app import NOW, wait_for
from support.swarm_scene import SWARM_ID, RecordingHorde, horde_run, write_swarm
from textual.widgets import DataTable, Static, TabbedContent

from horde_tui.app.app import AppConfig, HordeApp
from horde_tui.common.settings import Settings
from horde_tui.member.confirm import ConfirmGate
from horde_tui.member.tools import ToolOutput, WorkspaceTools
from horde_tui.protocol import controls
from horde_tui.screens.runs import RunsScreen
from horde_tui.screens.swarm import SwarmScreen
from horde_tui.supervisor.confirm import DECISIONS, ConfirmDesk
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor
from horde_tui.widgets.confirm_queue import ConfirmQueue

pytestmark = pytest.mark.usefixtures("no_horde_env")

SIZE = (140, 36)


class DeskHorde(RecordingHorde):
    """A horde's supervisor as far as confirm mode goes: its real desk decides."""

    def __init__(self, name: str, run_dir: Path) -> None:
        super().__init__(name)
        self.events: list[tuple[str, str | None, dict[str, Any]]] = []
        self.desk = ConfirmDesk(
            run_dir,
            lambda kind, member=None, **data: self.events.append((kind, member, data)),
            lambda member, pid: True,
        )

    def decide(self, action: str, target: str) -> str:
        self.calls.append((action, target))
        return self.desk.decide(target, DECISIONS[action], "control")

    def decisions(self) -> list[tuple[str | None, object]]:
        return [(m, d["decision"]) for k, m, d in self.events if k == "confirm-decision"]


def state_cells(screen: SwarmScreen) -> list[str]:
    table = screen.query_one("#hordes", DataTable)
    return [str(table.get_cell(k, "state")) for k in table.rows]


def ask(workdir: Path, run_dir: Path, member: str, command: str) -> list[ToolOutput]:
    """`command` run by `member`'s bash tool in confirm mode, in a thread."""
    tools = WorkspaceTools(workdir, confirm=ConfirmGate(run_dir, member))
    out: list[ToolOutput] = []
    threading.Thread(target=lambda: out.append(tools.bash(command)), daemon=True).start()
    return out


async def test_the_swarm_screen_queues_every_hordes_commands_and_y_n_a_decide(
    tmp_path: Path,
) -> None:
    horde = tmp_path / ".horde"
    swarm_dir = write_swarm(horde, hordes=2)
    runs = {}
    for name in ("h1", "h2"):
        run = horde_run(swarm_dir, name)
        run.event(0, "run-start", members=3, model="openai/stub")
        run.event(1, "phase-start", phase="discovery")
        run.live(os.getpid())
        runs[name] = run.path
    swarm = SwarmSupervisor(
        tmp_path, RunRequest("x", 3), Settings(model="openai/stub"), 2, swarm_id=SWARM_ID
    )
    h1, h2 = DeskHorde("h1", runs["h1"]), DeskHorde("h2", runs["h2"])
    swarm.hordes = {"h1": h1, "h2": h2}  # type: ignore[dict-item]

    async def serve_desks() -> None:
        while True:
            h1.desk.serve()
            h2.desk.serve()
            await asyncio.sleep(0.05)

    app = HordeApp(horde_dir=horde, config=AppConfig.deterministic(NOW))
    async with app.run_test(size=SIZE) as pilot:
        serving = [
            asyncio.create_task(controls.serve(swarm_dir, swarm, 0.02)),
            asyncio.create_task(serve_desks()),
        ]
        try:
            assert isinstance(app.screen, RunsScreen)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, SwarmScreen))
            screen = app.screen
            queue = screen.query_one(ConfirmQueue)
            assert not queue.display, "hidden while nothing waits"

            first = ask(tmp_path, runs["h1"], "member-1", "echo allowed-in-h1")
            await wait_for(pilot, lambda: len(queue.waiting) == 1)
            second = ask(tmp_path, runs["h2"], "member-2", "touch refused-in-h2")
            await wait_for(pilot, lambda: len(queue.waiting) == 2)
            assert queue.display
            badge = str(screen.query_one("#confirm-badge", Static).render())
            assert badge.startswith("2 commands wait for approval · y allow")
            # Each horde whose member waits says so in its row, as a member's row does.
            await wait_for(pilot, lambda: state_cells(screen) == ["approve?", "approve?"])
            lines = str(screen.query_one("#confirm-lines", Static).render()).splitlines()
            assert lines == [
                f"h1:member-1: echo allowed-in-h1  (in {tmp_path.resolve()})",
                f"h2:member-2: touch refused-in-h2  (in {tmp_path.resolve()})",
            ]

            await pilot.press("y")  # the oldest: h1's
            await wait_for(pilot, lambda: bool(first))
            assert first[0].ok and "allowed-in-h1" in first[0].text
            await wait_for(pilot, lambda: state_cells(screen) == ["active", "approve?"])
            await pilot.press("n")
            await wait_for(pilot, lambda: bool(second))
            assert second[0].text.startswith("refused by the user: touch refused-in-h2")
            assert not (tmp_path / "refused-in-h2").exists()
            await wait_for(pilot, lambda: not queue.display)

            third = ask(tmp_path, runs["h2"], "member-3", "echo first-of-member-3")
            await wait_for(pilot, lambda: len(queue.waiting) == 1)
            await pilot.press("a")
            await wait_for(pilot, lambda: bool(third))
            assert third[0].ok
            later = ask(tmp_path, runs["h2"], "member-3", "echo no-question-asked")
            await wait_for(pilot, lambda: bool(later))
            assert later[0].ok and "no-question-asked" in later[0].text

            # Nothing waits: `a` is the overview tab again.
            tabs = screen.query_one(TabbedContent)
            await pilot.press("l")
            await wait_for(pilot, lambda: tabs.active == "ledgers")
            await pilot.press("a")
            await wait_for(pilot, lambda: tabs.active == "overview")
        finally:
            for task in serving:
                task.cancel()
    assert h1.calls == [("approve", "member-1")]
    assert h2.calls == [("refuse", "member-2"), ("allow-all", "member-3")]
    assert h1.decisions() == [("member-1", "allow")]
    assert h2.decisions() == [
        ("member-2", "refuse"),
        ("member-3", "allow-all"),
        ("member-3", "allow-all"),
    ]
