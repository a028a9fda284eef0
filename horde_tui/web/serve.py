"""`horde-tui serve [--port 7433]`: the export's pages, live, on 127.0.0.1 only.

Served by `horde_tui.common.httpserve` (aiohttp's server, as the gateway's), so there is one
HTTP stack. The server only reads: it answers GET and HEAD, refuses any other method
(405) and any request a browser marks as coming from another site (403), and a Host
that is not this machine (403, so a rebinding page cannot read it either). A page whose
run or swarm can still change reloads every three seconds unless `?refresh=0`; every
page has its JSON twin under `/api/` (`/api/runs/<id>/findings.html`). A page read with
`?refresh=0` links on with it, so a click does not start the reloading again; a folder
named without its slash (`/runs/<id>`) redirects to it.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

from horde_tui.common.httpserve import (
    HttpServer,
    Limits,
    Request,
    Response,
    error_body,
    listen_failure,
    serve,
)
from horde_tui.common.settings import default_value
from horde_tui.web.pages import CSP, Site

DEFAULT_PORT: int = default_value("serve_port")
HOST = "127.0.0.1"
LIMITS = Limits(max_body_bytes=0, max_connections_per_client=256, max_connections=512)
"""A reader sends no body; a browser opens a handful of connections."""
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})


def _refuse(status: int, message: str, **headers: str) -> Response:
    return Response(status, error_body(message, "invalid_request_error"), headers)


def authorize(request: Request, url: str = f"http://{HOST}:{DEFAULT_PORT}") -> Response | None:
    """The head's checks, before anything is read or rendered; `url` is where this
    server listens (the wrong-Host refusal says to open it)."""
    if request.method not in ("GET", "HEAD"):
        return _refuse(
            405,
            f"refused: {request.method} (read-only server: GET and HEAD only)",
            Allow="GET, HEAD",
        )
    if request.headers.get("sec-fetch-site", "").lower() == "cross-site":
        return _refuse(403, "refused: a cross-site request (Sec-Fetch-Site: cross-site)")
    host = request.headers.get("host", HOST).rsplit(":", 1)[0].lower()
    if host not in _LOCAL_HOSTS:
        return _refuse(403, f"refused: Host {host!r} is not this machine; open {url}/")
    return None


class Pages:
    """The request handler: one `Site` over every run and swarm, caught up per request."""

    def __init__(self, horde_dir: Path) -> None:
        self.site = Site(horde_dir)
        self.site.served = True
        self.url = f"http://{HOST}:{DEFAULT_PORT}"
        """Where the server listens, once it does."""

    def authorize(self, request: Request) -> Response | None:
        return authorize(request, self.url)

    async def __call__(self, request: Request) -> Response:
        path = request.path
        if path and not path.endswith("/") and "." not in path.rsplit("/", 1)[-1]:
            # a folder named without its slash: its relative links need the slash
            query = f"?{urlencode(request.query)}" if request.query else ""
            # one leading slash: `//host` would send the browser to another site
            return Response(301, b"", {"Location": quote("/" + path.lstrip("/") + "/") + query})
        api = path == "/api" or path.startswith("/api/")
        if api:
            path = path[len("/api") :]
        rel = path.lstrip("/")
        if rel == "" or rel.endswith("/"):
            rel += "index.html"
        still = request.query.get("refresh") == "0"
        page = self.site.render(rel, still=still, query=dict(request.query))
        if api:
            body = self.site.json(page).encode()
            kind = "application/json"
        elif page.text is not None:
            body, kind = self.site.mask(page.text).encode(), "text/plain; charset=utf-8"
        else:
            refresh = page.live and not still
            body, kind = self.site.html(page, refresh).encode(), "text/html; charset=utf-8"
        headers = {
            "Content-Type": kind,
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": CSP,
            "Referrer-Policy": "no-referrer",
        }
        return Response(page.status, body, headers)

    def close(self) -> None:
        self.site.close()


async def start(horde_dir: Path, port: int = DEFAULT_PORT) -> tuple[HttpServer, Pages]:
    """Listen on 127.0.0.1:`port` (0: any free port); OSError when the port is busy."""
    pages = Pages(horde_dir)
    server = await serve(pages, HOST, port, authorize=pages.authorize, limits=LIMITS)
    pages.url = server.url
    return server, pages


async def _run(horde_dir: Path, port: int) -> int:
    try:
        server, pages = await start(horde_dir, port)
    except OSError as exc:
        print(
            f"horde-tui serve: refused: {listen_failure(exc, HOST, port)}; pick another with "
            "--port N",
            file=sys.stderr,
        )
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"serving {horde_dir} read-only on {server.url}/ (Ctrl-C stops)", flush=True)
    try:
        await stop.wait()
    finally:
        await server.close()
        pages.close()
    return 0


def cmd_serve(horde_dir: Path, port: int) -> int:
    if not Path(horde_dir).is_dir():
        print(
            f"horde-tui serve: refused: {horde_dir} does not exist; run from a project with "
            ".horde/ or set HORDE_DIR",
            file=sys.stderr,
        )
        return 1
    return asyncio.run(_run(Path(horde_dir), port))
