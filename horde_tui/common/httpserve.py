"""The HTTP server under the gateway and the stub model: aiohttp's, guarded for local clients.

The gateway and the scripted stub model both serve a chat-completions API on 127.0.0.1,
where any local process can connect. The hand-written server this replaces read a whole
body before its handler could check the token (20 unauthenticated 31 MB bodies took the
gateway from 206 to 783 MB), had no timeouts, and fell over on odd heads; aiohttp.web
parses HTTP properly and litellm already installs it, so the gateway pays nothing more.

It is a `web.Application` run by a `web.AppRunner`: one catch-all route, a middleware,
`client_max_size` for the body cap and the runner's keep-alive and lingering settings.
What it adds:

- `authorize` sees the request head before any byte of the body is read (the route's
  `expect_handler` sees it before a `100 Continue` too); a refused request is answered at
  once and its connection closed;
- a body cap from `Content-Length` (413 before reading) and while reading (chunked:
  aiohttp's `client_max_size`);
- timeouts: a connection must complete its first request head within `head_timeout_s`
  (aiohttp has none), a body must arrive within `body_timeout_s` (408), and a kept-alive
  connection is closed after `idle_timeout_s` without a complete next head (aiohttp's
  keep-alive timer, which also fires while a head is half sent);
- a cap on connections per client address and in all: a new connection over it closes
  the oldest one with no request under way, so a flood of idle sockets cannot lock out
  a member, whose connection sends its request at once;
- OpenAI-style JSON error bodies, one line each, for what aiohttp refuses itself
  (malformed heads); a handler that raises becomes a 500 whose traceback is logged here
  and never sent;
- `raise_descriptor_limit()`, for the process that serves, at start.

aiohttp has no public hook for three of these: the head timer and the connection caps
live in `_Guarded`, which wraps each connection's protocol and sees only asyncio's
protocol methods; the JSON answer to a malformed head is the one override of aiohttp's
protocol class (`_Answering`, aio-libs/aiohttp issue 3287). tests/unit/common/test_httpserve.py
covers each.

Handlers see the same small `Request`/`Response`/`StreamResponse` types as before, so
the gateway and the stub know nothing of aiohttp.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import json
import logging
import resource
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from horde_tui.common.inputs import loads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """What one client may hold of a server; the defaults are for the gateway."""

    max_body_bytes: int = 32 * 1024 * 1024
    """Largest request body (413 above): a 12-member run's contexts fit easily."""
    head_timeout_s: float = 10.0
    """From connecting to a complete first request head; a real client sends it at once."""
    body_timeout_s: float = 60.0
    """From the head to the whole body (32 MB takes well under a second on loopback)."""
    idle_timeout_s: float = 60.0
    """A kept-alive connection with no complete next head is closed after this."""
    max_connections_per_client: int = 512
    """Open connections per client address; on loopback every process is one client."""
    max_connections: int = 2048
    """Open connections in all (lowered to fit the descriptor limit at `serve`)."""


RESERVED_DESCRIPTORS = 256
"""Descriptors kept out of the connection cap: provider calls, log and usage files, and
one burst of accepts (`BACKLOG`)."""
BACKLOG = 128
"""The listen backlog. asyncio accepts up to this many connections in one go before the
cap can close any, so it must fit in `RESERVED_DESCRIPTORS` with room to spare: at 512,
1,100 idle sockets against a 1,024-descriptor limit ran the server out (EMFILE)."""
LINGER_S = 1.0
"""After refusing a request whose body was not read, how long aiohttp reads and drops what
is still coming before closing: closing at once would reset the connection and could
lose the refusal the client has not read yet; discarding keeps nothing in memory."""


@dataclass
class Request:
    """One request, body fully read (empty when `authorize` sees it)."""

    method: str
    path: str
    """The percent-decoded path, without the query string."""
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    """Header names lower-cased; a repeated header's values joined with `, `."""
    body: bytes = b""
    gone: asyncio.Event | None = None
    """Set once the client's connection is closed (it gave up, or its process died).
    aiohttp does not cancel a handler then, so one whose work is only for this client
    can watch it (the gateway cancels an AI Horde job nobody will read)."""

    def json(self) -> Any:
        """The body parsed as JSON; `ValueError` when it is empty, not JSON, or nested too
        deeply to parse (`horde_tui.common.inputs.loads` turns the decoder's RecursionError into one)."""
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
Authorize = Callable[[Request], Response | None]
"""Sees the head (no body yet); a Response refuses the request, None lets it through."""


