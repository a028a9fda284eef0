"""A member of a run as a `MemberState`, and the one transition of its lifecycle.

The supervisor writes each step of a member's life to `events.jsonl` (`member-spawn`,
`member-exit`, `member-reset`, `member-continue`, and `pause`/`resume` naming it among
their `targets`). Everyone who keeps a member folds those events with `fold_lifecycle`:
the hosted supervisor as it emits them, the screens (`view.members.MemberFold`),
`horde-tui resume` (who carries on) and `horde-tui finalize` (the report). So the same
events give the same member everywhere. A respawned member is running again: its start
is the respawn's, and the end, cause and detail of its previous session are cleared.

What the events do not say (turns, tokens, the tool at work) comes from the member's
own status lines (`MemberState.absorb`, hosted) or its transcripts (`view.members`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from horde_tui.store.activity import Backoff, Repeat, warned_since
from horde_tui.store.timestamps import epoch
from horde_tui.store.usage import fold_record

MEMBER_KINDS = frozenset({"member-spawn", "member-exit", "member-reset", "member-continue"})
"""Lifecycle kinds about the one member their `member` names."""
TARGETED_KINDS = frozenset({"pause", "resume", "stop-hard"})
"""Lifecycle kinds about the members their `targets` list."""
EXTERNAL_KINDS = frozenset({"member-join", "member-leave"})
"""An external member's life (an agent the run did not start, joined through
`horde-tui mcp`): the server writes them, not the supervisor, so pause, reset and the
supervisor's wait for its members never apply to it."""


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
    external: bool = False
    """Joined from outside (`horde-tui mcp`): its status comes from its join, its tool
    calls and its leave; its turns count its `horde` calls."""
    call_since: float | None = None
    """A model call in flight since then (`store.activity` reads these five)."""
    tool_since: float | None = None
    """The running tool started then."""
    repeat: Repeat | None = None
    """How often the latest call repeated, as the member's loop guard counted it."""
    repeat_since: float | None = None
    """When those repeats reached the guard's warning."""
    backoff: Backoff | None = None
    """The gateway's back-off of the call in flight (its `.backoff-<member>` note)."""
    approval: str = ""
    """The command the running tool waits to have approved by a person (confirm mode)."""
    last_write: float | None = None
    """When a running member last wrote the ledger (its heartbeat file): the stall rule
    resets it after the stall time without one, so the member row shows the time since."""

    def absorb(self, event: dict[str, Any]) -> None:
        """Fold one status line into the member's state, at the time the member wrote it."""
        kind = event.get("type")
        now = epoch(event.get("ts")) or time.time()
        if kind == "turn-start":
            self.turns += 1
            self.call_since = now
        elif kind == "usage":
            self.call_since = None
            self.produced_output = True
            if self.first_output is None:
                self.first_output = now
                self.first_turn = FirstTurn.of(event)
            self.last_output = now
            fold_record(self, event)
        elif kind == "tool-start":
            self.current_tool = str(event.get("tool", ""))
            self.tool_summary = str(event.get("summary", ""))
            self.last_output = self.tool_since = now
        elif kind == "tool-end":
            self.current_tool, self.tool_since = "", None
            self.last_output = now
            self.saw_repeat(Repeat.from_json(event.get("repeat")), now)
        elif kind == "message":
            self.last_output = now
            self.final_message = str(event.get("text", ""))
        elif kind == "exit":
            self.call_since = self.tool_since = None
            self.exit_cause = str(event.get("cause"))
            self.final_message = str(event.get("message") or self.final_message)
            self.detail = str(event.get("detail", ""))
            if event.get("transcript"):
                self.transcripts.append(str(event["transcript"]))

    def saw_repeat(self, repeat: Repeat | None, now: float | None) -> None:
        """The loop guard's count after a call (None: the call was new)."""
        self.repeat_since = warned_since(self.repeat, self.repeat_since, repeat, now)
        self.repeat = repeat

    def apply(self, kind: str, event: Mapping[str, Any], when: float | None) -> None:
        """Fold one lifecycle event about this member, which happened at `when`: the
        one transition every reader of a member uses (see the module doc)."""
        if kind == "member-join":
            pid = event.get("pid")
            self.pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
            self.external, self.role = True, "external"
            self.status, self.started, self.ended, self.exit_cause = "running", when, None, None
        elif kind == "member-leave":
            self.exit_cause = str(event.get("cause") or "left")
            self.status, self.ended, self.current_tool = "exited", when, ""
        elif self.external:
            return  # pause, resume, reset: the run does not steer an agent it did not start
        elif kind == "member-spawn":
            self.attempt = int(event.get("attempt") or self.attempt + 1)
            pid = event.get("pid")
            self.pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None
            self.status, self.started = "running", when
            self.ended, self.exit_cause, self.detail = None, None, ""
            self.call_since = self.tool_since = self.repeat = self.repeat_since = None
        elif kind == "member-exit":
            cause = event.get("cause")
            self.exit_cause = None if cause is None else str(cause)
            self.detail = str(event.get("detail") or "")
            self.status, self.ended, self.current_tool = "exited", when, ""
            self.call_since = self.tool_since = None
        elif kind == "member-reset":
            self.resets = int(event.get("resets") or self.resets + 1)
            self.status = "starting"
        elif kind == "member-continue":
            self.status = "waiting"
        elif kind == "pause" and self.status == "running":
            self.status = "paused"
        elif kind == "resume" and self.status == "paused":
            self.status = "running"


