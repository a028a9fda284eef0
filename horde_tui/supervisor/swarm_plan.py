"""How a swarm's task is split: plan layers dealt round-robin, or the planner's output.

Pure functions, so the launch check can refuse a plan with too few layers before any
directory exists, and the planner's reply can be tested without a model.
"""

from __future__ import annotations

import re

from horde_tui.store.runs import Workstream
from horde_tui.store.textmatch import TextKey, is_duplicate


class SwarmError(ValueError):
    """The task cannot be partitioned as asked; the message says why in one line."""


def deal_layers(layers: list[str], hordes: int) -> list[Workstream]:
    """`plan H/M a; b; c`: layer 1 to h1, layer 2 to h2, ... round-robin; each horde needs
    at least one layer."""
    if len(layers) < hordes:
        raise SwarmError(
            f"plan {hordes}/M needs at least {hordes} layers (one per horde), got "
            f"{len(layers)}; add layers or use fewer hordes"
        )
    dealt: list[list[str]] = [[] for _ in range(hordes)]
    for i, layer in enumerate(layers):
        dealt[i % hordes].append(layer)
    return [
        Workstream(
            f"h{n}",
            "layers: " + "; ".join(mine),
            "each layer analysed and reported with evidence: " + "; ".join(mine),
            tuple(mine),
        )
        for n, mine in enumerate(dealt, 1)
    ]


_BLOCK = re.compile(r"^[\s*_`#>-]*h(\d)\s*[:.)]\s*(.+?)\s*$", re.I)
_CRITERION = re.compile(r"^[\s*_`>-]*acceptance(?: criterion)?\s*:\s*(.+?)\s*$", re.I)


def parse_partition(text: str, hordes: int) -> list[Workstream]:
    """The planner's `hN: ...` / `acceptance: ...` blocks -> exactly `hordes` distinct
    workstreams, each with a criterion; anything else is refused with the reason."""
    found: dict[int, list[str]] = {}
    current: int | None = None
    for line in text.splitlines():
        if m := _BLOCK.match(line):
            current = int(m.group(1))
            if current in found:
                raise SwarmError(f"h{current} appears twice")
            found[current] = [m.group(2).strip("*_` "), ""]
        elif (m := _CRITERION.match(line)) and current is not None:
            found[current][1] = m.group(1).strip("*_` ")
    if sorted(found) != list(range(1, hordes + 1)):
        named = ", ".join(f"h{n}" for n in sorted(found)) or "none"
        raise SwarmError(f"expected workstreams h1 to h{hordes}, got {named}")
    missing = [f"h{n}" for n, (_, crit) in sorted(found.items()) if not crit]
    if missing:
        raise SwarmError(f"no acceptance criterion for {', '.join(missing)}")
    keys = {n: TextKey.of(ws) for n, (ws, _) in found.items()}
    for a in keys:
        for b in keys:
            if a < b and is_duplicate(keys[a], keys[b]):
                raise SwarmError(f"h{a} and h{b} are the same workstream")
    return [Workstream(f"h{n}", ws, crit) for n, (ws, crit) in sorted(found.items())]
