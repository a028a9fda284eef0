"""A member of a run as a `MemberState`: one type for the hosted supervisor (which
keeps it from its members' status lines), the screens, `horde-tui resume` and
`horde-tui finalize` (which fold it from the run's files).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from horde_tui.store.usage import fold_record


@dataclass(frozen=True)
class FirstTurn:
    """Tokens and USD of a session's first model call (USD None: the provider gave no price)."""

    tokens: int
    cost_usd: float | None

    @classmethod
    def of(cls, usage: dict[str, Any]) -> FirstTurn:
        tokens = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        cost = usage.get("cost_usd")
        return cls(tokens, None if cost is None else float(cost))


@dataclass
class MemberState:
    """What the supervisor knows about one member, from its status lines."""

    name: str
    role: str
    layers: tuple[str, ...] = ()
    status: str = "pending"
    """pending, starting, running, paused, exited, stopped."""
    attempt: int = 0
    resets: int = 0
    pid: int | None = None
    started: float | None = None
    ended: float | None = None
    last_output: float | None = None
    current_tool: str = ""
    tool_summary: str = ""
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    exit_cause: str | None = None
    final_message: str = ""
    detail: str = ""
    transcripts: list[str] = field(default_factory=list)
    produced_output: bool = False
    first_output: float | None = None
    """When this session's model first answered: the stall clock starts there, so time
    spent waiting for the gateway's litellm import is never mistaken for a stall."""
    first_turn: FirstTurn | None = None
    """What this session's first model call cost: a fresh session pays to rebuild its
    context there, so the repair phase reports it per attempt."""

    def absorb(self, event: dict[str, Any]) -> None:
        """Fold one status line into the member's state."""
        kind = event.get("type")
        now = time.time()
        if kind == "turn-start":
            self.turns += 1
        elif kind == "usage":
            self.produced_output = True
            if self.first_output is None:
                self.first_output = now
                self.first_turn = FirstTurn.of(event)
            self.last_output = now
            fold_record(self, event)
        elif kind == "tool-start":
            self.current_tool = str(event.get("tool", ""))
            self.tool_summary = str(event.get("summary", ""))
            self.last_output = now
        elif kind == "tool-end":
            self.current_tool = ""
            self.last_output = now
        elif kind == "message":
            self.last_output = now
            self.final_message = str(event.get("text", ""))
        elif kind == "exit":
            self.exit_cause = str(event.get("cause"))
            self.final_message = str(event.get("message") or self.final_message)
            self.detail = str(event.get("detail", ""))
            if event.get("transcript"):
                self.transcripts.append(str(event["transcript"]))
