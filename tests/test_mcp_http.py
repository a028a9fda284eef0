"""`horde-tui mcp --http`: the same server over streamable HTTP, behind a bearer token.

A real server process on a free loopback port, reached with the `mcp` SDK's own
streamable HTTP client. Without the token (or with a wrong one) every request is refused
with 401 and nothing is written; with it the `horde` tool works as over stdio. The token
is generated once per run, kept 0600 next to the run's files, and only its path is
printed.
"""

from __future__ import annotations

import stat
import urllib.error
import urllib.request
from typing import Any

import pytest
from support.mcpclient import call, events, http_server, http_session

RUN = "r1"
INIT = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}'
)


def post(url: str, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        data=INIT,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_without_the_token_refused_with_it_the_tool_works(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    token_file = horde.root / "runs" / RUN / "mcp-token"

    with http_server(horde.workdir, "--member", "ext-1", "--run", RUN) as server:
        token = token_file.read_text().strip()
        missing = post(server.url, {})
        wrong = post(server.url, {"Authorization": "Bearer " + "x" * 43})
        async with http_session(server.url, token) as session:
            tools = [t.name for t in (await session.list_tools()).tools]
            added = await call(session, "idea", text="Audit app/web/login.py")

    assert server.url.startswith("http://127.0.0.1:")
    for status, body in (missing, wrong):
        assert status == 401
        assert body.startswith("refused: no valid bearer token")
    assert tools == ["horde"]
    assert added[0] is False and added[1].startswith("ok #2 added")
    assert horde.state("reader").ideas["#2"].by == "ext-1"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert str(token_file) in server.announced and token not in server.announced
    life = [(e["kind"], e["member"]) for e in events(horde.workdir, RUN) if "kind" in e]
    assert life == [("member-join", "ext-1"), ("member-leave", "ext-1")]  # SIGTERM: a clean leave


async def test_the_token_from_the_environment_is_used_and_never_written(horde: Any) -> None:
    horde.store().ensure_run(RUN)  # `mcp --run` names a run that exists
    token = "a-long-enough-shared-secret-0123"

    with http_server(
        horde.workdir, "--member", "ext-1", "--run", RUN, HORDE_MCP_TOKEN=token
    ) as server:
        refused = post(server.url, {"Authorization": "Bearer not-it-but-long-enough"})
        async with http_session(server.url, token) as session:
            added = await call(session, "idea", text="Audit app/web/login.py")

    assert refused[0] == 401
    assert added[0] is False and added[1].startswith("ok #1 added")
    assert not (horde.root / "runs" / RUN / "mcp-token").exists()
    assert token not in server.announced and "HORDE_MCP_TOKEN" in server.announced


@pytest.mark.parametrize("token", ["short", "has a space in it, long enough"])
def test_a_weak_token_from_the_environment_is_refused_in_one_line(horde: Any, token: str) -> None:
    horde.store().ensure_run(RUN)  # `mcp --run` names a run that exists
    import subprocess
    import sys

    from support.mcpclient import server_env

    done = subprocess.run(
        [sys.executable, "-m", "horde_tui", "mcp", "--http", "--port", "0", "--run", RUN],
        cwd=horde.workdir,
        env=server_env(horde.root, HORDE_MCP_TOKEN=token),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.startswith("horde-tui mcp: HORDE_MCP_TOKEN must be at least 16")
    assert len(done.stderr.strip().splitlines()) == 1
