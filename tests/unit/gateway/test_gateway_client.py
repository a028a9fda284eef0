"""The one stdlib client for a run's gateway (`horde_tui.common.gatewayclient`): members,
the doctor's probe and the supervisor's joining of a shared gateway all use it.

A real server (`httpserve`, as the gateway's) on 127.0.0.1; the client runs in a worker
thread, as its callers run it, so the server's loop keeps serving.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
from pathlib import Path

import pytest
from support.gateway import closed_port

from horde_tui.common.gatewayclient import GatewayClient, GatewayError, error_message
from horde_tui.common.httpserve import Request, Response, serve


async def echo(request: Request) -> Response:
    if request.path == "/text":
        return Response(body="not json")
    if request.path == "/refuse":
        return Response(429, {"error": {"message": "slow\n down", "type": "rate_limit"}})
    return Response(
        body={
            "method": request.method,
            "member": request.headers.get("x-horde-member"),
            "auth": request.headers.get("authorization"),
            "body": request.json() if request.body else None,
        }
    )


async def test_requests_carry_token_and_member_and_share_one_socket() -> None:
    server = await serve(echo)
    client = GatewayClient(server.url, "tok", "member-2", timeout_s=10)
    try:
        status, got = await asyncio.to_thread(client.request, "GET", "/health", None, 5)
        assert status == 200
        assert got == {"method": "GET", "member": "member-2", "auth": "Bearer tok", "body": None}
        status, got = await asyncio.to_thread(client.post, "/v1/runs", {"a": [1]})
        assert (status, got["method"], got["body"]) == (200, "POST", {"a": [1]})
        assert server.open_connections == 1  # kept alive across both calls
        assert await asyncio.to_thread(client.request, "GET", "/text") == (200, {})
        status, refused = await asyncio.to_thread(client.request, "GET", "/refuse")
        assert status == 429 and error_message(refused) == "slow down"
    finally:
        client.close()
        await server.close()


async def test_a_members_chat_raises_the_gateways_error_in_one_line() -> None:
    server = await serve(echo)
    client = GatewayClient(server.url + "/", "tok", "member-1", timeout_s=10)
    try:
        answer = await asyncio.to_thread(client.chat, [{"role": "user", "content": "hi"}], [])
        assert answer["body"]["model"] == "horde" and answer["member"] == "member-1"
    finally:
        client.close()
        await server.close()

    async def spent(request: Request) -> Response:
        return Response(402, {"error": {"message": "spent", "type": "budget"}})

    refusing = await serve(spent)
    client = GatewayClient(refusing.url, "tok", "member-1", timeout_s=10)
    try:
        with pytest.raises(GatewayError) as caught:
            await asyncio.to_thread(client.chat, [], [])
        assert (caught.value.status, caught.value.kind, caught.value.message) == (
            402,
            "budget",
            "spent",
        )
    finally:
        client.close()
        await refusing.close()


def test_a_gateway_that_is_not_there_is_an_oserror() -> None:
    for url in (f"http://127.0.0.1:{closed_port()}", "ftp://127.0.0.1:1", "nowhere"):
        client = GatewayClient(url, "tok", timeout_s=5)
        with pytest.raises(OSError):
            client.request("GET", "/health")
        with pytest.raises(GatewayError) as caught:
            client.chat([], [])
        assert caught.value.kind == "connection_error"


@pytest.mark.parametrize(
    "module",
    [
        "horde_tui.member.__main__",
        "horde_tui.member.loop",
        "horde_tui.supervisor.processes",
        "horde_tui.commands.doctor.checks",
    ],
)
def test_members_the_doctor_and_the_supervisor_call_the_gateway_through_the_one_client(
    module: str,
) -> None:
    """Issue 31: one client instead of three (the member's own, the doctor's urllib
    calls, the supervisor's http.client posts)."""
    source = Path(str(importlib.import_module(module).__file__)).read_text()
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
    assert "horde_tui.common.gatewayclient" in imported
    assert not imported & {"http.client", "urllib.request", "httpx", "aiohttp"}


async def test_a_streamed_chat_hands_on_its_text_and_returns_the_whole_answer() -> None:
    """`chat(on_delta=...)` (the ask analyst, `HORDE_STREAM=1`): each piece of text as it
    arrives, then the same answer a non-streamed call returns, tool calls and usage whole."""
    from horde_tui.stubmodel import start_stub

    text = "The finding F1 holds, and the long answer arrives in several pieces. " * 3
    call = {"name": "horde", "arguments": {"action": "list", "kind": "findings"}}
    steps = [{"content": text, "prompt_tokens": 7, "completion_tokens": 5}]
    steps.append({"content": "Looking.", "tool_calls": [call]})
    async with start_stub({"ask": steps}) as stub:
        client = GatewayClient(stub.url, "tok", "ask", timeout_s=10)
        pieces: list[str] = []
        try:
            hi = [{"role": "user", "content": "hi"}]
            answer = await asyncio.to_thread(client.chat, hi, [], pieces.append)
            called = await asyncio.to_thread(client.chat, hi, [], pieces.append)
        finally:
            client.close()
    assert len(pieces) > 2 and "".join(pieces) == text + "Looking."
    assert answer["choices"][0]["message"]["content"] == text
    assert answer["usage"]["prompt_tokens"] == 7 and answer["usage"]["completion_tokens"] == 5
    (tool,) = called["choices"][0]["message"]["tool_calls"]
    assert tool["function"]["name"] == "horde" and tool["id"]
    assert json.loads(tool["function"]["arguments"]) == call["arguments"]
    assert stub.stub.requests[0].body["stream"] is True
