"""The one adapter between a `Supervisor` and the Textual app.

The supervisor is plain asyncio and never imports Textual; it calls one sink per event.
`TuiBridge` is that sink when the app hosts a run: it buffers events and posts them to
the app as one `SupervisorUpdate` message per flush, at most one flush per `interval_s`
(~10 UI refreshes a second), so a burst of tool lines from twelve members costs the UI
one repaint, not hundreds. The first event after a quiet spell flushes at once, so a
lone status change shows without delay.

`HostedRun` names exactly what the app uses of a supervisor, so tests can host a fake.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.message_pump import MessagePump

from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.supervisor.outcome import RunSummary
from horde_tui.supervisor.processes import MemberState


class HordeControls(Protocol):
    """The controls a hosted supervisor takes, a run's `Supervisor` or a swarm's
    `SwarmSupervisor` alike (targets in `supervisor/targets.py` syntax)."""

    def pause(self, target: str = "all") -> str: ...

    def resume(self, target: str = "all") -> str: ...

    def stop_clean(
        self,
        target: str = "all",
        grace_s: float | None = None,
        postmortem: bool = False,
        reason: str = "stopped by user",
    ) -> str: ...

    async def stop_hard(self, target: str = "all") -> str: ...

    async def reset(self, target: str) -> str: ...


class HostedRun(HordeControls, Protocol):
    """The part of `Supervisor` the app reads and drives."""

    run_id: str
    run_dir: Path
    members: dict[str, MemberState]
    sink: Callable[[SupervisorEvent], None]
    settings: Any
    """Has `.model` (the litellm model string)."""
    request: Any
    """Has `.demo` (True when the scripted demo model answers)."""
    stop: Any
    """None until a clean stop of the whole run begins."""

    def handoff(self) -> str:
        """Let go of the run so a detached supervisor can carry it on (`run()` then
        returns None); a line starting "refused" when it cannot."""
        ...

    async def run(self) -> RunSummary | None: ...


class SupervisorUpdate(Message):
    """Events the supervisor emitted since the previous update, oldest first."""

    def __init__(self, events: list[SupervisorEvent]) -> None:
        super().__init__()
        self.events = events


class TuiBridge:
    """A supervisor sink that turns events into coalesced `SupervisorUpdate` messages.

    Call `attach()` from the app's event loop before the supervisor starts; the sink may
    then be called from that loop (the hosted case) or from any thread.
    """

    def __init__(self, target: MessagePump, interval_s: float = 0.1) -> None:
        self.target = target
        self.interval_s = interval_s
        self.flushes = 0
        """How many updates were posted (tests check the coalescing with it)."""
        self._pending: list[SupervisorEvent] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._scheduled: asyncio.TimerHandle | None = None
        self._last_flush = 0.0

    def attach(self) -> None:
        """Bind to the running loop (the app's); flushes are scheduled on it."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def __call__(self, event: SupervisorEvent) -> None:
        if self._loop is None:
            raise RuntimeError("TuiBridge.attach() must run on the app's loop before events")
        if threading.get_ident() == self._loop_thread:
            self._accept(event)
        else:
            self._loop.call_soon_threadsafe(self._accept, event)

    def _accept(self, event: SupervisorEvent) -> None:
        self._pending.append(event)
        if self._scheduled is not None:
            return
        assert self._loop is not None
        wait = max(0.0, self._last_flush + self.interval_s - time.monotonic())
        self._scheduled = self._loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Post what is pending now (also called when the run ends, to miss nothing)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        if not self._pending:
            return
        events, self._pending = self._pending, []
        self._last_flush = time.monotonic()
        self.flushes += 1
        self.target.post_message(SupervisorUpdate(events))