def error_body(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error object, the shape every OpenAI-compatible client parses;
    `param` names the request field refused, when one is."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def bearer_token(headers: dict[str, str]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None.

    The scheme is case-insensitive (RFC 7235 section 2.1: `bearer` is `Bearer`), so a
    client that lower-cases it is not refused for that.
    """
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def token_matches(given: str | None, expected: str) -> bool:
    """`given` is `expected`, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def unauthorized(reason: str, realm: str, headers: dict[str, str]) -> Response:
    """A 401 with the reason in an OpenAI-style JSON body and a plain Bearer challenge.

    The challenge names no `resource_metadata` and no authorization server (RFC 6750 and
    RFC 9728): the token is handed out by the person running the server, so an OAuth
    client has no login flow to start and shows the reason instead of a browser. The
    error code is sent only when a token was (RFC 6750 section 3.1).
    """
    challenge = f'Bearer realm="{realm}"'
    if "authorization" in headers:
        said = reason.replace("\\", "/").replace('"', "'")
        challenge += f', error="invalid_token", error_description="{said}"'
    return Response(
        401,
        error_body(reason, "auth_error", "invalid_token"),
        {"WWW-Authenticate": challenge},
    )


def listen_failure(exc: OSError, host: str, port: int) -> str:
    """Why a server could not listen on host:port, for the one line its command prints
    (`serve`, `gateway` and `mcp --http` alike); never a traceback."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is in use"
    return f"port {port} on {host} cannot be used ({exc.strerror or exc})"


def raise_descriptor_limit() -> int:
    """Raise this process's soft descriptor limit to its hard limit; return the soft one.

    At the common 1,024 soft limit, about a thousand idle local sockets left no descriptor
    for a member's call. Called once by a serving process at start.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # a container may refuse: the connection cap still fits the old limit
    return soft


def connection_cap(limits: Limits) -> int:
    """`limits.max_connections`, lowered to leave `RESERVED_DESCRIPTORS` free."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return limits.max_connections
    return max(16, min(limits.max_connections, soft - RESERVED_DESCRIPTORS))


_HEAD = web.RequestKey("head", Request)
"""A request's head as handlers see it, set once `_admit` checked it (from the expect
handler, or from the route's handler)."""


class _Refused(Exception):
    """A request the server answers itself, before or instead of the handler."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _refusal(status: int, message: str) -> web.Response:
    """A one-line OpenAI-style JSON error that closes its connection."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    response = web.json_response(error_body(message, kind), status=status)
    response.force_close()
    return response


class _Guarded(asyncio.Protocol):
    """One client connection: aiohttp's protocol for it (`inner`), with what aiohttp has
    no public hook for around it: when it opened, whether a request is under way, a timer
    that closes it if its first request head is not complete in time, the connection
    caps (`_Guard`), all through asyncio's public protocol methods.

    Everything the transport says is passed on to `inner` unchanged.
    """

    def __init__(self, guard: _Guard, inner: _Answering) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.busy = False
        self.served = 0
        self.gone = asyncio.Event()
        """Set when the connection is lost: `Request.gone` of its requests."""
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else ""
        self.inner.connection_made(transport)
        loop = asyncio.get_running_loop()
        self._head_timer = loop.call_later(self.guard.limits.head_timeout_s, self._head_late)
        self.guard.opened(self)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._stop_head_timer()
        self.gone.set()
        self.guard.forget(self)
        self.inner.connection_lost(exc)

    def request_started(self) -> None:
        self._stop_head_timer()
        self.busy = True

    def request_ended(self) -> None:
        self.busy = False
        self.served += 1

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        """No complete request head in time: say so in one 408 and close."""
        self._head_timer = None
        if self.busy or self.served:
            return
        seconds = self.guard.limits.head_timeout_s
        message = f"request head not complete within {seconds:g} s; send it at once"
        body = json.dumps(error_body(message, "invalid_request_error")).encode()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            head = (
                "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            transport.write(head.encode("latin-1") + body)
        self.close()


class _Answering(web.RequestHandler):
    """aiohttp's protocol, answering what it refuses itself (a malformed head, mostly) in
    one JSON line without a traceback: aiohttp does that in this method, which no
    middleware reaches (aio-libs/aiohttp issue 3287), and its instances take no new
    attributes, so this one override is the only subclass."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; cannot send an error")
        if status >= 500:
            log.error("request from %s failed", request.remote, exc_info=exc)
            return _refusal(status, "internal server error")
        detail = getattr(exc, "message", None) or message or str(exc or "")
        lines = (line.strip().rstrip(":") for line in str(detail).splitlines())
        first = next((line for line in lines if line), "")
        text = f"malformed request: {first[:200] or HTTPStatus(status).phrase}"
        log.debug("refused a request from %s: %s", request.remote, text)
        return _refusal(status, text)


class _Guard:
    """Every open connection, counted per client address for the caps."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.cap = connection_cap(limits)
        self.open: dict[_Guarded, None] = {}
        """Every counted connection, oldest first (dicts keep insertion order)."""
        self._by_peer: dict[str, dict[_Guarded, None]] = {}
        self._by_transport: dict[asyncio.BaseTransport, _Guarded] = {}

    def of(self, request: web.BaseRequest) -> _Guarded | None:
        """The connection a request came on (None once it is gone)."""
        transport = request.transport
        return None if transport is None else self._by_transport.get(transport)

    def opened(self, conn: _Guarded) -> None:
        assert conn.transport is not None
        self._by_transport[conn.transport] = conn
        mine = self._by_peer.setdefault(conn.peer, {})
        mine[conn] = None
        self.open[conn] = None
        if len(mine) > self.limits.max_connections_per_client:
            self._evict(mine, conn)
        if len(self.open) > self.cap:
            self._evict(self.open, conn)

    def forget(self, conn: _Guarded) -> None:
        """Stop counting a connection (closed, or chosen to close)."""
        self.open.pop(conn, None)
        if conn.transport is not None:
            self._by_transport.pop(conn.transport, None)
        mine = self._by_peer.get(conn.peer)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self._by_peer[conn.peer]

    def _evict(self, pool: dict[_Guarded, None], newcomer: _Guarded) -> None:
        """Close the oldest connection of `pool` with no request under way, one that never
        sent a request first; the newcomer itself when every other one is busy."""
        idle = [c for c in pool if c is not newcomer and not c.busy]
        victim = next((c for c in idle if not c.served), idle[0] if idle else newcomer)
        log.info("connection cap reached for %s: closing its oldest idle connection", victim.peer)
        self.forget(victim)
        victim.close()


class HttpServer:
    """A listening server; `serve()` builds it."""

    def __init__(
        self, handler: Handler, authorize: Authorize | None = None, limits: Limits | None = None
    ) -> None:
        self._handler = handler
        self._authorize = authorize
        self.limits = limits or Limits()
        self._guard = _Guard(self.limits)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self.host = ""
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL, for example `http://127.0.0.1:41234`."""
        return f"http://{self.host}:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections open now (for tests and benchmarks)."""
        return len(self._guard.open)

    async def start(self, host: str, port: int, sock: socket.socket | None = None) -> None:
        """Bind and listen; port 0 picks a free port, read back from `.port`. A bound
        `sock` is listened on instead (a command that must say its port before serving)."""
        app = web.Application(middlewares=[self._track], client_max_size=self.limits.max_body_bytes)
        app.router.add_route("*", "/{path:.*}", self._dispatch, expect_handler=self._expect)
        settings: dict[str, Any] = {
            "access_log": None,
            "keepalive_timeout": self.limits.idle_timeout_s,
            "lingering_time": LINGER_S,
        }
        self._runner = web.AppRunner(app, shutdown_timeout=0.1, **settings)
        await self._runner.setup()
        manager = self._runner.server
        assert manager is not None
        loop = asyncio.get_running_loop()

        # What `manager()` makes, with `_Answering` for aiohttp's class, wrapped; no site
        # takes a protocol factory, so the listener is asyncio's own.
        def guarded() -> asyncio.Protocol:
            return _Guarded(self._guard, _Answering(manager, loop=loop, **settings))

        try:
            if sock is not None:
                self._listener = await loop.create_server(guarded, sock=sock, backlog=BACKLOG)
            else:
                self._listener = await loop.create_server(guarded, host, port, backlog=BACKLOG)
        except OSError:
            await self._runner.cleanup()  # the port is taken: nothing is left set up
            self._runner = None
            raise
        self.host, self.port = self._listener.sockets[0].getsockname()[:2]

    async def close(self) -> None:
        """Stop listening and end every open connection, idle or mid-response."""
        if self._listener is None or self._runner is None:
            return
        self._listener.close()
        await self._runner.cleanup()
        for conn in list(self._guard.open):
            conn.close()
        await self._listener.wait_closed()
        self._listener = self._runner = None

    @web.middleware
    async def _track(
        self, raw: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Marks the connection busy while a request is under way (the head timer and the
        caps read it); aiohttp's own HTTP errors (an unroutable path) become JSON."""
        conn = self._guard.of(raw)
        if conn is not None:
            conn.request_started()
        try:
            return await handler(raw)
        except web.HTTPException as exc:
            return _refusal(exc.status, exc.text or exc.reason)
        finally:
            if conn is not None:
                conn.request_ended()

    def _head(self, raw: web.BaseRequest) -> Request:
        headers: dict[str, str] = {}
        for name, value in raw.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        request = Request(raw.method, raw.path, dict(raw.query), headers)
        conn = self._guard.of(raw)
        request.gone = conn.gone if conn is not None else asyncio.Event()
        return request

    def _admit(self, raw: web.Request) -> web.Response | None:
        """The head's checks, once per request: `authorize`, then the body cap from
        `Content-Length`. A refusal is answered before any byte of the body is read."""
        if _HEAD in raw:
            return None
        raw[_HEAD] = head = self._head(raw)
        refused = self._authorize(head) if self._authorize is not None else None
        if refused is not None:
            return _response(refused, close=True)
        cap = self.limits.max_body_bytes
        if raw.content_length is not None and raw.content_length > cap:
            return _refusal(413, f"request body over {cap} bytes")
        return None

    async def _expect(self, raw: web.Request) -> web.StreamResponse | None:
        """`Expect: 100-continue`: the head is checked before the client is told to send."""
        refused = self._admit(raw)
        if refused is not None:
            return refused
        if raw.headers.get("Expect", "").lower() == "100-continue" and raw.version >= (1, 1):
            await raw.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            raw.writer.output_size = 0  # the response proper has not started
        return None

    async def _dispatch(self, raw: web.Request) -> web.StreamResponse:
        refused = self._admit(raw)
        if refused is not None:
            return refused  # the body is never read
        request = raw[_HEAD]
        try:
            request.body = await self._read_body(raw)
        except _Refused as exc:
            return _refusal(exc.status, str(exc))
        try:
            response = await self._handler(request)
        except Exception as exc:
            log.exception("handler failed on %s %s", request.method, request.path)
            message = f"internal server error: {type(exc).__name__}: {exc}"
            response = Response(500, error_body(message, "server_error"))
        if isinstance(response, StreamResponse):
            return await _stream(raw, response)
        return await _send(raw, response)

    async def _read_body(self, raw: web.Request) -> bytes:
        """The whole body, within the size cap (`client_max_size`) and the body timeout."""
        if not raw.body_exists:
            return b""
        seconds = self.limits.body_timeout_s
        try:
            async with asyncio.timeout(seconds):
                return await raw.read()
        except web.HTTPRequestEntityTooLarge:
            raise _Refused(413, f"request body over {self.limits.max_body_bytes} bytes") from None
        except TimeoutError:
            raise _Refused(408, f"request body not complete within {seconds:g} s") from None


async def serve(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    authorize: Authorize | None = None,
    limits: Limits | None = None,
    sock: socket.socket | None = None,
) -> HttpServer:
    """Start serving `handler` on host:port (0: a free port), or on the bound `sock`, and
    return the server."""
    server = HttpServer(handler, authorize, limits)
    await server.start(host, port, sock)
    return server


_HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
"""An ASGI app's response headers this server sets itself."""


def asgi(app: Callable[..., Awaitable[None]], server: tuple[str, int]) -> Handler:
    """A handler that runs an ASGI 3 HTTP application (`horde-tui mcp --http`'s, from the
    MCP SDK) behind this server's guards: the head check, the caps and the timeouts.

    The app gets the request's body at once, then `http.disconnect` when the client's
    connection closes (`Request.gone`). A reply whose body comes in one piece is sent
    whole; one in several pieces (server-sent events) is streamed as it comes, and the
    app is cancelled if the client leaves first.
    """

    async def handle(req: Request) -> Response | StreamResponse:
        out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": req.body, "more_body": False}
            await (req.gone or asyncio.Event()).wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            await out.put(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": req.method,
            "scheme": "http",
            "path": req.path,
            "raw_path": req.path.encode(),
            "query_string": urlencode(req.query).encode(),
            "root_path": "",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in req.headers.items()],
            "client": None,
            "server": server,
        }

        async def run() -> None:
            try:
                await app(scope, receive, send)
            finally:
                await out.put(None)

        task = asyncio.ensure_future(run())
        start = await out.get()
        if start is None or start.get("type") != "http.response.start":
            if task.done() and task.exception() is not None:
                log.error(
                    "the app failed on %s %s", req.method, req.path, exc_info=task.exception()
                )
            task.cancel()
            return Response(500, error_body("internal server error", "server_error"))
        headers: dict[str, str] = {}
        for raw_name, raw_value in start.get("headers") or []:
            name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
            if name.lower() not in _HOP_HEADERS:
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
        status = int(start.get("status", 200))
        first = await out.get()
        if first is None or not first.get("more_body"):
            body = b"" if first is None else bytes(first.get("body", b""))
            return Response(status, body, headers)

        async def pieces() -> AsyncIterator[bytes]:
            message: dict[str, Any] | None = first
            ended = False
            try:
                while message is not None:
                    yield bytes(message.get("body", b""))
                    if not message.get("more_body"):
                        ended = True
                        return
                    message = await out.get()
                ended = True
            finally:
                if not ended:
                    task.cancel()  # the client left mid-stream

        return StreamResponse(pieces(), status, headers)

    return handle


def _encode(body: bytes | str | dict[str, Any] | list[Any]) -> tuple[bytes, str | None]:
    """The body's bytes and its default content type."""
    if isinstance(body, bytes):
        return body, "application/octet-stream" if body else None
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    return json.dumps(body).encode(), "application/json"


def _merged(defaults: dict[str, str], given: dict[str, str]) -> dict[str, str]:
    """`given` headers over `defaults`, names compared case-insensitively."""
    names = {name.lower() for name in given}
    return {k: v for k, v in defaults.items() if k.lower() not in names} | given


def _response(response: Response, close: bool = False) -> web.Response:
    """aiohttp's response for ours; `close` ends the connection after it."""
    data, content_type = _encode(response.body)
    defaults = {"Content-Type": content_type} if content_type else {}
    out = web.Response(
        status=response.status,
        reason=_reason(response.status),
        body=data,
        headers=_merged(defaults, response.headers),
    )
    if close:
        out.force_close()
    return out


async def _send(raw: web.BaseRequest, response: Response) -> web.Response:
    """Write a whole response now, so a connection counts as busy until it is out."""
    out = _response(response)
    try:
        await out.prepare(raw)
        await out.write_eof()
    except ConnectionError:
        pass  # the client went away; aiohttp closes the connection
    return out


async def _stream(raw: web.BaseRequest, response: StreamResponse) -> web.StreamResponse:
    """Send a chunked response, a chunk per non-empty piece, flushed as it comes."""
    defaults = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    given = {k: v for k, v in response.headers.items() if k.lower() != "transfer-encoding"}
    out = web.StreamResponse(
        status=response.status, reason=_reason(response.status), headers=_merged(defaults, given)
    )
    out.enable_chunked_encoding()
    chunks = response.chunks
    try:
        await out.prepare(raw)
        async for piece in chunks:
            if piece:  # an empty chunk would end the body early
                await out.write(piece)
        await out.write_eof()
    except ConnectionError:
        pass
    except Exception:
        log.exception("stream failed after the response head was sent")
        # No terminating chunk: the client must see a broken stream, not a short one.
        if raw.transport is not None:
            raw.transport.close()
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    return out


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
