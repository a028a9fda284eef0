"""Run sources: what the run screen shows and drives, one interface for every run.

`RunSource` is the run screen's whole view of a run: what it is (`run_id`, `run_dir`),
its members as `MemberState`s, whether a clean stop is under way, the lifecycle events
since the last `poll()`, and the five controls, each answering with the one line a
person sees. Two adapters implement it:

- `HostedSource`: a supervisor running in this process (`HostedRun`). Controls are
  method calls; `poll()` hands over the events its sink buffered (the app's
  `TuiBridge`, which only wakes the screen).
- `AttachedSource`: a run hosted by another process (`horde-tui run --detach`, a
  headless run in another shell). Members, phase and outcome are read from the run
  directory (`RunView`, reading only appended bytes) each `poll()`, and its lifecycle
  events are replayed as the `SupervisorEvent`s a hosted supervisor would have emitted.
  Controls are requests in the run's `control/` folder (`ask`), waited for in a thread.

A swarm another process hosts takes its controls the same way, `send_control` to the
swarm's own `control/`: its supervisor routes each to the hordes the target names, as
it does `horde-tui pause h2` (one path for the CLI and the swarm screen). No Textual
here (the screens import this, not the other way round).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from horde_tui.store.members import MemberState
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor import controls
from horde_tui.supervisor.context import StopState
from horde_tui.supervisor.controls import HordeControls
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.outcome import RunSummary
from horde_tui.view.run import RunView

REMOTE_ACTIONS = {
    "pause": "pause",
    "resume": "resume",
    "reset": "reset",
    "stop_clean": "stop-clean",
    "stop_hard": "stop-hard",
}
"""Control method -> `control/` request action."""

_STRUCTURE = frozenset({"ts", "actor", "type", "kind", "member", "id"})


class HostedRun(HordeControls, Protocol):
    """The part of `Supervisor` the app reads and drives (tests host a fake of it)."""

    run_id: str
    run_dir: Path
    members: dict[str, MemberState]
    sink: Callable[[SupervisorEvent], None]
    settings: Any
    """Has `.model` (the litellm model string)."""
    request: Any
    """Has `.demo` (True when the scripted demo model answers)."""
    stop: StopState | None
    """None until a clean stop of the whole run begins."""
    canary: str
    """The canary's result so far (`not run`; a resumed run's is known from its events)."""

    def handoff(self) -> str:
        """Let go of the run so a detached supervisor can carry it on (`run()` then
        returns None); a line starting "refused" when it cannot."""
        ...

    async def run(self) -> RunSummary | None: ...


class RunControls(Protocol):
    """The controls of a run as the screen sends them: each answers with one line."""

    async def pause(self, target: str) -> str: ...

    async def resume(self, target: str) -> str: ...

    async def reset(self, target: str) -> str: ...

    async def stop_clean(self, target: str = "all") -> str: ...

    async def stop_hard(self, target: str = "all") -> str: ...


class RunSource(RunControls, Protocol):
    """What the run screen needs of any run, hosted here or attached from files."""

    run_id: str
    run_dir: Path

    @property
    def members(self) -> dict[str, MemberState]:
        """Name -> state, in the table's order (manifest order, then helpers)."""
        ...

    @property
    def stop_reason(self) -> str | None:
        """Why the whole run is stopping clean; None while it is not."""
        ...

    @property
    def canary(self) -> str:
        """The canary's result so far (`not run` before it ran)."""
        ...

    def poll(self) -> list[SupervisorEvent]:
        """The events since the last call, oldest first: what the hosted supervisor
        emitted, or an attached run's lifecycle events replayed (members and the stop
        state are current once it returns)."""
        ...

    def close(self) -> None:
        """Release what the source holds; pending control waits give up."""
        ...


