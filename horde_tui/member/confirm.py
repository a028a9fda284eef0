"""Confirm mode, the member's side: a `bash` command waits for a person's decision.

horde.py asks y/N before each command; here the person may be in the app, at the
headless run's terminal or in another shell, so the question goes where every control
goes: a `confirm` request in the run's `control/` folder (`protocol/controls.py`),
which the supervisor's `ConfirmDesk` queues, shows and answers with `allow`, `refuse`
or `allow-all` (this member's commands for the rest of the run). The member blocks on
the answer: a stop reaches it as a signal, and the supervisor does not count the wait
as a stall. Stdlib only, like the rest of the member.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from horde_tui.protocol import controls

ASK_SLICE_S = 0.1
"""How often the waiting member looks for the answer file."""


@dataclass(frozen=True)
class Decision:
    """A person's answer to one command: run it or not, and whether to stop asking."""

    allowed: bool
    always: bool = False
    by: str = ""


class ConfirmGate:
    """Asks the run's supervisor, through `control/`, before each command of one member."""

    def __init__(self, run_dir: Path, member: str) -> None:
        self.run_dir = run_dir
        self.member = member
        self.always = False
        """Set by an `allow-all` answer: the rest of this session asks no more (the
        supervisor remembers it for the member's later sessions too)."""

    def ask(self, command: str, cwd: Path) -> Decision:
        """Block until a person decides on `command` (run in `cwd`)."""
        if self.always:
            return Decision(True, True, "allow-all")
        request = dataclasses.replace(
            controls.new_request("confirm", self.member),
            command=command,
            cwd=str(cwd),
            pid=os.getpid(),
        )
        path = controls.submit(self.run_dir, request)
        answer = None
        while answer is None:
            answer = controls.wait_response(path, ASK_SLICE_S)
        path.unlink(missing_ok=True)
        decision = str(answer.get("decision") or ("allow" if answer.get("ok") else "refuse"))
        self.always = decision == "allow-all"
        return Decision(
            decision in ("allow", "allow-all"), self.always, str(answer.get("by") or "")
        )
