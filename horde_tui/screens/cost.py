"""The run screen's cost line: what the run has spent, what each finding and each
accepted finding cost so far, and, once the canary passed, the forecast.

Peers show a cost without saying what it bought (issue 19). The spend is the members'
usage as the table shows it (`RunSource.members`, a hosted run's and an attached one's
alike); the findings and the accepted ones are counted from the ledger by the one
function REPORT.md uses (`supervisor.forecast.finding_yield`), in a thread, after every
batch of events (a replay counts in parts, so a tab's reload never waits for the whole
count: `ReplayLedgers.finding_yield`); the forecast is the supervisor's `forecast`
event (`RunPhase`). The run's asks (issue 33) are counted apart, `asks $0.0012 (3)`,
from `asks.jsonl` (`store.asks.asks_cost`, in a thread) when the line mounts, when an
ask is kept and when the file changes: never after each batch of events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from rich.cells import cell_len

from horde_tui.screens.panes import LedgerSource
from horde_tui.store.asks import AsksCost, asks_cost
from horde_tui.store.display import format_cost, format_tokens
from horde_tui.store.members import MemberState
from horde_tui.supervisor.forecast import Forecast, Spend
from horde_tui.widgets.status_line import StatusLine


def _each(spend: Spend, what: str, n: int, none: str) -> str:
    each = spend.each(n)
    if each is None:
        return none
    return f"per {what} ({n}): {format_cost(each[0])}, {format_tokens(round(each[1]))} tok"


def cost_text(
    spend: Spend,
    forecast: Forecast | None,
    width: int | None = None,
    asks: AsksCost | None = None,
) -> str:
    """`spent $0.0400, 4.0k tok · asks $0.0012 (3) · per accepted (1): ... · per finding
    (4): ... · forecast: ...`; with nothing to divide by it says so (`no findings yet`,
    `none accepted yet`). The asks' cost is apart from the members' spend, and said only
    once there are asks. Given a `width` the line fits it: what says least goes first
    (the cost per finding, then the forecast's horizon, then what the findings cost or
    that there are none), so the forecast is never the part cut off."""
    spent = f"spent {format_cost(spend.cost_usd)}, {format_tokens(spend.tokens)} tok"
    if asks is not None and asks.asks:
        spent += f" · asks {format_cost(asks.cost_usd)} ({asks.asks})"
    accepted = per_finding = pace = horizon = ""
    if not spend.findings:
        accepted = "no findings yet"
    else:
        accepted = _each(spend, "accepted", spend.accepted, "none accepted yet")
        per_finding = _each(spend, "finding", spend.findings, "")
    if forecast is not None:
        toks, cost = forecast.per_10_min()
        pace = f"forecast: {format_cost(cost)}, {format_tokens(round(toks))} tok per 10 min"
        horizon = forecast.horizon()

    full = f"{pace}; {horizon}" if pace and horizon else pace
    shorter = (
        (spent, accepted, per_finding, full),
        (spent, accepted, pace),
        (spent, pace) if pace else (spent, accepted),
    )
    lines = [" · ".join(part for part in parts if part) for parts in shorter]
    fits = (text for text in lines if width is None or cell_len(text) <= width)
    return next(fits, lines[-1])


class CostLine(StatusLine):
    """The cost line under the run's status line; `show_cost` after each batch."""

    def __init__(
        self, ledgers: LedgerSource, run_dir: Path | None = None, *, id: str | None = None
    ) -> None:
        """`run_dir`: whose `asks.jsonl` to count (None: no asks to show)."""
        super().__init__(id=id)
        self.ledgers = ledgers
        self.run_dir = run_dir
        self.asks: AsksCost | None = None
        self.counts = (0, 0)
        """(findings, accepted) as last counted."""
        self._members: list[MemberState] = []
        self._forecast: Forecast | None = None
        self._counting = False
        self._again = False

    def on_mount(self) -> None:
        self.count_asks()

    def count_asks(self) -> None:
        """Recount the run's asks from `asks.jsonl` in a thread; repaint."""
        if self.run_dir is not None:
            self.run_worker(
                self._count_asks, group="cost-asks", exclusive=True, exit_on_error=False
            )

    async def _count_asks(self) -> None:
        assert self.run_dir is not None
        self.asks = await asyncio.to_thread(asks_cost, self.run_dir)
        self._paint()

    def show_cost(self, members: Iterable[MemberState], forecast: Forecast | None) -> None:
        """Repaint from the members' usage now; recount the ledger in a worker (one at a
        time: a batch that comes while one counts asks for one more count after it)."""
        self._members, self._forecast = list(members), forecast
        self._paint()
        if self._counting:
            self._again = True
            return
        self._counting = True
        self.run_worker(self._count, group="cost-count", exit_on_error=False)

    async def _count(self) -> None:
        try:
            while True:
                self._again = False
                self.counts = await self.ledgers.finding_yield()
                self._paint()
                if not self._again:
                    break
        finally:
            self._counting = False

    def _paint(self) -> None:
        width = self.content_region.width or None
        spend = Spend.of(self._members, *self.counts)
        self.show(cost_text(spend, self._forecast, width, self.asks))

    def on_resize(self) -> None:
        self._paint()
