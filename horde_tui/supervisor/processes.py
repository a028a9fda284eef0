"""Child processes of a run: the gateway and the members, as asyncio subprocesses.

Members lead their own sessions (their shell commands stay in them), write stderr to
`member-N.log`, and report on stdout one JSON object per line; the reader raises the
stream limit because a status line can carry a long final message. When a member's
process ends, for whatever reason (a SIGKILL from outside included), what is left of
its session (its commands) is ended too (`reaper.end_session`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.inputs import loads
from horde_tui.reaper import end_session
from horde_tui.store.members import MemberState

STREAM_LIMIT = 4 * 1024 * 1024
"""Bytes per status line; asyncio's 64 KiB default breaks on long final messages."""
COMMAND_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL of the commands a member left when its process ended."""


class MemberProcess:
    """One running member session."""

    def __init__(self, proc: asyncio.subprocess.Process, state: MemberState, log: Path) -> None:
        self.proc = proc
        self.state = state
        self.log = log
        self.stop_requested = False
        self.stalled = ""
        """Set by the stall check (how long the member was silent) before it stops the
        member, so the exit counts as a stall and says why."""
        self.reset_requested = False
        """Set by `Supervisor.reset` before it stops the member: the exit leads to a reset."""
        self.ended: asyncio.Task[int] | None = None
        """The status reader: done once the process ended and its session was ended."""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def signal(self, sig: int) -> None:
        try:
            os.kill(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def pause(self) -> None:
        """SIGTSTP: the member forwards SIGSTOP to its commands, then stops itself."""
        self.signal(signal.SIGTSTP)

    def resume(self) -> None:
        self.signal_group(signal.SIGCONT)

    async def stop_hard(self, grace_s: float = 5.0) -> None:
        """SIGTERM the group, SIGKILL after `grace_s`."""
        self.stop_requested = True
        self.signal_group(signal.SIGCONT)  # a paused member cannot handle SIGTERM
        self.signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), grace_s)
        except TimeoutError:
            self.signal_group(signal.SIGKILL)
            await self.proc.wait()
        if self.ended is not None:
            await asyncio.wait({self.ended})  # its commands are gone too


async def spawn_member(
    state: MemberState,
    env: dict[str, str],
    cwd: Path,
    log: Path,
    on_event: Callable[[MemberState, dict[str, Any]], None],
) -> tuple[MemberProcess, asyncio.Task[int]]:
    """Start a member session; return the handle and a task that ends with its exit code."""
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"--- spawn {state.name} attempt {state.attempt} at {time.strftime('%H:%M:%S')}\n")
    err = open(log, "ab")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "horde_tui.member",
        cwd=str(cwd),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=err,
        start_new_session=True,
        limit=STREAM_LIMIT,
    )
    err.close()
    handle = MemberProcess(proc, state, log)
    state.pid, state.status, state.started = proc.pid, "running", time.time()

    async def pump() -> int:
        assert proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except ValueError:  # a line over the limit: skip it, keep the member
                continue
            if not line:
                break
            try:
                event = loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                state.absorb(event)
                on_event(state, event)
        code = await proc.wait()
        await asyncio.to_thread(end_session, proc.pid, COMMAND_GRACE_S)
        return code

    handle.ended = asyncio.create_task(pump(), name=f"pump-{state.name}")
    return handle, handle.ended


class GatewayStartError(RuntimeError):
    """The run's gateway exited or stayed silent instead of listening; says what it said."""


@dataclass
class GatewayHandle:
    proc: asyncio.subprocess.Process
    url: str
    token: str


async def stop_gateway(gateway: GatewayHandle | None) -> None:
    """SIGTERM, then SIGKILL after 10 s, and reap it: a stopped run, swarm or doctor probe
    leaves no gateway behind."""
    if gateway is None or gateway.proc.returncode is not None:
        return
    gateway.proc.terminate()
    try:
        await asyncio.wait_for(gateway.proc.wait(), 10)
    except TimeoutError:
        gateway.proc.kill()
        await gateway.proc.wait()


async def spawn_gateway(
    run_dir: Path, env: dict[str, str], args: list[str], timeout_s: float = 60.0
) -> GatewayHandle:
    """Start the run's gateway and wait for its `listening on URL` line."""
    log = open(run_dir / "gateway.log", "ab")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "horde_tui.gateway",
        "--run-dir",
        str(run_dir),
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    assert proc.stdout is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout_s)).decode()
    except TimeoutError:
        line = ""
    if not line.startswith("listening on "):
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        detail = (run_dir / "gateway.log").read_text(errors="replace")[-2000:]
        raise GatewayStartError(f"the model gateway did not start: {detail.strip() or repr(line)}")
    return GatewayHandle(proc, line.split()[-1].strip(), env["HORDE_GATEWAY_TOKEN"])
