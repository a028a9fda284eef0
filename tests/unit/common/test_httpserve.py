"""The aiohttp-based server under the gateway and the stub model, and its guards.

Clients are the real ones where it matters (http.client, run in a worker thread so the
server's loop keeps serving) and raw sockets where a test needs bytes a polite client
would never send.
"""

from __future__ import annotations

import ast
import asyncio
import http.client
import json
import logging
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from horde_tui.common import httpserve
from horde_tui.common.httpserve import HttpServer, Limits, Request, Response, StreamResponse, serve

SMALL = Limits(
    max_body_bytes=64 * 1024,
    head_timeout_s=0.5,
    body_timeout_s=0.5,
    idle_timeout_s=1.0,
    max_connections_per_client=4,
)
"""Limits small enough to reach in a test; the head times out before the idle timer
(aiohttp's, armed at connect too), so a 408 shows the head timer is this module's."""


async def echo(request: Request) -> Response:
    """Answer with what was received, so a test can check the parsing."""
    return Response(
        body={
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "headers": request.headers,
            "body": request.body.decode(),
        }
    )


async def raw_exchange(server: HttpServer, data: bytes) -> bytes:
    """Send raw bytes, then read until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def body_of(raw: bytes) -> bytes:
    return raw.partition(b"\r\n\r\n")[2]


async def test_keep_alive_serves_two_requests_on_one_connection() -> None:
    server = await serve(echo)
    try:

        def two_requests() -> list[dict[str, object]]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            first_body = json.dumps({"a": 1})
            conn.request("POST", "/one?x=1&y=", body=first_body, headers={"X-Thing": "A"})
            first = conn.getresponse()
            assert first.status == 200
            assert first.getheader("Connection") is None
            first_payload = json.loads(first.read())
            sock = conn.sock
            conn.request("GET", "/two%20words")
            second = conn.getresponse()
            second_payload = json.loads(second.read())
            assert conn.sock is sock, "the client had to reconnect"
            conn.close()
            return [first_payload, second_payload]

        first, second = await asyncio.to_thread(two_requests)
        assert first["method"] == "POST"
        assert first["path"] == "/one"
        assert first["query"] == {"x": "1", "y": ""}
        assert first["headers"]["x-thing"] == "A"  # type: ignore[index]
        assert first["body"] == '{"a": 1}'
        assert second["path"] == "/two words"
    finally:
        await server.close()


async def test_connection_close_and_http10_close_after_the_response() -> None:
    server = await serve(echo)
    try:
        raw = await raw_exchange(server, b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status_of(raw) == 200
        assert b"\r\nConnection: close\r\n" in raw
        raw = await raw_exchange(server, b"GET /b HTTP/1.0\r\n\r\n")
        assert json.loads(body_of(raw))["path"] == "/b"
    finally:
        await server.close()


async def test_pipelined_requests_are_answered_in_order() -> None:
    server = await serve(echo)
    try:
        raw = await raw_exchange(
            server,
            b"POST /p1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            b"GET /p2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        assert raw.count(b"HTTP/1.1 200 OK") == 2
        assert raw.index(b'"/p1"') < raw.index(b'"/p2"')
    finally:
        await server.close()


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n folded: header\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ²\r\n\r\n".encode(), 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
            % (SMALL.max_body_bytes + 1),
            413,
        ),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 400),
    ],
    ids=[
        "garbage",
        "no-colon",
        "folded",
        "length-word",
        "length-superscript",
        "length-5000-digits",
        "length-twice",
        "length-over-cap",
        "header-too-long",
    ],
)
async def test_bad_requests_get_one_json_line_and_the_connection_closes(
    data: bytes, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    server = await serve(echo, limits=SMALL)
    try:
        with caplog.at_level(logging.DEBUG):
            raw = await raw_exchange(server, data)
        assert status_of(raw) == status, raw[:300]  # and then closed: read to its end
        error = json.loads(body_of(raw))["error"]
        assert error["type"] == "invalid_request_error"
        assert "\n" not in error["message"] and len(error["message"]) < 300
        assert not [r for r in caplog.records if r.exc_info], "no traceback for bad input"
    finally:
        await server.close()


async def test_a_chunked_body_is_read_and_capped() -> None:
    server = await serve(echo, limits=SMALL)
    try:
        raw = await raw_exchange(
            server,
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            b"3\r\nabc\r\n0\r\n\r\n",
        )
        assert json.loads(body_of(raw))["body"] == "abc"
        piece = b"%x\r\n%b\r\n" % (1000, b"z" * 1000)
        raw = await raw_exchange(
            server,
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + piece * 70
            + b"0\r\n\r\n",
        )
        assert status_of(raw) == 413
    finally:
        await server.close()


async def test_a_long_header_line_within_the_limit_is_accepted() -> None:
    server = await serve(echo)
    try:
        token = "t" * 8000
        raw = await raw_exchange(
            server,
            b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %b\r\nConnection: close\r\n\r\n"
            % token.encode(),
        )
        assert json.loads(body_of(raw))["headers"]["authorization"] == f"Bearer {token}"
    finally:
        await server.close()


async def test_expect_100_continue_is_answered_before_the_body_is_sent() -> None:
    server = await serve(echo)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(
            b"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(b"data")
        raw = await asyncio.wait_for(reader.read(), timeout=10)
        assert json.loads(body_of(raw))["body"] == "data"
    finally:
        writer.close()
        await server.close()


async def test_a_failing_handler_becomes_a_500_json_error_and_the_connection_survives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(request: Request) -> Response:
        if request.path == "/boom":
            raise RuntimeError("kaput")
        return Response(body="fine")

    server = await serve(handler)
    try:

        def two_requests() -> tuple[int, bytes, str | None, bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            conn.request("GET", "/boom")
            failed = conn.getresponse()
            failed_body = failed.read()
            conn.request("GET", "/ok")
            ok = conn.getresponse()
            result = (failed.status, failed_body, failed.getheader("Content-Type"), ok.read())
            conn.close()
            return result

        with caplog.at_level(logging.ERROR, logger="horde_tui.common.httpserve"):
            status, body, content_type, after = await asyncio.to_thread(two_requests)
        assert status == 500
        assert content_type == "application/json"
        error = json.loads(body)["error"]
        assert error["type"] == "server_error"
        assert "RuntimeError: kaput" in error["message"]
        assert after == b"fine"
        assert any(
            r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in caplog.records
        ), "the traceback was not logged"
    finally:
        await server.close()


async def test_response_bodies_headers_and_status() -> None:
    async def handler(request: Request) -> Response:
        bodies: dict[str, Response] = {
            "/text": Response(201, "héllo", {"X-Extra": "1"}),
            "/bytes": Response(body=b"\x00\x01"),
            "/list": Response(body=[1, 2]),
            "/typed": Response(body="{}", headers={"content-type": "application/json"}),
            "/odd": Response(599),
        }
        return bodies[request.path]

    server = await serve(handler)
    try:

        def fetch_all() -> dict[str, tuple[int, str | None, str | None, bytes]]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            out = {}
            for path in ("/text", "/bytes", "/list", "/typed", "/odd"):
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
                out[path] = (
                    resp.status,
                    resp.getheader("Content-Type"),
                    resp.getheader("X-Extra"),
                    body,
                )
            conn.close()
            return out

        got = await asyncio.to_thread(fetch_all)
        assert got["/text"] == (201, "text/plain; charset=utf-8", "1", "héllo".encode())
        assert got["/bytes"] == (200, "application/octet-stream", None, b"\x00\x01")
        assert got["/list"] == (200, "application/json", None, b"[1, 2]")
        assert got["/typed"][1] == "application/json"
        assert got["/odd"] == (599, None, None, b"")
    finally:
        await server.close()


async def read_chunk(reader: asyncio.StreamReader) -> bytes:
    """One chunk of a chunked body; b"" for the terminating chunk."""
    size = int((await asyncio.wait_for(reader.readline(), timeout=10)).strip(), 16)
    data = await reader.readexactly(size + 2)
    assert data.endswith(b"\r\n")
    return data[:-2]


async def test_stream_chunks_arrive_one_by_one_before_the_stream_ends() -> None:
    proceed = asyncio.Event()
    finished = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        await proceed.wait()  # held until the client has seen the first chunk
        yield b""
        yield b"data: two\n\n"
        finished.set()

    async def handler(request: Request) -> StreamResponse:
        return StreamResponse(chunks())

    server = await serve(handler)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Transfer-Encoding: chunked" in head
        assert b"Content-Type: text/event-stream" in head
        assert await read_chunk(reader) == b"data: one\n\n"
        assert not finished.is_set()
        proceed.set()
        assert await read_chunk(reader) == b"data: two\n\n"
        assert await read_chunk(reader) == b""
        writer.write(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")  # still alive: a second stream
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    finally:
        writer.close()
        await server.close()


async def test_a_stream_that_fails_midway_is_cut_without_the_final_chunk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"partial"
        raise RuntimeError("upstream died")

    async def handler(request: Request) -> StreamResponse:
        return StreamResponse(chunks(), headers={"Content-Type": "application/x-ndjson"})

    server = await serve(handler)
    try:
        with caplog.at_level(logging.ERROR, logger="horde_tui.common.httpserve"):
            raw = await raw_exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"Content-Type: application/x-ndjson" in raw
        assert b"text/event-stream" not in raw
        assert raw.endswith(b"7\r\npartial\r\n"), "the terminating chunk must not be sent"
        assert any("stream failed" in r.getMessage() for r in caplog.records)
    finally:
        await server.close()


async def test_close_ends_idle_keep_alive_connections_and_stops_listening() -> None:
    server = await serve(echo)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    await server.close()
    rest = await asyncio.wait_for(reader.read(), timeout=10)
    assert rest.startswith(b"{")  # the body of the answered request, then EOF
    writer.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", server.port)
    await server.close()  # twice is harmless


def test_request_json_raises_value_error_on_bad_or_empty_bodies() -> None:
    assert Request("POST", "/", body=b'{"a": [1]}').json() == {"a": [1]}
    for body in (b"", b"{nope", b"\xff\xfe\x00", b"[" * 50_000 + b"]" * 50_000):
        with pytest.raises(ValueError):
            Request("POST", "/", body=body).json()


async def test_url_names_the_bound_port() -> None:
    server = await serve(echo)
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


# -- the guards: the head before the body, timeouts, HEAD, paths, the connection cap ------


async def read_all(reader: asyncio.StreamReader, timeout: float = 10) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout=timeout)


async def test_authorize_refuses_on_the_head_without_waiting_for_the_body() -> None:
    """The old server read a whole body before the token could be checked."""
    seen: list[str] = []

    def authorize(request: Request) -> Response | None:
        if request.headers.get("authorization") == "Bearer good":
            return None
        assert request.body == b"", "authorize must see the head only"
        return Response(401, {"error": {"message": "no", "type": "auth_error"}})

    async def handler(request: Request) -> Response:
        seen.append(request.path)
        return Response(body="in")

    server = await serve(handler, authorize=authorize, limits=SMALL)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        # 10 MB announced, not one byte of it sent: the answer may not wait for it.
        writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
        raw = await read_all(reader, timeout=5)
        assert status_of(raw) == 401
        assert b"\r\nConnection: close\r\n" in raw
        # A 100-continue client is refused before it is told to send its body.
        raw = await raw_exchange(
            server,
            b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
        )
        assert raw.startswith(b"HTTP/1.1 401 ")
        raw = await raw_exchange(
            server,
            b"POST /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 2\r\n"
            b"Connection: close\r\n\r\nok",
        )
        assert body_of(raw) == b"in"
        assert seen == ["/x"]
    finally:
        writer.close()
        await server.close()


async def drip(writer: asyncio.StreamWriter, data: bytes, answered: asyncio.Task[bytes]) -> None:
    """Send `data` a byte every 50 ms until the server has answered and closed."""
    for byte in data:
        if answered.done():
            return
        writer.write(bytes([byte]))
        await asyncio.sleep(0.05)


async def test_a_request_head_dripped_slowly_times_out_with_a_408() -> None:
    server = await serve(echo, limits=SMALL)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        started = time.monotonic()
        answered = asyncio.create_task(read_all(reader))
        await drip(writer, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60, answered)
        raw = await answered
        assert time.monotonic() - started < 2.5, "the drip (3 s+) kept the head alive"
        assert status_of(raw) == 408
        assert "request head not complete" in json.loads(body_of(raw))["error"]["message"]
    finally:
        writer.close()
        await server.close()


async def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout() -> None:
    server = await serve(echo, limits=SMALL)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        started = time.monotonic()
        await read_all(reader)  # EOF: the server closed it
        assert 0.3 < time.monotonic() - started < 5
        assert server.open_connections == 0
    finally:
        writer.close()
        await server.close()


async def test_a_body_dripped_slowly_times_out_with_a_408() -> None:
    server = await serve(echo, limits=SMALL)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        started = time.monotonic()
        answered = asyncio.create_task(read_all(reader))
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        await drip(writer, b"x" * 60, answered)
        raw = await answered
        assert time.monotonic() - started < 2.5, "the drip (3 s) kept the body alive"
        assert status_of(raw) == 408
        assert "request body not complete" in json.loads(body_of(raw))["error"]["message"]
    finally:
        writer.close()
        await server.close()


async def test_an_idle_kept_alive_connection_is_closed_and_so_is_a_half_sent_next_head() -> None:
    """After a response, aiohttp's keep-alive timer closes the connection: idle, or with
    the next head half sent (this guards that behaviour of the pinned aiohttp)."""
    server = await serve(echo, limits=SMALL)
    try:
        for tail in (b"", b"GET /second HTTP/1.1\r\nHost: x\r\nX-Half: "):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n" + tail)
            started = time.monotonic()
            raw = await read_all(reader)
            writer.close()
            assert raw.count(b"HTTP/1.1 200 OK") == 1
            assert 0.8 < time.monotonic() - started < 5
    finally:
        await server.close()


async def test_head_replies_have_no_body() -> None:
    server = await serve(echo)
    try:
        raw = await raw_exchange(
            server, b"HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert status_of(raw) == 200
        assert b"Content-Length: " in raw
        assert raw.endswith(b"\r\n\r\n")
    finally:
        await server.close()


async def test_a_double_slash_path_reaches_the_handler_as_sent() -> None:
    """`//v1/models` is a path, not a host and `/models`: handlers route it (to a 404)."""
    server = await serve(echo)
    try:
        raw = await raw_exchange(
            server, b"GET //v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert json.loads(body_of(raw))["path"] == "//v1/models"
    finally:
        await server.close()


async def test_over_the_per_client_cap_the_oldest_idle_connection_makes_room() -> None:
    release = asyncio.Event()

    async def handler(request: Request) -> Response:
        if request.path == "/hold":
            await release.wait()
        return Response(body=request.path)

    limits = Limits(head_timeout_s=30, idle_timeout_s=30, max_connections_per_client=4)
    server = await serve(handler, limits=limits)
    try:
        idle = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(4)]
        await asyncio.sleep(0.1)
        # A fifth connection, a member's call: served; the oldest idle one was closed.
        raw = await raw_exchange(
            server, b"GET /call HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert body_of(raw) == b"/call"
        assert await read_all(idle[0][0], timeout=5) == b""
        assert server.open_connections <= 4
        for _, writer in idle:
            writer.close()
        # Four connections each with a request under way: a fifth one is closed instead.
        busy = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(4)]
        for _, writer in busy:
            writer.write(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.sleep(0.2)
        assert await raw_exchange(server, b"GET /late HTTP/1.1\r\nHost: x\r\n\r\n") == b""
        release.set()
        for reader, writer in busy:
            assert body_of(await reader.readuntil(b"/hold")) == b"/hold"
            writer.close()
    finally:
        await server.close()


def test_raise_descriptor_limit_lifts_the_soft_limit_to_the_hard_one() -> None:
    """In a child, so the test process keeps its own limit."""
    script = (
        "import resource\n"
        "from horde_tui.common.httpserve import raise_descriptor_limit\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
        "print(raise_descriptor_limit() == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "True", done.stderr


async def test_a_member_client_carries_on_after_its_idle_connection_was_closed() -> None:
    """Members keep one connection across turns; a turn longer than the idle timeout
    finds it closed, and the client's one retry on a fresh connection answers."""
    from horde_tui.common.gatewayclient import GatewayClient

    async def handler(request: Request) -> Response:
        return Response(body={"choices": [{"message": {"content": "ok"}}]})

    server = await serve(handler, limits=SMALL)
    client = GatewayClient(server.url, "t", "member-1", timeout_s=10)
    try:
        first = await asyncio.to_thread(client.chat, [], [])
        await asyncio.sleep(SMALL.idle_timeout_s + 0.5)  # the server closes the idle socket
        assert server.open_connections == 0
        second = await asyncio.to_thread(client.chat, [], [])
        assert first == second
    finally:
        client.close()
        await server.close()


def aiohttp_reach(source: str) -> tuple[set[str], set[str]]:
    """The aiohttp modules `source` imports, and the aiohttp classes it subclasses."""
    tree = ast.parse(source)
    modules = {
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiohttp")
    }
    modules |= {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.startswith("aiohttp")
    }
    bases = {
        ast.unparse(base)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for base in node.bases
        if ast.unparse(base).startswith("web.") or ast.unparse(base) == "RequestHandler"
    }
    return modules, bases


def test_the_server_reaches_aiohttp_only_through_its_web_api() -> None:
    """Issue 31: the server is a `web.Application`; aiohttp's own server class is not
    subclassed, and only `aiohttp.web` is imported (a module below it is aiohttp's
    inside). The one override left is its protocol's malformed-head answer."""
    modules, bases = aiohttp_reach(Path(httpserve.__file__).read_text())
    assert modules == {"aiohttp"}, modules
    assert bases == {"web.RequestHandler"}, bases
    source = Path(httpserve.__file__).read_text()
    assert "web.Application(" in source and "client_max_size=" in source
