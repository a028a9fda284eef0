"""The one adapter between a hosted supervisor and the Textual app.

The supervisor is plain asyncio and never imports Textual; it calls one sink per event.
`TuiBridge` is that sink when the app hosts a run: it keeps the events until the run
screen's source takes them (`take`, through `view.source.HostedSource.poll`) and wakes
the app with a `SupervisorUpdate`, at most one per `interval_s` (~10 a second), through
the same `PacedWake` that paces file changes; a wake still waiting in the queue is
replaced by the next one, so a burst of tool lines from twelve members costs the UI one
repaint, not hundreds. The first event after a quiet spell wakes at once, so a lone
status change shows without delay.

A hosted swarm's sink is `swarm_sink`: its lifecycle steps post a `SwarmStep`, and the
swarm screen re-reads the hordes' files (their members' traffic wakes nothing).
"""

from __future__ import annotations

from pathlib import Path

from textual.message import Message
from textual.message_pump import MessagePump

from horde_tui.supervisor.observe import Sink, SupervisorEvent
from horde_tui.view.coalesce import PacedWake


class SupervisorUpdate(Message):
    """The hosted supervisor emitted events since the last wake (`TuiBridge.take`)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SupervisorUpdate)


class TuiBridge:
    """A supervisor sink that keeps events and wakes the app at a paced rate. It is
    called on the app's loop: the app runs the supervisor in one of its async workers."""

    def __init__(self, target: MessagePump, interval_s: float = 0.1) -> None:
        self.target = target
        self._pace = PacedWake(self._wake, 1 / interval_s)
        self._pending: list[SupervisorEvent] = []

    @property
    def flushes(self) -> int:
        """How many wakes were posted (tests check the pacing with it)."""
        return self._pace.wakes

    def __call__(self, event: SupervisorEvent) -> None:
        self._pending.append(event)
        self._pace.note()

    def flush(self) -> None:
        """Wake the app now if events wait (also called when the run ends, so the last
        ones are shown)."""
        self._pace.flush()

    def _wake(self, _paths: set[Path]) -> None:
        self.target.post_message(SupervisorUpdate())

    def take(self) -> list[SupervisorEvent]:
        """The events emitted since the last call, oldest first (called on the app's loop)."""
        events, self._pending = self._pending, []
        return events


class SwarmStep(Message):
    """The hosted swarm reported a lifecycle step (posted from any thread)."""


def swarm_sink(target: MessagePump) -> Sink:
    """A hosted swarm's sink: a `SwarmStep` for each event that names no member."""

    def sink(event: SupervisorEvent) -> None:
        if event.member is None:
            target.post_message(SwarmStep())

    return sink
