"""Run sources: what the run screen shows and drives, one interface for every run.

`RunSource` is the run screen's whole view of a run: what it is (`run_id`, `run_dir`),
its members as `MemberState`s, whether a clean stop is under way, the lifecycle events
since the last `poll()`, and the five controls, each answering with the one line a
person sees.

Every run is read from its directory the same way (`RunReader`): each `poll()` catches
up with `RunView` (reading only appended bytes), so the members are the lifecycle
events folded as the supervisor folds them with the transcripts laid over, and the
lifecycle events are replayed as the `SupervisorEvent`s the supervisor emitted. A run
hosted here and one attached from another process show alike; the two adapters differ
only in how controls go and what wakes the screen:

- `HostedSource`: a supervisor running in this process (`HostedRun`). Controls are
  method calls; its events only wake the screen (the app's `TuiBridge`).
- `AttachedSource`: a run hosted by another process (`horde-tui run --detach`, a
  headless run in another shell). Controls are requests in the run's `control/`
  folder (`ask`), waited for in a thread; a timer and file changes wake the screen.

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

from horde_tui.protocol import controls
from horde_tui.protocol.controls import HordeControls
from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.members import MemberState
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor.context import StopState
from horde_tui.supervisor.observe import SupervisorEvent
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
    """Has `.demo` (True when the scripted demo model answers) and `.baseline`."""
    stop: StopState | None
    """None until a clean stop of the whole run begins."""

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
    baseline: str
    """`--baseline RUN|last` as the run asked it, or `""` (the Findings tab's column)."""

    @property
    def members(self) -> dict[str, MemberState]:
        """Name -> state, in the table's order (manifest order, then helpers)."""
        ...

    @property
    def stop_reason(self) -> str | None:
        """Why the whole run is stopping clean; None while it is not."""
        ...

    def poll(self) -> list[SupervisorEvent]:
        """The run's lifecycle events appended since the last call, oldest first, as
        the supervisor emitted them (members and the stop state are current once it
        returns)."""
        ...

    def close(self) -> None:
        """Release what the source holds; pending control waits give up."""
        ...


class RunReader:
    """A run as its directory tells it, caught up each `poll()` (see the module doc):
    what both adapters show."""

    def __init__(self, run_dir: Path, hosted: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.view = RunView(self.run_dir, hosted=hosted)
        self.baseline = self.view.info.baseline
        self.model = ""
        self.demo = False
        self._members: dict[str, MemberState] = {}
        self._stop_reason: str | None = None

    @property
    def members(self) -> dict[str, MemberState]:
        return self._members

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason

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
        self._stop_reason = (life.stop_reason or "stop-clean requested") if stopping else None
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

    def close(self) -> None:
        """Release the file descriptors the view holds (a later poll reopens them)."""
        self.view.close()


class HostedSource(RunReader):
    """A supervisor in this process as a `RunSource` (see the module doc)."""

    def __init__(self, supervisor: HostedRun) -> None:
        super().__init__(supervisor.run_dir, hosted=True)
        self.supervisor = supervisor
        self.run_id = supervisor.run_id
        self.baseline = str(supervisor.request.baseline or "")
        # The plan, shown pending before the supervisor writes MANIFEST.json.
        planned = [
            {"name": s.name, "role": s.role, "layers": list(s.layers)}
            for s in supervisor.members.values()
        ]
        self.view.fold.add_manifest({"members": planned})
        self._members = {state.name: state for state in self.view.fold.members(True)}

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


class AttachedSource(RunReader):
    """A run hosted by another process, read from its directory (see the module doc)."""

    def __init__(
        self, run_dir: Path, *, answer_timeout_s: float = controls.ANSWER_TIMEOUT_S
    ) -> None:
        super().__init__(run_dir)
        self.answer_timeout_s = answer_timeout_s
        self._closed = threading.Event()

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
        super().close()
