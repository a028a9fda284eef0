"""Confirm mode, the supervisor's side: the queue of commands waiting for a person.

A member in confirm mode leaves a `confirm` request in `control/` before each `bash`
command (`member/confirm.py`) and waits. The desk queues it (the request file stays
until it is decided, so anyone can see what waits), records `confirm-request` in
events.jsonl, and answers once a person decides: in the app (which sends `approve`,
`refuse` or `allow-all` through the same `control/` folder), at the headless run's
terminal (`decide` in this process), or from another shell (`horde-tui approve`).
`allow-all` lets the member's commands through for the rest of the run. A request
whose session ended (a stop, a reset) is dropped. A decision asked from inside a live
member's process tree is refused (`controls.decider_refusal`): a member never decides
its own command, nor another's. The desk serves its own requests
for the whole run, whatever the phase, so a repair session waiting for a decision is
answered too; `controls.answer_pending` leaves them to it (its `leave`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.protocol import controls
from horde_tui.protocol.targets import TargetError, parse_targets, selects

DECISIONS = {"approve": "allow", "refuse": "refuse", "allow-all": "allow-all"}
"""Control action -> the decision it makes."""
REFUSED_TEXT = "refused by the user"


@dataclass(frozen=True)
class Waiting:
    """One command waiting for a person."""

    id: str
    member: str
    command: str
    cwd: str
    pid: int | None
    asked: float
    path: Path


Emit = Callable[..., None]
"""`Supervisor.emit`: kind, member, then the event's fields."""
Alive = Callable[[str, int | None], bool]
"""Whether the member's session that asked (its pid) is still running."""


class ConfirmDesk:
    """The run's queue of commands waiting for a decision (see the module doc)."""

    def __init__(self, run_dir: Path, emit: Emit, alive: Alive, horde: int = 1) -> None:
        self.run_dir = run_dir
        self.emit = emit
        self.alive = alive
        self.horde = horde
        self.waiting: dict[str, Waiting] = {}
        """By request id, oldest first."""
        self.always: set[str] = set()
        """Members whose commands run without asking for the rest of the run."""
        self.decided_at: dict[str, float] = {}
        """When each member's last command was decided: its stall clock starts there."""

    def waits(self, member: str) -> bool:
        return any(w.member == member for w in self.waiting.values())

    def serve(self) -> None:
        """One pass over `control/`: queue new confirm requests, answer decisions from
        other shells, drop the requests of sessions that ended."""
        for path, request in controls.pending_requests(self.run_dir):
            if isinstance(request, str) or request.action not in controls.CONFIRM_ACTIONS:
                continue
            if request.action == "confirm":
                if request.id not in self.waiting:
                    self._take(path, request)
                continue
            text = controls.decider_refusal(request.pid) or self.decide(
                request.target, DECISIONS[request.action], "control"
            )
            controls.answer(self.run_dir, path, request.id, not text.startswith("refused:"), text)
        for wait in list(self.waiting.values()):
            if not self.alive(wait.member, wait.pid):
                self._close(wait, "dropped", "supervisor", answer=False)

    def _take(self, path: Path, request: controls.ControlRequest) -> None:
        wait = Waiting(
            request.id,
            request.target,
            request.command or "",
            request.cwd or "",
            request.pid,
            time.time(),
            path,
        )
        if wait.member in self.always:
            self.waiting[wait.id] = wait
            self._close(wait, "allow-all", "allow-all")
            return
        self.waiting[wait.id] = wait
        self.emit("confirm-request", wait.member, command=wait.command[:2000], cwd=wait.cwd)

    def decide(self, target: str, decision: str, by: str) -> str:
        """Decide the waiting commands of the members `target` names (`all`: every one);
        the one line a person sees."""
        try:
            targets = parse_targets(target)
        except TargetError as exc:
            return f"refused: {exc}"
        chosen = [w for w in self.waiting.values() if selects(targets, self.horde, w.member)]
        if decision == "allow-all":
            named = {n for n in target.replace(",", " ").split() if n != "all"}
            members = {w.member for w in chosen}
            self.always.update(members)
            if not chosen and named:
                return f"nothing waits for {target}; allow-all applies to a member with a command waiting"
        if not chosen:
            return "nothing waits for a decision" + ("" if target == "all" else f" from {target}")
        for wait in chosen:
            self._close(wait, decision, by)
        verb = {"allow": "allowed", "refuse": "refused", "allow-all": "allowed (all from now)"}
        listed = "; ".join(f"{w.member}: {_short(w.command)}" for w in chosen)
        return f"{verb[decision]} {listed}"

    def _close(self, wait: Waiting, decision: str, by: str, answer: bool = True) -> None:
        """Answer the member (unless its session is gone) and record the decision."""
        self.waiting.pop(wait.id, None)
        self.decided_at[wait.member] = time.time()
        allowed = decision in ("allow", "allow-all")
        if answer:
            text = "allowed by the user" if allowed else REFUSED_TEXT
            controls.answer(
                self.run_dir, wait.path, wait.id, allowed, text, decision=decision, by=by
            )
        else:
            wait.path.unlink(missing_ok=True)
        fields: dict[str, Any] = {"decision": decision, "by": by, "command": wait.command[:2000]}
        self.emit("confirm-decision", wait.member, **fields)


def _short(command: str, width: int = 60) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= width else first[: width - 3] + "..."
