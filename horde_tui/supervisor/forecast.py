"""What a run will cost, said before it fans out, and what each finding cost after.

Peers show a cost without saying what it bought or where it is heading. After the
canary, member-1's first minutes are the only measurement there is: its tokens and
cost per minute since it started, times the member count, give the expected spend per
10 minutes and, when the run has a deadline (`max_minutes`) or a budget
(`max_cost_usd`), for the whole run or how long the budget lasts. It is an event
(`forecast`), so the app, headless output and the report read it alike; REPORT.md sets
it beside what was spent, and divides the spend by the findings it bought.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from horde_tui.store.acceptance import acceptance
from horde_tui.store.display import format_cost
from horde_tui.store.members import MemberState
from horde_tui.store.state import LedgerState
from horde_tui.supervisor.summary import tokens, total_cost


@dataclass(frozen=True)
class Forecast:
    members: int
    canary_minutes: float
    """How long the canary had run when it was measured (at least a second)."""
    canary_tokens: int
    canary_cost_usd: float | None
    """None when the provider gave no price."""
    deadline_min: float | None = None
    budget_usd: float | None = None

    @property
    def tokens_per_min(self) -> float:
        """One member's, at the canary's pace."""
        return self.canary_tokens / self.canary_minutes

    @property
    def cost_per_min(self) -> float | None:
        return None if self.canary_cost_usd is None else self.canary_cost_usd / self.canary_minutes

    def per_10_min(self) -> tuple[float, float | None]:
        """The whole run's tokens and cost in 10 minutes at the canary's pace."""
        cost = None if self.cost_per_min is None else self.cost_per_min * self.members * 10
        return self.tokens_per_min * self.members * 10, cost

    def horizon(self) -> str:
        """The deadline's expected spend, or how long the budget lasts ('' if neither)."""
        per_min = None if self.cost_per_min is None else self.cost_per_min * self.members
        if self.budget_usd is not None and per_min:
            minutes = self.budget_usd / per_min
            return f"the {format_cost(self.budget_usd)} budget lasts about {minutes:,.0f} min"
        if self.deadline_min is not None:
            cost = (
                "an unknown cost" if per_min is None else format_cost(per_min * self.deadline_min)
            )
            return f"{cost} by the {self.deadline_min:g}-minute deadline"
        return ""

    def text(self) -> str:
        toks, cost = self.per_10_min()
        line = (
            f"{format_cost(cost)} and {toks:,.0f} tokens per 10 min for {self.members} "
            f"member{'s' if self.members != 1 else ''} at the canary's pace"
        )
        horizon = self.horizon()
        return f"{line}; {horizon}" if horizon else line

    def as_event(self) -> dict[str, Any]:
        return {
            "members": self.members,
            "canary_minutes": self.canary_minutes,
            "canary_tokens": self.canary_tokens,
            "canary_cost_usd": self.canary_cost_usd,
            "deadline_min": self.deadline_min,
            "budget_usd": self.budget_usd,
            "text": self.text(),
        }

    @classmethod
    def from_event(cls, ev: dict[str, Any]) -> Forecast:
        cost = ev.get("canary_cost_usd")
        return cls(
            int(ev["members"]),
            float(ev["canary_minutes"]),
            int(ev["canary_tokens"]),
            None if cost is None else float(cost),
            ev.get("deadline_min"),
            ev.get("budget_usd"),
        )


def canary_forecast(
    canary: MemberState,
    members: int,
    now: float,
    deadline_min: float | None,
    budget_usd: float | None,
) -> Forecast:
    """The forecast from the canary's spend since it started (at least a second of it)."""
    minutes = max(now - (canary.started or now), 1.0) / 60
    return Forecast(members, minutes, tokens(canary), canary.cost_usd, deadline_min, budget_usd)


def finding_yield(state: LedgerState, run: str) -> tuple[int, int]:
    """(this run's current findings, how many of them are accepted): what the spend
    bought, counted alike by REPORT.md and the run screen's cost line."""
    found = [f for f in state.findings.values() if f.run == run and not f.superseded_by]
    accepted = sum(1 for f in found if acceptance(state, f.id).state.startswith("accepted"))
    return len(found), accepted


@dataclass(frozen=True)
class Spend:
    """What a run has spent and what it bought: the one division REPORT.md and the run
    screen's cost line share."""

    cost_usd: float | None
    """None when a provider gave no price for some call."""
    tokens: int
    findings: int
    accepted: int

    @classmethod
    def of(cls, members: Iterable[MemberState], findings: int, accepted: int) -> Spend:
        spent = list(members)
        return cls(total_cost(spent), sum(tokens(m) for m in spent), findings, accepted)

    def each(self, n: int) -> tuple[float | None, float] | None:
        """(cost, tokens) for each of `n` things bought; None when there is none (the
        reader is told so rather than shown a division by zero)."""
        if not n:
            return None
        return (None if self.cost_usd is None else self.cost_usd / n), self.tokens / n


def spend_lines(
    members: list[MemberState],
    minutes: float,
    findings: int,
    accepted: int,
    forecast: Forecast | None,
) -> list[str]:
    """REPORT.md's cost lines: the spend, per finding and per accepted finding, and the
    forecast beside the pace the run really kept."""
    spend = Spend.of(members, findings, accepted)
    cost, toks = spend.cost_usd, spend.tokens

    def per(n: int, none: str) -> str:
        each = spend.each(n)
        if each is None:
            return none
        return f"{format_cost(each[0])} and {each[1]:,.0f} tokens each"

    lines = [
        f"- Cost: {format_cost(cost)}, {toks:,} tokens · per finding ({findings}): "
        f"{per(findings, 'none filed')} · per accepted finding ({accepted}): "
        f"{per(accepted, 'none accepted')}"
    ]
    if forecast is not None:
        pace = toks / minutes * 10 if minutes > 0 else 0.0
        pace_cost = None if cost is None or minutes <= 0 else cost / minutes * 10
        lines.append(
            f"- Forecast after the canary: {forecast.text()}; spent {format_cost(pace_cost)} and "
            f"{pace:,.0f} tokens per 10 min over {minutes:,.1f} min"
        )
    return lines
