"""The replay screen: the run screen on a finished run, as it was after event E#.

`horde-tui replay RUN` opens it (`horde_tui.app.replay`). It is the run screen with a time
cursor (`view.replay.Replay`): the member table, every ledger tab, the threads and the
graph show the run after the cursor's event, the status line says where the cursor is
(E#, its time, what it was, its position of the total). Keys move the cursor by one
event, one write (an event that changed the ledger), one minute, or to the next or
previous finding or refusal. Nothing here controls anything: the run is over, so the
pause, resume, reset and stop keys are hidden (`live` is False) and the source answers
any control with one line saying so. The Events tab shows the whole log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType

from horde_tui.screens.cost import CostLine
from horde_tui.screens.describe import member_tally
from horde_tui.screens.panes import GraphPane, LedgerSource
from horde_tui.screens.run import RunScreen
from horde_tui.store.display import MemberRow
from horde_tui.store.members import MemberState
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.view.replay import Replay, ReplayLedgerView, ReplaySwimlane
from horde_tui.widgets.confirm_queue import ConfirmQueue
from horde_tui.widgets.status_line import StatusLine

READ_ONLY = (
    "refused: a replay is read-only; the run is over (horde-tui fork RUN --at E# runs it again)"
)

MOVES = (
    # key, shown as, how, direction, footer label, what it does
    ("full_stop", ".", "event", 1, "Event", "one event on"),
    ("comma", ",", "event", -1, "Back", "one event back"),
    ("greater_than_sign", ">", "write", 1, "Write", "the next event that changed the ledger"),
    ("less_than_sign", "<", "write", -1, "Write back", "the previous event that changed it"),
    ("right_square_bracket", "]", "minute", 1, "+1 min", "a minute on"),
    ("left_square_bracket", "[", "minute", -1, "-1 min", "a minute back"),
    ("right_curly_bracket", "}", "finding", 1, "Finding", "the next finding filed"),
    ("left_curly_bracket", "{", "finding", -1, "Finding back", "the previous finding filed"),
    ("right_parenthesis", ")", "refusal", 1, "Refusal", "the next refused call"),
    ("left_parenthesis", "(", "refusal", -1, "Refusal back", "the previous refused call"),
)
"""The cursor's keys: by one event, one write, one minute, to a finding or a refusal."""


class ReplaySource:
    """A `view.source.RunSource` over a replay: its members at the cursor, no events
    to poll, and controls that refuse (the run is over)."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.run_dir = replay.run_dir
        self.run_id = replay.run_dir.name
        self._members: dict[str, MemberState] = {}
        self.refresh()

    def refresh(self) -> None:
        self._members = {state.name: state for state in self.replay.members()}

    @property
    def members(self) -> dict[str, MemberState]:
        return self._members

    @property
    def stop_reason(self) -> str | None:
        return None

    def poll(self) -> list[SupervisorEvent]:
        return []

    def close(self) -> None:
        self.replay.close()

    async def pause(self, target: str) -> str:
        return READ_ONLY

    async def resume(self, target: str) -> str:
        return READ_ONLY

    async def reset(self, target: str) -> str:
        return READ_ONLY

    async def stop_clean(self, target: str = "all") -> str:
        return READ_ONLY

    async def stop_hard(self, target: str = "all") -> str:
        return READ_ONLY


class ReplayLedgers(LedgerSource):
    """The ledger and Threads tabs' source, folded to the replay's cursor."""

    def __init__(self, replay: Replay) -> None:
        super().__init__(replay.horde_dir, replay.run_dir.name)
        self.view: ReplayLedgerView = ReplayLedgerView(replay, replay.run_dir.name)

    async def finding_yield(self) -> tuple[int, int]:
        """The cost line's count at the cursor, a part per hold of the lock: the lock
        is fair, so a tab's reload that asks for it meanwhile goes next instead of
        waiting for the whole count (`YieldTally`). A count the fold overtook starts
        again at the new cursor."""
        while True:
            async with self._lock:
                tally = await asyncio.to_thread(self.view.start_yield)
            while not tally.done:
                async with self._lock:
                    if not await asyncio.to_thread(self.view.count_part, tally):
                        break
            if tally.done:
                return tally.counts


class ReplayGraph(GraphPane):
    """The Graph tab at the replay's cursor."""

    def __init__(self, replay: Replay, members: list[tuple[str, str]]) -> None:
        super().__init__(replay.run_dir, members)
        self.view.close()
        self.view = ReplaySwimlane(replay)  # type: ignore[assignment]


class ReplayScreen(RunScreen):
    """The run screen with a time cursor (see the module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(
                key,
                f"move('{how}', {direction})",
                label,
                key_display=shown,
                id=f"{how}{direction:+d}",
                tooltip=what,
            )
            for key, shown, how, direction, label, what in MOVES
        ),
        Binding("g", "seek(1)", "First event", show=False, id="first-event"),
        Binding("G", "seek(0)", "Last event", show=False, id="last-event"),
    ]
    ask_in_footer_from = None  # the moves fill the footer; `a` works, F1 lists it

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.replay_source = ReplaySource(replay)
        super().__init__(self.replay_source)
        self.live = False

    def ledger_source(self, horde_dir: Path) -> LedgerSource:
        return ReplayLedgers(self.replay)

    def graph_pane(self) -> GraphPane:
        lanes = [(state.name, state.role) for state in self.source.members.values()]
        return ReplayGraph(self.replay, lanes)

    def refresh_table(self) -> None:
        """The member table at the cursor's time (elapsed times count to it)."""
        if not self._ready:
            return
        now = self.replay.cursor().time
        rows = [MemberRow.of(state, now) for state in self.source.members.values()]
        self.table.show(self.query_one(ConfirmQueue).badge(rows))

    def status_text(self) -> str:
        at = self.replay.cursor()
        when = self.horde_app.config.clock_text(at.time)
        what = f"{at.actor} {at.kind}".strip()
        tally = member_tally(self.source.members.values())
        return f"replay E{at.number} · {when} · {what} · {at.at}/{at.total} · {tally}"

    def show_status(self) -> None:
        if not self._ready:
            return
        self.query_one("#run-status", StatusLine).show(self.status_text())
        self.add_class("-ended")

    async def action_move(self, how: str, direction: int) -> None:
        """Move the cursor; say so when there is no such event that way."""
        if self.replay.step(how, direction):
            await self.show_cursor()
            return
        way = "after" if direction > 0 else "before"
        self.notify(f"no {how} {way} E{self.replay.cursor().number}", timeout=3)

    async def action_seek(self, at: int) -> None:
        """`g`: the first event; `G` (0): the last."""
        if self.replay.seek(at or self.replay.total):
            await self.show_cursor()

    async def show_cursor(self) -> None:
        """Repaint what the cursor moved: the members, the status, the visible tab."""
        self.replay_source.refresh()
        self.refresh_table()
        self.show_status()
        # The spend by the cursor's time (`Replay.members`); the forecast is the live
        # run's estimate, not a fact of the moment, so a replay leaves it out.
        self.query_one(CostLine).show_cost(self.source.members.values(), None)
        await self.reload_visible_tab()
