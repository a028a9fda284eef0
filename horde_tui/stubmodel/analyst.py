"""The demo model's analyst: what answers `horde-tui ask` on a run the demo model played.

A demo run has no real model behind it, yet a newcomer's first ask is on the demo. This
plan reads the ledger as any analyst would (`findings`, then `inspect` the first one) and
answers from what it read, saying that it is a script: every id and `file:line` in its
answer comes from the ledger, so the ask's citation check passes it as it would a model's.
"""

from __future__ import annotations

from typing import Any

DEMO_ANSWER = (
    "The demo model plays the analyst here: it is a script, not a model, so it answers "
    "every question the same way, from the ledgers. The run filed $<n> findings. The "
    "first, $<f>, says: $<what>; its evidence is $<line> `$<code>`. For a real answer, "
    "ask with a real model: --model, with --api-base and --api-key as for `run`."
)


def analyst_plan() -> list[dict[str, Any]]:
    """The stub `AgentPolicy` plan of the analyst on a demo run."""
    return [
        {
            "tool": "horde",
            "args": {"action": "findings"},
            "match": [r"^(\d+) findings?:", r"^- (F\d+) \[[^\]]+\] (.+?) \(#"],
            "bind": ["$<n>", "$<f>", "$<what>"],
        },
        {
            "tool": "horde",
            "args": {"action": "inspect", "target": "$<f>"},
            "match": [r"^\s+([\w./-]+\.\w+:\d+): (.+?)\s*$"],
            "bind": ["$<line>", "$<code>"],
        },
        {"say": DEMO_ANSWER},
    ]
