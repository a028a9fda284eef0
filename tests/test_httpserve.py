"""The asyncio HTTP/1.1 server under the gateway and the stub model.

Clients are the real ones where it matters (http.client, run in a worker thread so the
server's loop keeps serving) and raw sockets where a test needs bytes a polite client
would never send.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
from collections.abc import AsyncIterator

import pytest

from horde_tui import httpserve
from horde_tui.httpserve import HttpServer, Request, Response, StreamResponse, serve


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
        raw = await raw_exchange(server, b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\n")
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
            b"POST /p1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
            b"GET /p2 HTTP/1.1\r\nConnection: close\r\n\r\n",
        )
        assert raw.count(b"HTTP/1.1 200 OK") == 2
        assert raw.index(b'"/p1"') < raw.index(b'"/p2"')
    finally:
        await server.close()


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n folded: header\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: ten\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n", 400),  # '²' in latin-1
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 411),
        (b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (httpserve.MAX_BODY_BYTES + 1), 413),
        (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * httpserve.READ_LIMIT + b"\r\n\r\n", 431),
    ],
)
async def test_bad_requests_get_an_error_and_the_connection_closes(
    data: bytes, status: int
) -> None:
    server = await serve(echo)
    try:
        raw = await raw_exchange(server, data)
        assert status_of(raw) == status
        assert b"\r\nConnection: close\r\n" in raw
        assert json.loads(body_of(raw))["error"]["type"] == "invalid_request_error"
    finally:
        await server.close()


async def test_header_lines_longer_than_asyncio_default_limit_are_accepted() -> None:
    server = await serve(echo)
    try:
        token = "t" * 100_000
        raw = await raw_exchange(
            server,
            b"GET / HTTP/1.1\r\nAuthorization: Bearer %b\r\nConnection: close\r\n\r\n"
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
            b"POST /big HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
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

        with caplog.at_level(logging.ERROR, logger="horde_tui.httpserve"):
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
        writer.write(b"GET /events HTTP/1.1\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"Transfer-Encoding: chunked" in head
        assert b"Content-Type: text/event-stream" in head
        assert await read_chunk(reader) == b"data: one\n\n"
        assert not finished.is_set()
        proceed.set()
        assert await read_chunk(reader) == b"data: two\n\n"
        assert await read_chunk(reader) == b""
        writer.write(b"GET /events HTTP/1.1\r\n\r\n")  # still alive: a second stream
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
        with caplog.at_level(logging.ERROR, logger="horde_tui.httpserve"):
            raw = await raw_exchange(server, b"GET / HTTP/1.1\r\n\r\n")
        assert b"Content-Type: application/x-ndjson" in raw
        assert b"text/event-stream" not in raw
        assert raw.endswith(b"7\r\npartial\r\n"), "the terminating chunk must not be sent"
        assert any("stream failed" in r.getMessage() for r in caplog.records)
    finally:
        await server.close()


async def test_close_ends_idle_keep_alive_connections_and_stops_listening() -> None:
    server = await serve(echo)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET / HTTP/1.1\r\n\r\n")
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
