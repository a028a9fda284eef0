"""A minimal asyncio HTTP/1.1 server: just enough for an OpenAI-compatible endpoint.

Why this exists: the per-run gateway and the scripted stub model both serve a
chat-completions API on 127.0.0.1 to local clients (members, litellm, the openai SDK).
A web framework would be a large dependency for two handlers, so this module speaks the
subset of HTTP/1.1 those clients use, stdlib only:

- persistent connections (HTTP/1.1 default, `Connection: close` honoured, HTTP/1.0 only
  with `Connection: keep-alive`), so a member's client reuses one socket per turn loop;
- request bodies framed by `Content-Length` only; a chunked request body gets 411
  (the openai SDK, httpx and litellm always send a length);
- `Expect: 100-continue` answered, since curl sends it for large bodies;
- a size cap on the head and the body (431 / 413), 400 on anything malformed;
- whole responses with `Content-Length`, or streamed responses with
  `Transfer-Encoding: chunked` where each yielded piece is flushed as one chunk (SSE);
- a handler that raises becomes a 500 with an OpenAI-style JSON error body and its
  traceback is logged, so one bad request never takes the server down.

Everything is awaited: a slow client stalls only its own connection task.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from horde_tui.inputs import loads, whole_number

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body accepted (413 above): a 12-member run's contexts fit easily."""

READ_LIMIT = 1024 * 1024
"""The stream reader's line limit, which also caps the request head (431 above).

asyncio's 64 KiB default is too small for long header lines (large cookies, tokens).
"""


@dataclass
class Request:
    """One parsed HTTP request, body fully read."""

    method: str
    path: str
    """The percent-decoded path, without the query string."""
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    """Header names lower-cased; a repeated header's values joined with `, `."""
    body: bytes = b""

    def json(self) -> Any:
        """The body parsed as JSON; `ValueError` when it is empty or not valid JSON."""
        return loads(self.body)


@dataclass
class Response:
    """A complete response; dict and list bodies are sent as JSON."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class StreamResponse:
    """A response sent with chunked transfer encoding, one chunk per yielded piece.

    Content type defaults to `text/event-stream` because server-sent events are what it
    is for. If `chunks` raises after the head went out, the connection is closed without
    the terminating chunk, so the client sees a broken stream rather than a short one.
    """

    chunks: AsyncIterator[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response | StreamResponse]]


class _HttpError(Exception):
    """A request the server answers itself, before or instead of the handler."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error object, the shape every OpenAI-compatible client parses."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class HttpServer:
    """A listening server; `serve()` builds it. Tracks its connections so close() ends them."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self.host = ""
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL, for example `http://127.0.0.1:41234`."""
        return f"http://{self.host}:{self.port}"

    async def start(self, host: str, port: int) -> None:
        """Bind and listen; port 0 picks a free port, read back from `.port`."""
        self._server = await asyncio.start_server(self._connection, host, port, limit=READ_LIMIT)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]

    async def close(self) -> None:
        """Stop listening and end every open connection, idle or mid-response."""
        if self._server is None:
            return
        self._server.close()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # Only close() cancels a connection. Ending normally keeps Python 3.11's
            # asyncio.streams callback from logging the cancellation as an error.
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with suppress(ConnectionError, asyncio.CancelledError):  # see above
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request on the connection; True when the connection stays open."""
        try:
            parsed = await _read_request(reader, writer)
        except _HttpError as exc:
            kind = "invalid_request_error"
            await _send(writer, Response(exc.status, error_body(str(exc), kind)), keep=False)
            return False
        if parsed is None:
            return False
        request, keep = parsed
        try:
            response = await self._handler(request)
        except Exception as exc:
            log.exception("handler failed on %s %s", request.method, request.path)
            message = f"internal server error: {type(exc).__name__}: {exc}"
            response = Response(500, error_body(message, "server_error"))
        if isinstance(response, StreamResponse):
            return await _stream(writer, response, keep)
        await _send(writer, response, keep)
        return keep


async def serve(handler: Handler, host: str = "127.0.0.1", port: int = 0) -> HttpServer:
    """Start serving `handler` on host:port (0: a free port) and return the server."""
    server = HttpServer(handler)
    await server.start(host, port)
    return server


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[Request, bool] | None:
    """Read one request and whether the connection may stay open; None on a clean EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise _HttpError(400, "incomplete request head") from None
        return None
    except asyncio.LimitOverrunError:
        raise _HttpError(431, "request head too large") from None
    method, target, version, headers = _parse_head(head.decode("latin-1"))
    if "transfer-encoding" in headers:
        raise _HttpError(411, "chunked request bodies are not supported; send Content-Length")
    length_text = headers.get("content-length", "0").strip()
    length = whole_number(length_text)
    if length is None:
        raise _HttpError(400, "bad Content-Length")
    if length > MAX_BODY_BYTES:
        raise _HttpError(413, f"request body over {MAX_BODY_BYTES} bytes")
    if length and headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await reader.readexactly(length)
    tokens = {t.strip().lower() for t in headers.get("connection", "").split(",")}
    keep = "keep-alive" in tokens if version == "HTTP/1.0" else "close" not in tokens
    split = urlsplit(target)
    query = dict(parse_qsl(split.query, keep_blank_values=True))
    return Request(method, unquote(split.path) or "/", query, headers, body), keep


def _parse_head(head: str) -> tuple[str, str, str, dict[str, str]]:
    """Split a request head into method, target, version and lower-cased headers."""
    lines = head[:-4].split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise _HttpError(400, "malformed request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise _HttpError(400, "malformed header line")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return parts[0].upper(), parts[1], parts[2], headers


def _head(status: int, headers: dict[str, str], defaults: dict[str, str]) -> bytes:
    """The status line and headers; `headers` override `defaults` case-insensitively."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    given = {name.lower() for name in headers}
    merged = {k: v for k, v in defaults.items() if k.lower() not in given} | headers
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in merged.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _encode(body: bytes | str | dict[str, Any] | list[Any]) -> tuple[bytes, str | None]:
    """The body's bytes and its default content type."""
    if isinstance(body, bytes):
        return body, "application/octet-stream" if body else None
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    return json.dumps(body).encode(), "application/json"


async def _send(writer: asyncio.StreamWriter, response: Response, keep: bool) -> None:
    data, content_type = _encode(response.body)
    defaults = {"Content-Length": str(len(data))}
    if content_type:
        defaults["Content-Type"] = content_type
    if not keep:
        defaults["Connection"] = "close"
    writer.write(_head(response.status, response.headers, defaults) + data)
    await writer.drain()


async def _stream(writer: asyncio.StreamWriter, response: StreamResponse, keep: bool) -> bool:
    """Send a chunked response; True when it completed and the connection stays open."""
    defaults = {
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-cache",
        "Transfer-Encoding": "chunked",
    }
    if not keep:
        defaults["Connection"] = "close"
    chunks = response.chunks
    try:
        writer.write(_head(response.status, response.headers, defaults))
        await writer.drain()
        async for piece in chunks:
            if piece:  # an empty chunk would end the body early
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    except ConnectionError:
        return False
    except Exception:
        log.exception("stream failed after the response head was sent")
        return False
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    return keep
