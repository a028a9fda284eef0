"""Token and cost accounting per member, appended to the run's `usage.jsonl`, and the budget.

A model litellm has no price for has an *unknown* cost: it is recorded as `null` and
reported as unknown, never as $0, so a budget is never believed to be safe when it is
not measurable.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class MemberUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_unknown_calls: int = 0


@dataclass
class Accounting:
    """One run's in-memory totals plus its durable `usage.jsonl` (one line per model
    call): a gateway keeps one for its own run and, shared, one per run that joined it."""

    path: Path | None
    max_cost_usd: float | None = None
    members: dict[str, MemberUsage] = field(default_factory=dict)
    budget_flag: Path | None = None
    """Touched once when the budget is reached, so the run's supervisor can stop clean."""

    @property
    def total_cost_usd(self) -> float:
        return sum(m.cost_usd for m in self.members.values())

    @property
    def budget_reached(self) -> bool:
        return self.max_cost_usd is not None and self.total_cost_usd >= self.max_cost_usd

    def budget_message(self) -> str:
        return (
            f"refused: the run's cost budget is reached (${self.total_cost_usd:.4f} of "
            f"${self.max_cost_usd:.4f}, HORDE_MAX_COST_USD); no further model calls; "
            "finish by stopping"
        )

    def record(
        self,
        member: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float | None,
        latency_ms: float,
        extra: dict[str, Any] | None = None,
    ) -> None:
        usage = self.members.setdefault(member, MemberUsage())
        usage.calls += 1
        usage.prompt_tokens += prompt_tokens
        usage.completion_tokens += completion_tokens
        if cost_usd is None:
            usage.cost_unknown_calls += 1
        else:
            usage.cost_usd += cost_usd
        if self.path is None:
            return
        line = {
            "ts": time.time(),
            "member": member,
            "model": model,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cost_usd": cost_usd,
            "latency_ms": round(latency_ms, 2),
            **(extra or {}),
        }
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def summary(self) -> dict[str, Any]:
        """Totals for `/v1/usage`; a cost made only of unknown prices is `None`, not $0.

        When some calls are priced and some are not, the sum of the known ones is given
        and `cost_unknown_calls` says it is a lower bound.
        """
        members = {name: _member_summary(u) for name, u in self.members.items()}
        calls = sum(u.calls for u in self.members.values())
        unknown = sum(u.cost_unknown_calls for u in self.members.values())
        return {
            "total_cost_usd": None if calls and unknown == calls else self.total_cost_usd,
            "cost_unknown_calls": unknown,
            "max_cost_usd": self.max_cost_usd,
            "budget_reached": self.budget_reached,
            "members": members,
        }


def _member_summary(usage: MemberUsage) -> dict[str, Any]:
    summary = dict(vars(usage))
    if usage.calls and usage.cost_unknown_calls == usage.calls:
        summary["cost_usd"] = None
    return summary
