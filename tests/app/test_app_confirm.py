"""Confirm mode in the app: the queue of waiting commands on the run screen, `y` allow,
`n` refuse, `a` allow all from that member, and the badge on the member's row.

The app hosts a `FakeSupervisor`; the commands are real `bash` calls of member tools
(threads) asking through the run's real `control/` folder, and a real `ConfirmDesk`
serves it in the app's loop, as the supervisor does."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from support.app import FakeSupervisor, deterministic_app, wait_for
from textual.widgets import Static

from horde_tui.member.confirm import ConfirmGate
from horde_tui.member.tools import ToolOutput, WorkspaceTools
from horde_tui.supervisor.confirm import ConfirmDesk
from horde_tui.widgets.confirm_queue import ConfirmQueue
from horde_tui.widgets.member_table import MemberTable

SIZE = (110, 32)


def status(table: MemberTable, member: str) -> str:
    """The member's status cell ("" until its row is shown)."""
    try:
        return str(table.get_cell(member, "status")).strip()
    except KeyError:
        return ""


def ask(workdir: Path, run_dir: Path, member: str, command: str) -> list[ToolOutput]:
    """`command` run by `member`'s bash tool in confirm mode, in a thread."""
    tools = WorkspaceTools(workdir, confirm=ConfirmGate(run_dir, member))
    out: list[ToolOutput] = []
    threading.Thread(target=lambda: out.append(tools.bash(command)), daemon=True).start()
    return out


async def test_y_allows_n_refuses_a_allows_all_from_the_member(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path, count=3)
    events: list[tuple[str, str | None, dict[str, object]]] = []
    desk = ConfirmDesk(
        fake.run_dir,
        lambda kind, member=None, **data: events.append((kind, member, data)),
        lambda name, pid: True,
    )

    async def serve() -> None:
        while True:
            desk.serve()
            await asyncio.sleep(0.05)

    app = deterministic_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        serving = asyncio.create_task(serve())
        try:
            queue = app.query_one(ConfirmQueue)
            table = app.query_one(MemberTable)
            assert not queue.display, "hidden while nothing waits"

            allowed = ask(tmp_path, fake.run_dir, "member-1", "echo allowed-in-app")
            await wait_for(pilot, lambda: queue.members == {"member-1"})
            assert queue.display
            badge = str(app.query_one("#confirm-badge", Static).render())
            assert badge.startswith("1 command waits for approval · y allow")
            lines = str(app.query_one("#confirm-lines", Static).render())
            assert f"member-1: echo allowed-in-app  (in {tmp_path.resolve()})" in lines
            await wait_for(pilot, lambda: status(table, "member-1") == "approve?")
            await pilot.press("y")
            await wait_for(pilot, lambda: bool(allowed))
            assert allowed[0].ok and "allowed-in-app" in allowed[0].text
            await wait_for(pilot, lambda: status(table, "member-1") not in ("", "approve?"))
            await wait_for(pilot, lambda: not queue.display)

            refused = ask(tmp_path, fake.run_dir, "member-2", "touch refused-in-app")
            await wait_for(pilot, lambda: queue.members == {"member-2"})
            await pilot.press("n")
            await wait_for(pilot, lambda: bool(refused))
            assert refused[0].text.startswith("refused by the user: touch refused-in-app")
            assert not (tmp_path / "refused-in-app").exists()

            first = ask(tmp_path, fake.run_dir, "member-3", "echo first-of-three")
            await wait_for(pilot, lambda: queue.members == {"member-3"})
            await pilot.press("a")
            await wait_for(pilot, lambda: bool(first))
            assert first[0].ok
            later = ask(tmp_path, fake.run_dir, "member-3", "echo no-question-asked")
            await wait_for(pilot, lambda: bool(later))
            assert later[0].ok and "no-question-asked" in later[0].text
            await wait_for(pilot, lambda: not queue.display)
        finally:
            serving.cancel()
    decisions = [(m, d["decision"], d["by"]) for k, m, d in events if k == "confirm-decision"]
    assert decisions == [
        ("member-1", "allow", "control"),
        ("member-2", "refuse", "control"),
        ("member-3", "allow-all", "control"),
        ("member-3", "allow-all", "allow-all"),
    ]
