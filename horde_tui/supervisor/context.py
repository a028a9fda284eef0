"""`RunContext`: the part of a run's supervisor that its phases may use.

The lifecycle's steps live in their own modules (`watch`, `reviews`, `repair`,
`finalize`, `cleanup`, `handoff`, `resume`); each takes the run as a `RunContext`
named `sup` and reaches it only through the names below, never a private member, and
none of them imports `run.py`. `Supervisor` (run.py) is the one implementation; the
swarm's supervisor is a `HelperHost` for its planner and merge helpers. A test holds
the phases to this list (`tests/unit/supervisor/test_supervisor_structure.py`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from horde_tui.common.settings import Settings
from horde_tui.protocol.controls import HordeControls
from horde_tui.protocol.targets import Target
from horde_tui.sandbox.policy import SandboxPolicy
from horde_tui.store.members import MemberState
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.confirm import ConfirmDesk
from horde_tui.supervisor.processes import GatewayHandle, MemberProcess
from horde_tui.supervisor.setup import MemberSpec, RunRequest


@dataclass
class StopState:
    """A clean stop in progress: its deadline and the one-time extensions granted."""

    reason: str
    deadline: float
    postmortem: bool
    started: float = field(default_factory=time.time)
    active_extended: set[str] = field(default_factory=set)
    solved_extended: bool = False


@runtime_checkable
class HelperHost(Protocol):
    """What hosts a helper session (`finalize.run_helper`): a run's `Supervisor`, or a
    swarm's supervisor for its planner and merge helpers."""

    workdir: Path

    @property
    def run_dir(self) -> Path: ...

    def member_env(self, spec: MemberSpec, attempt: int, **extra: str) -> dict[str, str]:
        """A member's environment: no provider keys, its identity, the gateway."""
        ...

    def on_status(self, state: MemberState, event: dict[str, Any]) -> None:
        """A member's status line arrived (the processes' callback)."""
        ...

    def emit(self, kind: str, member: str | None = None, record: bool = True, **data: Any) -> None:
        """Tell observers; lifecycle kinds also go to events.jsonl as the parent."""
        ...


@runtime_checkable
class RunContext(HelperHost, HordeControls, Protocol):
    """One run as its phases see it: where it lives, its members, its end, and the
    operations a phase performs on it."""

    # -- what the run is
    run_id: str
    horde_dir: Path
    settings: Settings
    request: RunRequest
    specs: list[MemberSpec]
    sandbox: SandboxPolicy
    parent: HordeStore | None
    """The run's own store (actor `parent`), open from the start of the lifecycle."""

    # -- where it stands
    members: dict[str, MemberState]
    procs: dict[str, MemberProcess]
    tasks: dict[str, asyncio.Task[int]]
    gateway: GatewayHandle | None
    started: float
    deadline_from: float | None
    """When the deadline counts from if not `started` (a one-member continuation)."""
    one_member: str | None
    """A one-member continuation's member (`resume RUN --member`): no repair follows."""
    """When the deadline counts from if not `started` (a one-member continuation)."""
    resumed_at: list[float]
    reattach: str | None
    """`cd FOLDER && horde-tui attach RUN` when a detached process carries the run."""
    canary: str
    """The canary's result as the report says it: `not run`, `ok`, `failed: ...`."""
    solved_seen: dict[str, float]
    """Answer keys (`round:by`, `reopened:N`) already announced, with when."""
    confirms: ConfirmDesk
    """Confirm mode's commands waiting for a person: a member waiting is not stalled."""
    forecast: dict[str, Any] | None
    """The `forecast` event's data once the canary passed (`supervisor.forecast`)."""

    # -- how it ends (a phase may decide these)
    stop: StopState | None
    hard_stopped: bool
    halted: asyncio.Event
    """Set when the whole run is stopped hard: a finalize helper at work ends at once."""
    outcome: str | None
    diagnosis: str

    def running(self) -> list[str]:
        """Members whose session is running now."""
        ...

    def select(self, targets: tuple[Target, ...]) -> list[str]:
        """The run's members that `targets` name."""
        ...

    def closed(self) -> str:
        """Why no session may start any more after a stop ('' while one may)."""
        ...

    async def continue_session(self, name: str, asked: bool = False) -> bool:
        """Carry the member's newest session on from its transcript."""
        ...

    async def spawn(self, name: str, brief: str = "", **env: str) -> bool:
        """Start the member's next session (a new attempt), with an optional brief;
        False, with nothing started, once the run is stopping (`closed`)."""
        ...

    async def start_gateway(self) -> None:
        """Start the run's model gateway (raises `GatewayStartError` with its line)."""
        ...

    async def stop_gateway(self) -> None: ...

    async def run_canary(self) -> bool:
        """member-1 alone until the model answers, one retry; False: the run ends."""
        ...

    async def await_output(self, name: str, timeout_s: float) -> bool:
        """Wait (bounded) for the member's first model output of this session."""
        ...

    def cancel_continuations(self) -> None:
        """Drop --until-stop sessions waiting to start."""
        ...

    async def record_exit(self, name: str, code: int) -> None:
        """Record a session's end while the run ends: no reset, no continuation."""
        ...

    # the controls a person sends come from `HordeControls`
