"""Run sources: what the run screen shows and drives, hosted here or attached from files.

The run screen reads `run_id`, `run_dir`, `members` (name -> `MemberState`) and `stop`
from its source and sends controls to it. Two sources exist:

- a hosted `Supervisor` (`tui_bridge.HostedRun`): events arrive through the `TuiBridge`,
  controls are method calls in this process;
- `AttachedRun`: a run hosted by another process (`horde-tui run --detach`, a headless
  run in another shell). Members, phase and outcome are read from the run directory
  (`RunView`, reading only appended bytes) each `poll()`, and its lifecycle events are
  replayed as the `SupervisorEvent`s a hosted supervisor would have emitted. Controls go
  through the run's `control/` folder, which blocks for up to the answer timeout, so the
  screen sends them from a thread worker (`send`).

Either way the Events tab reads `events.jsonl` itself (`widgets/event_log.py`).

One screen, two sources: the keys, the palette and the detail screen stay identical.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

from horde_tui.store.timestamps import epoch
from horde_tui.supervisor import controls
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.processes import MemberState
from horde_tui.view.members import MemberRow
from horde_tui.view.run import RunView

REMOTE_ACTIONS = {
    "pause": "pause",
    "resume": "resume",
    "reset": "reset",
    "stop_clean": "stop-clean",
    "stop_hard": "stop-hard",
}
"""Screen control -> `control/` request action."""
_STRUCTURE = frozenset({"ts", "actor", "type", "kind", "member", "id"})


class RunSource(Protocol):
    """What the run screen needs of any run, hosted or attached."""

    run_id: str
    run_dir: Path
    members: dict[str, MemberState]
    settings: Any
    request: Any
    stop: Any


def member_state(row: MemberRow) -> MemberState:
    """A `view.members.MemberRow` (read from disk) as the `MemberState` the screen shows."""
    return MemberState(
        name=row.name,
        role=row.role,
        layers=row.layers,
        status=row.status,
        attempt=row.attempt,
        resets=row.resets,
        pid=row.pid,
        started=row.started,
        ended=row.ended,
        current_tool=row.current_tool,
        tool_summary=row.current_tool or row.last_tool,
        turns=row.turns,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cost_usd=row.cost_usd,
        exit_cause=row.exit_cause,
        final_message=row.last_text,
        detail=row.detail,
        transcripts=[str(row.transcript)] if row.transcript else [],
    )


def lifecycle_event(record: dict[str, Any]) -> SupervisorEvent:
    """A lifecycle record of `events.jsonl` as the event the hosted supervisor emitted,
    so phases and the run's end read the same in both modes."""
    data = {k: v for k, v in record.items() if k not in _STRUCTURE}
    member = record.get("member")
    kind = str(record.get("kind") or "?")
    return SupervisorEvent(kind, member and str(member), data, epoch(record.get("ts")) or 0.0)


class AttachedRun:
    """A run hosted by another process, read from its directory (see the module doc)."""

    remote = True

    def __init__(self, run_dir: Path, *, answer_timeout_s: float = 15.0) -> None:
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.answer_timeout_s = answer_timeout_s
        self.view = RunView(self.run_dir)
        self.members: dict[str, MemberState] = {}
        self.stop: Any = None
        self.sink: Callable[[SupervisorEvent], None] = lambda event: None
        self._closed = threading.Event()
        self.settings = SimpleNamespace(model="")
        self.request = SimpleNamespace(demo=False)

    @property
    def live(self) -> bool:
        return self.view.live

    @property
    def state(self) -> str:
        return self.view.state

    def poll(self) -> list[SupervisorEvent]:
        """Catch up with the disk; return the lifecycle events appended since last time."""
        self.view.refresh()
        info, life = self.view.info, self.view.life
        self.settings.model = life.model or info.model
        self.request.demo = info.demo
        self.members = {row.name: member_state(row) for row in self.view.members()}
        stopping = life.stop_clean is not None and not life.outcome
        self.stop = SimpleNamespace(reason="stop-clean requested") if stopping else None
        events, self.view.new_events = self.view.new_events, []  # not kept past this call
        return [lifecycle_event(record) for record in events]

    def backlog(self) -> int:
        """Bytes of the event log not read yet (a first read of a long run is big)."""
        return self.view.life.index.unread_bytes()

    def ended_text(self) -> str:
        """The status line of a run that is no longer live."""
        life = self.view.life
        if life.outcome:
            return f"ended: {life.outcome}: {life.diagnosis}".rstrip(": ")
        return f"ended: {self.view.state}"

    def send(
        self, action: str, target: str = "all", cancelled: Callable[[], bool] = lambda: False
    ) -> str:
        """Ask the run's supervisor through `control/` and wait for its answer.

        Blocks up to `answer_timeout_s`: call it from a thread, never the UI loop. The
        wait is cut into short slices so quitting the app (`close`, or the worker's
        `cancelled`) never waits out an unanswered request.
        """
        request = controls.new_request(REMOTE_ACTIONS.get(action, action), target)
        try:
            path = controls.submit(self.run_dir, request)
        except OSError as exc:
            return f"could not send {request.action} {target}: {exc}"
        deadline = time.monotonic() + self.answer_timeout_s
        answer = None
        while answer is None and not (self._closed.is_set() or cancelled()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            answer = controls.wait_response(path, min(0.2, left))
        if answer is None:
            return (
                f"the supervisor of {self.run_id} did not answer {request.action} {target} "
                f"within {self.answer_timeout_s:g} s"
            )
        return str(answer.get("text") or ("ok" if answer.get("ok") else "refused"))

    def close(self) -> None:
        """Release the file descriptors the views hold; abandon pending waits."""
        self._closed.set()
        self.view.close()
