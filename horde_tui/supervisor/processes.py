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
import http.client
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from horde_tui.common import keypipe
from horde_tui.common.inputs import loads
from horde_tui.common.reaper import end_session
from horde_tui.member.shell import scrubbed_env
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
    proc: asyncio.subprocess.Process | None
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
        return self.proc.returncode is None


async def stop_gateway(gateway: GatewayHandle | None) -> None:
    """SIGTERM, then SIGKILL after 10 s, and reap it: a stopped run, swarm or doctor probe
    leaves no gateway behind. A joined run leaves its shared gateway running instead."""
    if gateway is None or not gateway.running:
        return
    if gateway.proc is None:
        await leave_gateway(gateway)
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
    """Start the run's gateway and wait for its `listening on URL` line; or, given a
    shared gateway in `env`, join that one instead."""
    if env.get(SHARED_GATEWAY_URL_ENV):
        return await join_gateway(run_dir, env, args)
    log = open(run_dir / "gateway.log", "ab")
    plain, secrets_fd = keypipe.hand_over(env, scrubbed_env(env))
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "horde_tui.gateway",
            "--run-dir",
            str(run_dir),
            *args,
            env=plain,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            pass_fds=() if secrets_fd is None else (secrets_fd,),
        )
    finally:
        log.close()
        if secrets_fd is not None:
            os.close(secrets_fd)
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


def _budget(args: list[str]) -> float | None:
    """The one gateway option a run passes (`--max-cost-usd X`), which a joined run
    brings to the shared gateway as its own budget."""
    budget, rest = None, list(args)
    while rest:
        flag = rest.pop(0)
        if flag != "--max-cost-usd" or not rest:
            raise GatewayStartError(f"a run on a shared gateway takes no gateway option {flag}")
        budget = float(rest.pop(0))
    return budget


def _post(url: str, path: str, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST JSON to the shared gateway (blocking: called in a thread); its status and
    its answer parsed. OSError (and http.client's errors) when it does not answer."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise OSError(f"not an http://HOST:PORT address: {url!r}")
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=JOIN_TIMEOUT_S)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request("POST", path, json.dumps(body), headers)
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        answer = loads(raw)
    except ValueError:
        answer = {}
    return resp.status, answer


def _message(answer: Any) -> str:
    error = answer.get("error") if isinstance(answer, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return " ".join(str(text or "no message").split())[:500]


async def join_gateway(run_dir: Path, env: dict[str, str], args: list[str]) -> GatewayHandle:
    """Join the shared gateway named in `env` with the run's token (`HORDE_GATEWAY_TOKEN`),
    directory, budget, model and endpoint (it refuses a run whose model is not its own);
    record it in `gateway.json` and `gateway.log` as a started gateway would."""
    url = env[SHARED_GATEWAY_URL_ENV].strip().rstrip("/")
    shared_token = env.get(SHARED_GATEWAY_TOKEN_ENV, "")
    token = env["HORDE_GATEWAY_TOKEN"]
    body = {
        "token": token,
        "dir": str(run_dir.resolve()),
        "max_cost_usd": _budget(args),
        "model": env.get("HORDE_MODEL") or None,
        "api_base": env.get("HORDE_API_BASE") or None,
    }
    try:
        status, answer = await asyncio.to_thread(_post, url, "/v1/runs", shared_token, body)
    except (OSError, http.client.HTTPException) as exc:
        raise GatewayStartError(
            f"the shared model gateway at {url} ({SHARED_GATEWAY_URL_ENV}) did not answer: "
            f"{exc}; start it again (horde-tui eval starts one), or unset "
            f"{SHARED_GATEWAY_URL_ENV} to give the run its own"
        ) from None
    if status != 200:
        raise GatewayStartError(
            f"the shared model gateway at {url} refused this run: {_message(answer)}"
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
    try:
        await asyncio.to_thread(
            _post, gateway.url, "/v1/runs/end", gateway.shared_token, {"token": gateway.token}
        )
    except (OSError, http.client.HTTPException):
        pass  # the eval stopped it first: nothing is left to leave
