"""Child processes of a run: the gateway and the members, as asyncio subprocesses.

Members lead their own sessions (their shell commands stay in them), write stderr to
`member-N.log` (after the spawn line; the parent adds the final message once the process
ended), and report on stdout one JSON object per line; the reader raises the
stream limit because a status line can carry a long final message. When a member's
process ends, for whatever reason (a SIGKILL from outside included), what is left of
its session (its commands) is ended too (`reaper.end_session`).

A run given a shared gateway (`SHARED_GATEWAY_URL_ENV`, what `horde-tui eval` gives its
parallel runs) starts none: it joins that one with its own token and run directory
(`join_gateway`), so its usage, cost and budget stay its own, and it leaves the gateway
running when it ends (`stop_gateway`); the eval stops it.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common import keypipe
from horde_tui.common.gatewayclient import GatewayClient, error_message
from horde_tui.common.inputs import loads
from horde_tui.common.reaper import end_session
from horde_tui.sandbox.shell import scrubbed_env
from horde_tui.store.activity import StallClock
from horde_tui.store.members import MemberState
from horde_tui.store.paths import atomic_write_text

STREAM_LIMIT = 4 * 1024 * 1024
"""Bytes per status line; asyncio's 64 KiB default breaks on long final messages."""
COMMAND_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL of the commands a member left when its process ended."""
SHARED_GATEWAY_URL_ENV = "HORDE_SHARED_GATEWAY_URL"
SHARED_GATEWAY_TOKEN_ENV = "HORDE_SHARED_GATEWAY_TOKEN"
"""The shared gateway's own token, which joins runs; `_TOKEN` keeps it from members
(`scrubbed_env`)."""
JOIN_TIMEOUT_S = 60.0
"""How long joining may take: a budget makes the gateway price the model first, which
waits for its import of litellm."""


class MemberProcess:
    """One running member session."""

    def __init__(self, proc: asyncio.subprocess.Process, state: MemberState, log: Path) -> None:
        self.proc = proc
        self.state = state
        self.log = log
        self.stop_requested = False
        self.stalled = ""
        """Set by the stall check (how long the member wrote nothing to the ledger)
        before it stops the member, so the exit counts as `no-ledger-progress` and says why."""
        self.stall_clock = StallClock()
        """This session's time without ledger progress (`watch.check_stalls`)."""
        self.reset_requested = False
        """Set by `Supervisor.reset` before it stops the member: the exit leads to a reset."""
        self.carry_on = False
        """With `reset_requested`: the session is carried on from its transcript
        (`resume RUN --member`), not replaced by a fresh one."""
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
        await asyncio.to_thread(_log_final_message, log, state)
        return code

    handle.ended = asyncio.create_task(pump(), name=f"pump-{state.name}")
    return handle, handle.ended


def _log_final_message(log: Path, state: MemberState) -> None:
    """Append the session's final message (its last text, from its status lines) to its
    log after the exit line, as the reference's member log has it: what a member said
    last is there even when it was killed before it could say why it stopped."""
    text = state.final_message.strip()
    if not text:
        return
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"--- final message of {state.name} attempt {state.attempt}\n{text}\n")


class GatewayStartError(RuntimeError):
    """The run's gateway exited or stayed silent instead of listening; says what it said."""


@dataclass
class GatewayHandle:
    proc: subprocess.Popen[bytes] | None
    """None when the run joined a shared gateway: that process is not the run's."""
    url: str
    token: str
    shared_token: str = ""
    """A joined run: the shared gateway's own token, with which the run leaves it."""
    left: bool = False

    @property
    def running(self) -> bool:
        """Whether the run may still call it (a joined run: until it left)."""
        if self.proc is None:
            return not self.left
        return self.proc.poll() is None


async def stop_gateway(gateway: GatewayHandle | None) -> None:
    """SIGTERM, then SIGKILL after 10 s, and reap it: a stopped run, swarm or doctor probe
    leaves no gateway behind. A joined run leaves its shared gateway running instead."""
    if gateway is None or not gateway.running:
        return
    if gateway.proc is None:
        await leave_gateway(gateway)
        return
    await asyncio.to_thread(end_gateway, gateway.proc)


