"""The run screen's cost line (issue 19 item 3): what the run has spent, what each finding
and each accepted finding cost so far, and the forecast once the canary passed.

The app test hosts the scripted `FakeSupervisor` (its members' usage on their status
lines, as a real member reports it) over a `.horde/` written through the real `horde`
tool, so the findings and the review that accepts one are the ledger's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Horde
from support.app import RUN_ID, FakeSupervisor, deterministic_app, wait_for
from textual.widgets import Static

from horde_tui.screens.cost import cost_text
from horde_tui.store.asks import AskRecord, AsksCost, append_ask, asks_path
from horde_tui.store.members import MemberState
from horde_tui.supervisor.forecast import Forecast, Spend


def member(name: str, prompt: int, completion: int, cost: float | None) -> MemberState:
    state = MemberState(name, "member")
    state.prompt_tokens, state.completion_tokens, state.cost_usd = prompt, completion, cost
    return state


TWO = [member("member-1", 2400, 600, 0.03), member("member-2", 800, 200, 0.01)]


def test_the_spend_is_divided_by_the_findings_and_the_accepted_ones() -> None:
    assert cost_text(Spend.of(TWO, 4, 1), None) == (
        "spent $0.0400, 4.0k tok · per accepted (1): $0.0400, 4.0k tok · "
        "per finding (4): $0.0100, 1.0k tok"
    )


def test_nothing_to_divide_by_is_said_not_divided() -> None:
    assert cost_text(Spend.of(TWO, 0, 0), None) == "spent $0.0400, 4.0k tok · no findings yet"
    assert cost_text(Spend.of(TWO, 2, 0), None) == (
        "spent $0.0400, 4.0k tok · none accepted yet · per finding (2): $0.0200, 2.0k tok"
    )


def test_an_unpriced_member_makes_the_cost_unknown_but_still_counts_tokens() -> None:
    unpriced = [*TWO, member("member-3", 1000, 0, None)]
    assert cost_text(Spend.of(unpriced, 1, 1), None) == (
        "spent unknown, 5.0k tok · per accepted (1): unknown, 5.0k tok · "
        "per finding (1): unknown, 5.0k tok"
    )


def test_the_forecast_follows_with_its_horizon() -> None:
    forecast = Forecast(2, 0.5, 3000, 0.03, deadline_min=60)
    assert cost_text(Spend.of(TWO[:1], 0, 0), forecast) == (
        "spent $0.0300, 3.0k tok · no findings yet · forecast: $1.20, 120.0k tok per "
        "10 min; $7.20 by the 60-minute deadline"
    )
    unpriced = Forecast(4, 1.0, 500, None, budget_usd=2.0)
    assert cost_text(Spend.of(TWO, 0, 0), unpriced).endswith(
        "· forecast: unknown, 20.0k tok per 10 min"
    )


def cost_line(app: Any) -> str:
    return str(app.screen.query_one("#run-cost", Static).render())


async def test_the_cost_line_follows_the_run_live(tmp_path: Path) -> None:
    """Spend, then the forecast event, then a finding filed through the tool (none
    accepted yet), then another member's review accepts it: the line follows each."""
    fake = FakeSupervisor(tmp_path, count=2)
    horde = Horde(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(200, 30)) as pilot:
        fake.emit("run-start", at=0, members=2, model=fake.settings.gateway.model)
        fake.emit("phase-start", at=1, phase="discovery")
        fake.spawn("member-1", at=2)
        fake.answer("member-1", 5, (2400, 600), 0.03, "horde", {"action": "idea"})
        await wait_for(pilot, lambda: cost_line(app) == "spent $0.0300, 3.0k tok · no findings yet")

        fake.emit("forecast", at=6, **Forecast(2, 0.5, 3000, 0.03, deadline_min=60).as_event())
        await wait_for(pilot, lambda: "forecast: $1.20, 120.0k tok per 10 min" in cost_line(app))

        idea = horde("member-1", "idea", run=RUN_ID, text="Check app.py for a password").id
        assert horde("member-1", "claim", run=RUN_ID, id=idea).ok
        filed = horde(
            "member-1",
            "finding",
            run=RUN_ID,
            text="app.py hard-codes the password",
            evidence="app.py:1",
            concern="secrets",
            concernDef="secrets in source",
        )
        assert filed.id == "F1", filed.text
        fake.result("member-1", 7, "horde")
        await wait_for(
            pilot,
            lambda: cost_line(app).startswith(
                "spent $0.0300, 3.0k tok · none accepted yet · per finding (1): $0.0300, 3.0k tok"
            ),
        )

        fake.spawn("member-2", at=8)
        fake.answer("member-2", 9, (800, 200), 0.01, "horde", {"action": "review"})
        review = horde(
            "member-2",
            "review",
            run=RUN_ID,
            target="F1",
            verdict="supports",
            support="tested",
            checked="app.py line 1 assigns the literal password",
            evidence="app.py:1",
        )
        assert review.ok, review.text
        fake.result("member-2", 10, "horde")
        await wait_for(
            pilot,
            lambda: cost_line(app).startswith(
                "spent $0.0400, 4.0k tok · per accepted (1): $0.0400, 4.0k tok · "
                "per finding (1): $0.0400, 4.0k tok · forecast:"
            ),
        )


def test_the_asks_cost_is_said_apart_from_the_members_spend() -> None:
    asks = AsksCost(asks=3, cost_usd=0.0012, tokens=900)
    assert cost_text(Spend.of(TWO, 0, 0), None, asks=asks) == (
        "spent $0.0400, 4.0k tok · asks $0.0012 (3) · no findings yet"
    )
    none_yet = AsksCost(asks=0, cost_usd=0.0, tokens=0)
    assert cost_text(Spend.of(TWO, 0, 0), None, asks=none_yet) == (
        "spent $0.0400, 4.0k tok · no findings yet"
    )


async def test_the_cost_line_counts_the_asks_again_when_asks_jsonl_changes(
    tmp_path: Path,
) -> None:
    """An ask kept by another process (`horde-tui ask`): the watcher's batch names
    `asks.jsonl`, and the line counts it, apart from the members' spend."""
    fake = FakeSupervisor(tmp_path, count=1)
    app = deterministic_app(fake)
    async with app.run_test(size=(200, 30)) as pilot:
        fake.emit("run-start", at=0, members=1, model=fake.settings.gateway.model)
        fake.spawn("member-1", at=2)
        fake.answer("member-1", 5, (2400, 600), 0.03, "horde", {"action": "idea"})
        await wait_for(pilot, lambda: cost_line(app) == "spent $0.0300, 3.0k tok · no findings yet")
        append_ask(fake.run_dir, AskRecord("Why?", "Because.", cost_usd=0.0012))
        await app.files_changed({asks_path(fake.run_dir)})
        await wait_for(
            pilot,
            lambda: (
                cost_line(app) == "spent $0.0300, 3.0k tok · asks $0.0012 (1) · no findings yet"
            ),
        )