class HostedSource:
    """A supervisor in this process as a `RunSource` (see the module doc)."""

    def __init__(
        self,
        supervisor: HostedRun,
        events: Callable[[], list[SupervisorEvent]] = list,
    ) -> None:
        """`events` hands over what the supervisor emitted since it was last called
        (the app's `TuiBridge.take`)."""
        self.supervisor = supervisor
        self.run_id = supervisor.run_id
        self.run_dir = supervisor.run_dir
        self._events = events

    @property
    def members(self) -> dict[str, MemberState]:
        return self.supervisor.members

    @property
    def stop_reason(self) -> str | None:
        stop = self.supervisor.stop
        return None if stop is None else stop.reason

    @property
    def canary(self) -> str:
        return self.supervisor.canary

    def poll(self) -> list[SupervisorEvent]:
        return self._events()

    def close(self) -> None:
        """Nothing to release: the app owns the supervisor."""

    async def pause(self, target: str) -> str:
        return self.supervisor.pause(target)

    async def resume(self, target: str) -> str:
        return self.supervisor.resume(target)

    async def reset(self, target: str) -> str:
        return await self.supervisor.reset(target)

    async def stop_clean(self, target: str = "all") -> str:
        return self.supervisor.stop_clean(target, reason="stopped by user")

    async def stop_hard(self, target: str = "all") -> str:
        return await self.supervisor.stop_hard(target)


def lifecycle_event(record: dict[str, Any]) -> SupervisorEvent:
    """A lifecycle record of `events.jsonl` as the event the hosted supervisor emitted,
    so phases and the run's end read the same in both modes."""
    data = {k: v for k, v in record.items() if k not in _STRUCTURE}
    member = record.get("member")
    kind = str(record.get("kind") or "?")
    return SupervisorEvent(kind, member and str(member), data, epoch(record.get("ts")) or 0.0)


def send_control(
    folder: Path,
    action: str,
    target: str = "all",
    timeout_s: float = controls.ANSWER_TIMEOUT_S,
    cancelled: Callable[[], bool] = lambda: False,
) -> str:
    """Ask the supervisor whose `control/` is in `folder` (`pause`, `stop_clean`, ...)
    and wait for its answer, as the one line to show (blocks: call it from a thread)."""
    request = controls.new_request(REMOTE_ACTIONS.get(action, action), target)
    try:
        answer = controls.ask(folder, request, timeout_s, cancelled)
    except OSError as exc:
        return f"could not send {request.action} {target}: {exc}"
    if answer is None:
        return (
            f"the supervisor of {folder.name} did not answer {request.action} {target} "
            f"within {timeout_s:g} s"
        )
    return str(answer.get("text") or ("ok" if answer.get("ok") else "refused"))


class AttachedSource:
    """A run hosted by another process, read from its directory (see the module doc)."""

    def __init__(
        self, run_dir: Path, *, answer_timeout_s: float = controls.ANSWER_TIMEOUT_S
    ) -> None:
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.answer_timeout_s = answer_timeout_s
        self.view = RunView(self.run_dir)
        self.model = ""
        self.demo = False
        self._members: dict[str, MemberState] = {}
        self._stop_reason: str | None = None
        self._closed = threading.Event()

    @property
    def members(self) -> dict[str, MemberState]:
        return self._members

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason

    @property
    def canary(self) -> str:
        return "not run"  # replayed from the events (`RunPhase`)

    @property
    def live(self) -> bool:
        return self.view.live

    def poll(self) -> list[SupervisorEvent]:
        """Catch up with the disk; return the lifecycle events appended since last time."""
        self.view.refresh()
        info, life = self.view.info, self.view.life
        self.model = life.model or info.model
        self.demo = info.demo
        self._members = {state.name: state for state in self.view.members()}
        stopping = life.stop_clean is not None and not life.outcome
        self._stop_reason = "stop-clean requested" if stopping else None
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
        """`send_control` to this run; `close` or `cancelled` ends the wait early."""
        return send_control(
            self.run_dir,
            action,
            target,
            self.answer_timeout_s,
            lambda: self._closed.is_set() or cancelled(),
        )

    async def _send(self, action: str, target: str) -> str:
        """`send` in a thread; cancelling the caller (the screen went away) ends it."""
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(self.send, action, target, cancelled.is_set)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def pause(self, target: str) -> str:
        return await self._send("pause", target)

    async def resume(self, target: str) -> str:
        return await self._send("resume", target)

    async def reset(self, target: str) -> str:
        return await self._send("reset", target)

    async def stop_clean(self, target: str = "all") -> str:
        return await self._send("stop_clean", target)

    async def stop_hard(self, target: str = "all") -> str:
        return await self._send("stop_hard", target)

    def close(self) -> None:
        """Release the file descriptors the views hold; abandon pending waits."""
        self._closed.set()
        self.view.close()
