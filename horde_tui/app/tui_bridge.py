"""The one adapter between a hosted supervisor and the Textual app.

The supervisor is plain asyncio and never imports Textual; it calls one sink per event.
`TuiBridge` is that sink when the app hosts a run, and it only wakes the app: the run
screen reads what happened from the run's files (`view.source.HostedSource`, where the
supervisor wrote its lifecycle events before emitting them and the members their
transcripts), the same way it reads a run another process hosts. A wake is a
`SupervisorUpdate`, at most one per `interval_s` (~10 a second), through the same
`PacedWake` that paces file changes (the app's one throttle); a wake still waiting in
the queue is replaced by the next one, so a burst of tool lines from twelve members
costs the UI one repaint, not hundreds. The first event after a quiet spell wakes at
once, so a lone status change shows without delay.

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
    """The hosted supervisor emitted events since the last wake: its files have news."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SupervisorUpdate)


class TuiBridge:
    """A supervisor sink that wakes the app at a paced rate and keeps nothing. It is
    called on the app's loop: the app runs the supervisor in one of its async workers."""

    def __init__(self, target: MessagePump, interval_s: float = 0.1) -> None:
        self.target = target
        self._pace = PacedWake(self._wake, 1 / interval_s)

    @property
    def flushes(self) -> int:
        """How many wakes were posted (tests check the pacing with it)."""
        return self._pace.wakes

    def __call__(self, event: SupervisorEvent) -> None:
        self._pace.note()

    def flush(self) -> None:
        """Wake the app now if a wake is due (also called when the run ends, so the
        last events are shown)."""
        self._pace.flush()

    def _wake(self, _paths: set[Path]) -> None:
        self.target.post_message(SupervisorUpdate())


class SwarmStep(Message):
    """The hosted swarm reported a lifecycle step (posted from any thread)."""


def swarm_sink(target: MessagePump) -> Sink:
    """A hosted swarm's sink: a `SwarmStep` for each event that names no member."""

    def sink(event: SupervisorEvent) -> None:
        if event.member is None:
            target.post_message(SwarmStep())

    return sink
