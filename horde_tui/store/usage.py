"""The running usage total: tokens, and a cost that turns unknown once a call is unpriced.

A member's loop, its status lines (the supervisor), its transcripts (the app, a resume)
and the reports all add usage up; they fold it here so "one unpriced call makes the
total unknown" is one rule. A guessed cost would read as a fact, so unknown stays
unknown (`None`) for good once any call was unpriced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class UsageTotal(Protocol):
    """Anything that keeps a running usage total (a member's state, a session's stats)."""

    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


def add_cost(total: float | None, cost: Any) -> float | None:
    """`total + cost`, unknown (`None`) once either is unknown."""
    if total is None or cost is None:
        return None
    return total + float(cost)


def sum_cost(costs: Iterable[float | None]) -> float | None:
    """Total of several costs; unknown as soon as one is."""
    total: float | None = 0.0
    for cost in costs:
        total = add_cost(total, cost)
    return total


def fold(total: UsageTotal, prompt: int, completion: int, cost: Any) -> None:
    """Add one call's (or one session's) usage to `total`."""
    total.prompt_tokens += prompt
    total.completion_tokens += completion
    total.cost_usd = add_cost(total.cost_usd, cost)


def fold_record(total: UsageTotal, usage: Any, cost_key: str = "cost_usd") -> None:
    """Add a usage record as the files carry it (`{"prompt_tokens", "completion_tokens",
    cost_key}`; anything else counts as an unpriced call with no tokens)."""
    record: Mapping[str, Any] = usage if isinstance(usage, Mapping) else {}
    fold(
        total,
        int(record.get("prompt_tokens") or 0),
        int(record.get("completion_tokens") or 0),
        record.get(cost_key),
    )