def end_gateway(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM, SIGKILL after `grace_s`, reaped (blocking)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def launch_gateway(
    folder: Path,
    env: dict[str, str],
    budget: float | None = None,
    *,
    shared: bool = False,
    timeout_s: float = 60.0,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a gateway process in `folder` (its `gateway.log` and `gateway.json`) and wait
    for its `listening on URL` line; return the process and the URL. The one starter, of a
    run's gateway and of an eval's `shared` one: provider keys reach it on a pipe
    (`keypipe`), never in its initial environment. Blocking (a run calls it in a thread);
    `GatewayStartError` carries the last line the gateway logged."""
    args = ["--run-dir", str(folder)]
    if shared:
        args.append("--shared")
    if budget is not None:
        args += ["--max-cost-usd", str(budget)]
    folder.mkdir(parents=True, exist_ok=True)
    plain, secrets_fd = keypipe.hand_over(env, scrubbed_env(env))
    try:
        with open(folder / "gateway.log", "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "horde_tui.gateway", *args],
                env=plain,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                pass_fds=() if secrets_fd is None else (secrets_fd,),
            )
    finally:
        if secrets_fd is not None:
            os.close(secrets_fd)
    line = _first_line(proc, timeout_s)
    if not line.startswith("listening on "):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        said = (folder / "gateway.log").read_text(errors="replace").strip().splitlines()
        raise GatewayStartError(
            f"the model gateway did not start: {said[-1].strip() if said else repr(line)}"
        )
    return proc, line.split()[-1].strip()


def _first_line(proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The gateway's first stdout line, or "" when it ends or stays silent too long."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    data = b""
    fd = proc.stdout.fileno()
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0].decode(errors="replace")


async def spawn_gateway(
    run_dir: Path, env: dict[str, str], budget: float | None = None, timeout_s: float = 60.0
) -> GatewayHandle:
    """Start the run's gateway with its `budget` (USD, None: none), `launch_gateway` in a
    thread; or, given a shared gateway in `env`, join that one instead."""
    if env.get(SHARED_GATEWAY_URL_ENV):
        return await join_gateway(run_dir, env, budget)
    proc, url = await asyncio.to_thread(launch_gateway, run_dir, env, budget, timeout_s=timeout_s)
    return GatewayHandle(proc, url, env["HORDE_GATEWAY_TOKEN"])


async def join_gateway(run_dir: Path, env: dict[str, str], budget: float | None) -> GatewayHandle:
    """Join the shared gateway named in `env` with the run's token (`HORDE_GATEWAY_TOKEN`),
    directory, `budget` (USD, None: none), model and endpoint (it refuses a run whose model is not its own);
    record it in `gateway.json` and `gateway.log` as a started gateway would."""
    url = env[SHARED_GATEWAY_URL_ENV].strip().rstrip("/")
    shared_token = env.get(SHARED_GATEWAY_TOKEN_ENV, "")
    token = env["HORDE_GATEWAY_TOKEN"]
    body = {
        "token": token,
        "dir": str(run_dir.resolve()),
        "max_cost_usd": budget,
        "model": env.get("HORDE_MODEL") or None,
        "api_base": env.get("HORDE_API_BASE") or None,
    }
    client = GatewayClient(url, shared_token, timeout_s=JOIN_TIMEOUT_S)
    try:
        status, answer = await asyncio.to_thread(client.post, "/v1/runs", body)
    except OSError as exc:
        raise GatewayStartError(
            f"the shared model gateway at {url} ({SHARED_GATEWAY_URL_ENV}) did not answer: "
            f"{exc}; start it again (horde-tui eval starts one), or unset "
            f"{SHARED_GATEWAY_URL_ENV} to give the run its own"
        ) from None
    finally:
        client.close()
    if status != 200:
        raise GatewayStartError(
            f"the shared model gateway at {url} refused this run: {error_message(answer)}"
        )
    pid = answer.get("pid") if isinstance(answer, dict) else None
    info = {"url": url, "pid": pid, "model": body["model"], "shared": True}
    atomic_write_text(run_dir / "gateway.json", json.dumps(info) + "\n")
    with open(run_dir / "gateway.log", "a", encoding="utf-8") as log:
        log.write(f"joined the shared gateway at {url} (pid {pid})\n")
    return GatewayHandle(None, url, token, shared_token)


async def leave_gateway(gateway: GatewayHandle) -> None:
    """Tell the shared gateway the run is over (its token is refused from then on); a
    gateway already gone needs no telling."""
    gateway.left = True
    client = GatewayClient(gateway.url, gateway.shared_token, timeout_s=JOIN_TIMEOUT_S)
    try:
        await asyncio.to_thread(client.post, "/v1/runs/end", {"token": gateway.token})
    except OSError:
        pass  # the eval stopped it first: nothing is left to leave
    finally:
        client.close()
