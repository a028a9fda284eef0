"""Controls from another shell: requests and answers through the run's `control/` folder.

`horde-tui stop-clean member-3` (in any shell) writes `control/req-<id>.json`; the live
supervisor picks it up within half a second, acts, and answers in `control/resp-<id>.json`.
Files, not sockets: nothing to bind, it works over SSH, and a person can see what was
asked. Which run is live (its `.live` marker) is `store.runs`'s to say.

Both sides are here: `ask` for the CLI and the screens, `answer_pending`/`serve` for a
run's supervisor and a swarm's alike (`ControlTaker`), so a request means the same
whoever sends it and whichever supervisor takes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from horde_tui.common.inputs import loads
from horde_tui.protocol.targets import TargetError, parse_targets
from horde_tui.store import identity
from horde_tui.store.paths import atomic_write_text

ACTIONS = ("status", "stop-hard", "stop-clean", "pause", "resume", "reset")
CONFIRM_ACTIONS = ("confirm", "approve", "refuse", "allow-all")
"""Confirm mode's requests (`supervisor/confirm.py` serves them): a member's `confirm`
(a command waiting for a person, its request file kept until decided) and a person's
decisions from another shell."""


@dataclass(frozen=True)
class ControlRequest:
    id: str
    action: str
    target: str = "all"
    grace_s: float | None = None
    postmortem: bool = False
    command: str | None = None
    """A `confirm` request's command line, its working directory and the asking
    member's pid (a request of a session that ended is dropped)."""
    cwd: str | None = None
    pid: int | None = None
    """For a person's request (`ask` sets it), the asking process: a confirm-mode
    decision from inside a live member's process tree is refused (`decider_refusal`)."""
    session: bool = False
    """A `reset` that carries the member's session on from its transcript instead of
    starting a fresh one (`horde-tui resume RUN --member member-N` of a live run)."""


def submit(run_dir: Path, request: ControlRequest) -> Path:
    folder = run_dir / "control"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"req-{request.id}.json"
    atomic_write_text(path, json.dumps(request.__dict__) + "\n")
    return folder / f"resp-{request.id}.json"


def new_request(
    action: str,
    target: str = "all",
    grace_s: float | None = None,
    postmortem: bool = False,
    session: bool = False,
) -> ControlRequest:
    return ControlRequest(
        f"{time.time():.6f}-{secrets.token_hex(3)}",
        action,
        target,
        grace_s,
        postmortem,
        session=session,
    )


ANSWER_TIMEOUT_S = 15.0
"""How long a control request waits for the supervisor's answer."""


def wait_response(path: Path, timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any] | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def pending_requests(run_dir: Path) -> list[tuple[Path, ControlRequest | str]]:
    """Requests waiting in `control/`, oldest first; a malformed one comes back as text."""
    folder = run_dir / "control"
    out: list[tuple[Path, ControlRequest | str]] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("req-*.json")):
        try:
            data = loads(path.read_text())
            req = ControlRequest(**data)
        except (OSError, ValueError, TypeError) as exc:
            out.append((path, f"malformed control request {path.name}: {exc}"))
            continue
        out.append((path, req))
    return out


def answer(
    run_dir: Path, request_path: Path, request_id: str, ok: bool, text: str, **extra: Any
) -> None:
    """Write the response (`extra`: more fields, a confirm's `decision`), then drop the request."""
    atomic_write_text(
        run_dir / "control" / f"resp-{request_id}.json",
        json.dumps({"ok": ok, "text": text, **extra}) + "\n",
    )
    request_path.unlink(missing_ok=True)


def ask(
    folder: Path,
    request: ControlRequest,
    timeout_s: float = ANSWER_TIMEOUT_S,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, Any] | None:
    """Leave `request` in `folder/control/` and wait for the answer (None: none came).

    Blocks up to `timeout_s`: call it from a thread, never the UI loop. The wait is cut
    into short slices so `cancelled` (the app quitting) never waits out a request.
    """
    path = submit(folder, dataclasses.replace(request, pid=request.pid or os.getpid()))
    deadline = time.monotonic() + timeout_s
    while not cancelled():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        answer = wait_response(path, min(0.2, left))
        if answer is not None:
            return answer
    return None


