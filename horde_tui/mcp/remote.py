"""The same server over streamable HTTP, for members on other machines.

Bound to 127.0.0.1 unless `--bind` says otherwise (reach it through an SSH tunnel or a
private network); every request must carry `Authorization: Bearer <token>`. The token
is `HORDE_MCP_TOKEN`, or one generated once per run and kept 0600 in the run's
directory (`mcp-token`): the server prints that path, never the value. Writes stay
serialized by the one store lock of the machine that holds `.horde/`, so a remote member
needs no shared filesystem.

It is served by the gateway's server (`horde_tui.common.httpserve`): the token checked on the
head before a body is read, the descriptor limit raised at start, a connection cap per
client and in all (the oldest idle connection goes first), head, body and idle
timeouts. The SDK's streamable HTTP app runs behind it as an ASGI app.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from pathlib import Path

import anyio

from horde_tui.common import httpserve
from horde_tui.common.httpserve import Limits, Request, Response, error_body
from horde_tui.mcp.seat import Seat
from horde_tui.mcp.server import HordeServer
from horde_tui.store.store import HordeStore

TOKEN_ENV = "HORDE_MCP_TOKEN"
TOKEN_FILE = "mcp-token"
TOKEN_MIN = 16
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
PATH = "/mcp"


class TokenRefused(Exception):
    """No usable token; the message is the one line to print."""


def token_path(seat: Seat) -> Path:
    return HordeStore(seat.horde_dir, seat.name).paths.run_dir(seat.run) / TOKEN_FILE


def bearer_token(seat: Seat, environ: dict[str, str] | None = None) -> tuple[str, Path | None]:
    """The token and, when it lives in a file, the file (0600; made on first use)."""
    env = os.environ if environ is None else environ
    given = env.get(TOKEN_ENV, "")
    if given:
        if len(given) < TOKEN_MIN or not given.isprintable() or " " in given:
            raise TokenRefused(
                f"{TOKEN_ENV} must be at least {TOKEN_MIN} printable characters without "
                "spaces; unset it to have one generated"
            )
        return given, None
    path = token_path(seat)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < TOKEN_MIN:
            raise TokenRefused(
                f"{path} holds no usable token; delete it to have a new one generated"
            ) from None
        os.chmod(path, 0o600)
        return token, path
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    return token, path


LIMITS = Limits(max_body_bytes=4 * 1024 * 1024)
"""A `horde` call is a few KB (evidence is capped at 20,000 characters); the gateway's
timeouts and connection caps as they are."""
UNAUTHORIZED = (
    "refused: no valid bearer token (horde mcp rule); send 'Authorization: Bearer <token>' "
    "with the run's token"
)
NO_OAUTH = (
    "no OAuth here: this server takes the bearer token its operator hands out (the run's "
    "mcp-token file or HORDE_MCP_TOKEN); send it as 'Authorization: Bearer <token>'"
)
WELL_KNOWN = "/.well-known/"
"""Where OAuth clients look for an authorization server: answered 404 with `NO_OAUTH`,
token or not, so their discovery ends there instead of in a login flow."""


class BearerGuard:
    """The head check: 401 (with the reason and a plain Bearer challenge) for any request
    without the run's token, before its body is read."""

    def __init__(self, token: str) -> None:
        self.token = token

    def authorize(self, req: Request) -> Response | None:
        if req.path.startswith(WELL_KNOWN):
            return Response(404, error_body(NO_OAUTH, "not_found", "no_oauth"))
        if httpserve.token_matches(httpserve.bearer_token(req.headers), self.token):
            return None
        return httpserve.unauthorized(UNAUTHORIZED, "horde", req.headers)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts so `--port 0` can be told."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


async def serve_http(seat: Seat, sock: socket.socket, token: str) -> None:
    """Serve the seat's server on `sock` until interrupted."""
    host, port = sock.getsockname()[:2]
    server = HordeServer(seat).server()
    app = server.streamable_http_app(
        streamable_http_path=PATH, host="127.0.0.1" if host in LOOPBACK else host
    )
    guard = BearerGuard(token)
    async with app.router.lifespan_context(app):  # the SDK's session manager
        http = await httpserve.serve(
            httpserve.asgi(app, (host, port)),
            authorize=guard.authorize,
            limits=LIMITS,
            sock=sock,
        )
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await http.close()


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{PATH}"


def announce(seat: Seat, sock: socket.socket, path: Path | None) -> None:
    where = f"the token is in {path} (0600)" if path else f"the token is ${TOKEN_ENV}"
    print(
        f"horde-tui mcp: serving the horde tool as {seat.name} in run {seat.run} at "
        f"{url_of(sock)}; {where}",
        file=sys.stderr,
        flush=True,
    )