def fold_lifecycle(
    members: dict[str, MemberState],
    event: Mapping[str, Any],
    when: float | None = None,
    helpers: bool = False,
    externals: bool = False,
) -> bool:
    """Fold one lifecycle event into the members it names; True if it named any.

    `when` defaults to the event's `ts`. With `helpers`, a member event naming someone
    not in `members` (the synthesis or post-mortem helper) adds them; without, it is
    left out (the supervisor, resume and the report keep the planned members only).
    With `externals`, a `member-join` adds an external member, and the outcome of each
    of its tool calls counts as a turn and keeps it fresh (the screens and the report;
    the supervisor and resume never wait on nor respawn an agent they did not start)."""
    kind = event.get("kind")
    at = epoch(event.get("ts")) if when is None else when
    if externals and event.get("type") == "outcome":
        return _external_call(members, event, at)
    if not isinstance(kind, str):
        return False
    if kind in TARGETED_KINDS:
        targets = event.get("targets")
        listed = targets if isinstance(targets, list) else []
        names = [t for t in listed if isinstance(t, str) and t in members]
        for target in names:
            members[target].apply(kind, event, at)
        return bool(names)
    member = event.get("member")
    known = MEMBER_KINDS | EXTERNAL_KINDS if externals else MEMBER_KINDS
    if kind not in known or not isinstance(member, str) or not member:
        return False
    state = members.get(member)
    if state is None:
        if not (helpers or (externals and kind == "member-join")):
            return False
        state = members[member] = MemberState(member, str(event.get("role") or member))
    state.apply(kind, event, at)
    return True


def _external_call(
    members: dict[str, MemberState], event: Mapping[str, Any], at: float | None
) -> bool:
    """An external member's `horde` call (its outcome event): a turn, and its last sign
    of life, since no status lines come from an agent the run did not start."""
    state = members.get(str(event.get("actor")))
    if state is None or not state.external:
        return False
    state.turns += 1
    state.last_output = at
    state.tool_summary = f"horde {event.get('action', '')}".strip()
    return True


STILL_JOINED = "connected at the end"
"""An external member's end when the run ended before its server left."""


def external_members(events: Iterable[Mapping[str, Any]]) -> list[MemberState]:
    """The run's external members, in joining order, as its events tell them: the
    supervisor's own members never include them, so its report adds these."""
    members: dict[str, MemberState] = {}
    for ev in events:
        if ev.get("type") in ("lifecycle", "outcome"):
            fold_lifecycle(members, ev, externals=True)
    out = [m for m in members.values() if m.external]
    for m in out:
        if m.status == "running":
            m.status, m.exit_cause = "exited", STILL_JOINED
    return out
