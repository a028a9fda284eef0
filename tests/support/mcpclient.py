"""`horde-tui mcp` as an agent mounts it: a real server process reached with the `mcp`
SDK's own client (stdio or streamable HTTP), and the `horde` call helper the tests use."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from support.cli import cli_argv


def server_env(horde_dir: Path, **extra: str) -> dict[str, str]:
    """The environment an agent would start the server with: no host HORDE_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_DIR=str(horde_dir), **extra)
    return env


@asynccontextmanager
async def stdio_session(workdir: Path, *args: str) -> AsyncIterator[ClientSession]:
    """An initialized client session with `horde-tui mcp ARGS` started over stdio in
    `workdir` (its `.horde/`); the server ends when the session closes its stdin."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "horde_tui", "mcp", *args],
        env=server_env(workdir / ".horde"),
        cwd=str(workdir),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, action: str, **fields: Any) -> tuple[bool, str]:
    """One `horde` call: (is it an error, the one text it returned)."""
    result = await session.call_tool("horde", {"action": action, **fields})
    assert len(result.content) == 1, result
    block = result.content[0]
    assert block.type == "text", block
    return result.is_error, block.text


def events(workdir: Path, run: str) -> list[dict[str, Any]]:
    path = workdir / ".horde" / "runs" / run / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cli_tool(workdir: Path, actor: str, run: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The same call through `horde-tui tool` in a new process, as `actor`."""
    env = server_env(workdir / ".horde", HORDE_MEMBER=actor, HORDE_RUN=run)
    return subprocess.run(
        cli_argv("tool", *args),
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@dataclass
class HttpServer:
    """A running `horde-tui mcp --http` process and what it announced."""

    proc: subprocess.Popen[str]
    url: str
    announced: str
    """Its one stderr line: where it listens and where the token is (never the token)."""


@contextmanager
def http_server(
    workdir: Path,
    *args: str,
    preexec_fn: Callable[[], None] | None = None,
    **env: str,
) -> Iterator[HttpServer]:
    """`horde-tui mcp --http --port 0 ARGS` in `workdir`, ended with SIGTERM on exit;
    `preexec_fn` runs in the child before it starts (a lowered descriptor limit)."""
    proc = subprocess.Popen(
        cli_argv("mcp", "--http", "--port", "0", *args),
        cwd=workdir,
        env=server_env(workdir / ".horde", **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"at (http://\S+/mcp);", line)
        assert found, (line, proc.poll())
        yield HttpServer(proc, found.group(1), line)
    finally:
        proc.terminate()
        proc.wait(30)


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized client session over streamable HTTP with the bearer token."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
