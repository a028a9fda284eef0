"""`horde-tui mcp --http`: the same server over streamable HTTP, behind a bearer token.

A real server process on a free loopback port, reached with the `mcp` SDK's own
streamable HTTP client. Without the token (or with a wrong one) every request is refused
with 401 and nothing is written; with it the `horde` tool works as over stdio. The token
is generated once per run, kept 0600 next to the run's files, and only its path is
printed.
"""

from __future__ import annotations

import json
import resource
import socket
import stat
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from support.cli import cli_argv
from support.mcpclient import call, events, http_server, http_session

RUN = "r1"


@pytest.fixture(autouse=True)
def run_exists(horde: Any) -> None:
    """`mcp --run` names a run that exists (it creates none)."""
    horde.store().ensure_run(RUN)
INIT = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}'
)


def post(url: str, headers: dict[str, str]) -> tuple[int, str, str]:
    """POST an `initialize`: the status, the body and any `WWW-Authenticate` challenge."""
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
            return response.status, response.read().decode(), ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers.get("WWW-Authenticate", "")


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
    for status, body, challenge in (missing, wrong):
        assert status == 401
        error = json.loads(body)["error"]
        assert error["message"].startswith("refused: no valid bearer token")
        # A plain Bearer challenge: no resource_metadata, so no OAuth discovery starts.
        assert challenge.startswith('Bearer realm="horde"')
        assert "resource_metadata" not in challenge
    assert tools == ["horde"]
    assert added[0] is False and added[1].startswith("ok #2 added")
    assert horde.state("reader").ideas["#2"].by == "ext-1"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert str(token_file) in server.announced and token not in server.announced
    life = [(e["kind"], e["member"]) for e in events(horde.workdir, RUN) if "kind" in e]
    assert life == [("member-join", "ext-1"), ("member-leave", "ext-1")]  # SIGTERM: a clean leave


async def test_the_token_from_the_environment_is_used_and_never_written(horde: Any) -> None:
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
    import subprocess

    from support.mcpclient import server_env

    done = subprocess.run(
        cli_argv("mcp", "--http", "--port", "0", "--run", RUN),
        cwd=horde.workdir,
        env=server_env(horde.root, HORDE_MCP_TOKEN=token),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.startswith("horde-tui mcp: HORDE_MCP_TOKEN must be at least 16")
    assert len(done.stderr.strip().splitlines()) == 1


async def test_the_bearer_scheme_is_case_insensitive(horde: Any) -> None:
    """RFC 7235: `bearer` names the same scheme as `Bearer`."""
    token = "a-long-enough-shared-secret-0123"

    with http_server(
        horde.workdir, "--member", "ext-1", "--run", RUN, HORDE_MCP_TOKEN=token
    ) as server:
        lower = post(server.url, {"Authorization": f"bearer {token}"})
        wrong = post(server.url, {"Authorization": "bearer not-it-but-long-enough"})

    assert lower[0] == 200, lower
    assert wrong[0] == 401


def test_oauth_discovery_finds_no_authorization_server(horde: Any) -> None:
    """An OAuth client's discovery gets a 404 with the reason, not a login flow."""
    with http_server(horde.workdir, "--member", "ext-1", "--run", RUN) as server:
        base = server.url.removesuffix("/mcp")
        answers = []
        for path in ("oauth-protected-resource/mcp", "oauth-authorization-server"):
            try:
                urllib.request.urlopen(f"{base}/.well-known/{path}", timeout=30)
            except urllib.error.HTTPError as exc:
                answers.append((exc.code, json.loads(exc.read())["error"]["message"]))

    assert [code for code, _ in answers] == [404, 404]
    assert all("bearer token" in message for _, message in answers)


def fixed_descriptor_limit() -> None:
    """In the server's child: 1,024 descriptors, soft and hard, so it cannot raise them."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def lowered_soft_limit() -> None:
    """In the server's child: the common 1,024 soft limit, the hard one kept."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_the_server_raises_its_descriptor_limit_at_start(horde: Any) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] <= 1024:
        pytest.skip("the hard descriptor limit is too low to show the raise")
    with http_server(
        horde.workdir, "--member", "ext-1", "--run", RUN, preexec_fn=lowered_soft_limit
    ) as server:
        limits = f"/proc/{server.proc.pid}/limits"
        with open(limits) as fh:
            line = next(x for x in fh if x.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    assert soft == hard, line


async def test_idle_connections_past_the_descriptor_limit_leave_it_answering(
    horde: Any,
) -> None:
    """1,100 idle unauthenticated connections against 1,024 descriptors wedged the old
    server for good (CLOSE_WAIT, every call timed out). Now the per-client cap closes the
    oldest idle ones; once they are released an authorised call answers within 2 s."""
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1300:
        pytest.skip("this process cannot hold 1,100 sockets")
    token = "a-long-enough-shared-secret-0123"
    with http_server(
        horde.workdir,
        "--member",
        "ext-1",
        "--run",
        RUN,
        preexec_fn=fixed_descriptor_limit,
        HORDE_MCP_TOKEN=token,
    ) as server:
        host, port = server.url.removeprefix("http://").removesuffix("/mcp").split(":")
        idle = []
        try:
            for _ in range(1100):
                idle.append(socket.create_connection((host, int(port)), timeout=5))
        finally:
            for sock in idle:
                sock.close()
        started = time.monotonic()
        async with http_session(server.url, token) as session:
            added = await call(session, "idea", text="Audit app/web/login.py")
        took = time.monotonic() - started
        alive = server.proc.poll()

    assert alive is None
    assert added[0] is False and added[1].startswith("ok #1 added")
    assert took < 2.0, f"{took:.1f} s"
