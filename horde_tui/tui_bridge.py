"""The one adapter between a hosted supervisor and the Textual app.

The supervisor is plain asyncio and never imports Textual; it calls one sink per event.
`TuiBridge` is that sink when the app hosts a run: it keeps the events until the run
screen's source takes them (`take`, through `view.source.HostedSource.poll`) and wakes
the app with a `SupervisorUpdate`, at most one per `interval_s` (~10 a second): the
same `Coalescer` that paces file changes paces these, and a wake still waiting in the
queue is replaced by the next one, so a burst of tool lines from twelve members costs
the UI one repaint, not hundreds. The first event after a quiet spell wakes at once, so
a lone status change shows without delay.
"""

from __future__ import annotations

import asyncio
import threading

from textual.message import Message
from textual.message_pump import MessagePump

from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.view.coalesce import Coalescer


class SupervisorUpdate(Message):
    """The hosted supervisor emitted events since the last wake (`TuiBridge.take`)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SupervisorUpdate)


class TuiBridge:
    """A supervisor sink that keeps events and wakes the app at a coalesced rate.

    Call `attach()` from the app's event loop before the supervisor starts; the sink may
    then be called from that loop (the hosted case) or from any thread.
    """

    def __init__(self, target: MessagePump, interval_s: float = 0.1) -> None:
        self.target = target
        self.flushes = 0
        """How many wakes were posted (tests check the coalescing with it)."""
        self._pace = Coalescer(1.0 / interval_s)
        self._pending: list[SupervisorEvent] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._scheduled: asyncio.TimerHandle | None = None

    def attach(self) -> None:
        """Bind to the running loop (the app's); wakes are scheduled on it."""
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
        self._pace.note()
        if self._scheduled is not None:
            return
        assert self._loop is not None
        self._scheduled = self._loop.call_later(self._pace.delay() or 0.0, self.flush)

    def flush(self) -> None:
        """Wake the app now if events wait (also called when the run ends, so the last
        ones are shown)."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        if not self._pending:
            return
        self._pace.take(force=True)
        self.flushes += 1
        self.target.post_message(SupervisorUpdate())

    def take(self) -> list[SupervisorEvent]:
        """The events emitted since the last call, oldest first (called on the app's loop)."""
        events, self._pending = self._pending, []
        return events