# -- the supervisor's side ---------------------------------------------------------------------


class HordeControls(Protocol):
    """The controls a hosted supervisor takes, a run's `Supervisor` or a swarm's
    `SwarmSupervisor` alike (targets in `protocol/targets.py` syntax); each returns the
    line the person sees."""

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

    async def reset(self, target: str, session: bool = False) -> str:
        """Fresh sessions for the members `target` names; with `session`, their own
        sessions carried on from their transcripts instead."""
        ...


class ControlTaker(HordeControls, Protocol):
    """A supervisor that answers `control/` requests: a run's `Supervisor` or a swarm's
    `SwarmSupervisor` (which forwards each to the hordes the target names). Each
    returns the text the asker prints; one starting "refused:" is a refusal."""

    def status(self, target: str = "all") -> str: ...

    def decide(self, action: str, target: str) -> str:
        """A confirm-mode decision (`approve`, `refuse`, `allow-all`) on the commands
        waiting from the members `target` names."""
        ...


async def perform(taker: ControlTaker, request: ControlRequest) -> str:
    """Act on one request; the answer's text (a bad target is refused, in one line)."""
    action, target = request.action, request.target
    try:
        parse_targets(target)
        if action == "status":
            return taker.status(target)
        if action == "pause":
            return taker.pause(target)
        if action == "resume":
            return taker.resume(target)
        if action == "stop-clean":
            return taker.stop_clean(target, request.grace_s, request.postmortem)
        if action == "stop-hard":
            return await taker.stop_hard(target)
        if action == "reset":
            return await taker.reset(target, request.session)
        if action in CONFIRM_ACTIONS[1:]:
            return decider_refusal(request.pid) or taker.decide(action, target)
    except TargetError as exc:
        return f"refused: {exc}"
    return f"refused: unknown control {action!r}; use one of {', '.join(ACTIONS)}"


def decider_refusal(pid: int | None) -> str | None:
    """Why the process that asked for a confirm-mode decision may not make it, or None.

    Issue 11's identity rule, as the `horde` tool applies it to ledger writes: a
    process in a live member's tree (the member, its `bash`, anything they started) acts
    for that member, and a member must not approve its own command, nor another's.
    The limit is the ledger's: without the bubblewrap sandbox `.horde/` is writable to
    member commands, so a request file written by hand that names no process (or
    another one), or an answer file written in the member's place, still gets through.
    With the sandbox, `.horde/` is read-only to member commands and neither can be."""
    if pid is None:
        return None
    via = identity.member_above(pid)
    if via is None:
        return None
    return (
        f"refused: the deciding process runs under {via.member}'s shell (pid {pid}); a "
        "member cannot approve or refuse confirm-mode commands, its own or another's "
        "(identity rule); a person decides: in the app, at the run's terminal, or with "
        "horde-tui approve from their own shell"
    )


def refused(text: str) -> bool:
    """Whether an answer refuses: wholly (`refused: ...`) or in any horde's line of a
    swarm's (`h2: refused: ...`), so the CLI's exit status says so either way. The colon
    counts: `refused member-1: ...` is a confirm decision carried out, not a refusal."""
    return any(
        line.startswith("refused:") or line.partition(": ")[2].startswith("refused:")
        for line in text.splitlines()
    )


async def answer_pending(folder: Path, taker: ControlTaker, leave: tuple[str, ...] = ()) -> None:
    """Answer every request waiting in `folder/control/`, oldest first (a malformed one
    is dropped: it names no answer file to write), but for the actions in `leave`,
    which another loop answers (a run's confirm desk: `CONFIRM_ACTIONS`)."""
    for path, request in pending_requests(folder):
        if isinstance(request, str):
            path.unlink(missing_ok=True)
            continue
        if request.action in leave:
            continue
        text = await perform(taker, request)
        answer(folder, path, request.id, not refused(text), text)


async def serve(folder: Path, taker: ControlTaker, poll_s: float) -> None:
    """`answer_pending` every `poll_s` until cancelled (a supervisor with no tick loop
    of its own: the swarm's)."""
    while True:
        await answer_pending(folder, taker)
        await asyncio.sleep(poll_s)
