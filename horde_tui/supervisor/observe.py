"""What a supervisor tells its observers: `SupervisorEvent`s through one `Sink`.

Kept apart from `supervisor.run` so that what only observes a run (the app attached to
another process's run, the runs list) imports a dataclass, not the whole supervisor
with the protocol, the store and the settings behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SupervisorEvent:
    """What observers see: a lifecycle kind or a member status line, with its data."""

    kind: str
    member: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)


Sink = Callable[[SupervisorEvent], None]
