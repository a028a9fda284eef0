"""The member's `links` and `sitemap` tools against a real HTTP server on 127.0.0.1:
unique href/src (at most 250), <loc> pages following sub-sitemaps (at most 250), a
failing URL as one line, the network policy and confirm mode, and a light import."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from horde_tui.member.tools import WorkspaceTools
from horde_tui.sandbox.policy import SandboxPolicy

PAGE = b"""<html><head><base href="/docs/"><link href="style.css" rel="stylesheet"></head>
<body><a href="a.html">A</a> <a href="a.html#part">A again</a> <a href="#top">top</a>
<img src="/img/logo.png"> <a href="https://example.org/x">out</a>
<script src="app.js"></script> <a href="">empty</a> <a href="b.html?q=1&amp;r=2">B</a>
</body></html>"""
INDEX = b"""<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>/sub1.xml</loc></sitemap><sitemap><loc>/sub2.xml.gz</loc></sitemap>
<sitemap><loc>/gone.xml</loc></sitemap></sitemapindex>"""


def urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset>{entries}</urlset>'.encode()


ROUTES: dict[str, tuple[int, bytes, str]] = {
    "/page.html": (200, PAGE, "text/html; charset=utf-8"),
    "/many.html": (
        200,
        "".join(f'<a href="/p{i}">{i}</a>' for i in range(300)).encode(),
        "text/html",
    ),
    "/sitemap.xml": (200, INDEX, "application/xml"),
    "/sub1.xml": (200, urlset("http://h/one", "http://h/two", "http://h/one"), "application/xml"),
    "/sub2.xml.gz": (200, gzip.compress(urlset("http://h/three")), "application/gzip"),
    "/big.xml": (200, urlset(*(f"http://h/{i}" for i in range(400))), "application/xml"),
    "/away": (302, b"", "text/plain"),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, body, kind = ROUTES.get(self.path, (404, b"not here", "text/plain"))
        self.send_response(status)
        if status == 302:
            self.send_header("Location", "http://example.invalid/elsewhere")
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def tools(tmp_path: Path, network: bool = True) -> WorkspaceTools:
    return WorkspaceTools(tmp_path, sandbox=SandboxPolicy(network=network))


def test_links_lists_unique_absolute_href_and_src(tmp_path: Path, site: str) -> None:
    out = tools(tmp_path).dispatch("links", {"url": f"{site}/page.html"})
    assert out.ok, out.text
    head, *urls = out.text.splitlines()
    assert urls == [
        f"{site}/docs/style.css",
        f"{site}/docs/a.html",
        f"{site}/img/logo.png",
        "https://example.org/x",
        f"{site}/docs/app.js",
        f"{site}/docs/b.html?q=1&r=2",
    ]
    assert head == f"6 unique links (href/src) on {site}/page.html"


def test_links_stops_at_250(tmp_path: Path, site: str) -> None:
    out = tools(tmp_path).dispatch("links", {"url": f"{site}/many.html"})
    lines = out.text.splitlines()
    assert lines[0].startswith("250 unique links") and len(lines) == 252
    assert lines[-1] == "[... more cut: at most 250 are listed]"


def test_sitemap_follows_sub_sitemaps_and_notes_a_failing_one(tmp_path: Path, site: str) -> None:
    out = tools(tmp_path).dispatch("sitemap", {"url": f"{site}/sitemap.xml"})
    assert out.ok, out.text
    lines = out.text.splitlines()
    assert lines[0] == f"3 pages in the sitemap {site}/sitemap.xml (4 sitemap files read)"
    assert lines[1:4] == ["http://h/one", "http://h/two", "http://h/three"]
    assert lines[4] == f"[sub-sitemap {site}/gone.xml failed: HTTP 404 Not Found]"
    big = tools(tmp_path).dispatch("sitemap", {"url": f"{site}/big.xml"}).text.splitlines()
    assert big[0].startswith("250 pages") and len(big) == 252


@pytest.mark.parametrize("tool", ["links", "sitemap"])
def test_a_failing_url_is_one_line(tmp_path: Path, site: str, tool: str) -> None:
    for url in (f"{site}/missing", "http://127.0.0.1:9/nothing-listens", "file:///etc/passwd"):
        out = tools(tmp_path).dispatch(tool, {"url": url})
        assert not out.ok and len(out.text.splitlines()) == 1, out.text
    assert "HTTP 404" in tools(tmp_path).dispatch(tool, {"url": f"{site}/missing"}).text
    assert (
        tools(tmp_path)
        .dispatch(tool, {"url": "file:///etc/passwd"})
        .text.startswith(f"refused: {tool} of 'file:///etc/passwd': only http and https")
    )


def test_with_the_network_cut_only_loopback_is_fetched(tmp_path: Path, site: str) -> None:
    """`sandbox_network off` gives commands loopback only; the fetch tools follow it,
    redirects included."""
    cut = tools(tmp_path, network=False)
    assert cut.dispatch("links", {"url": f"{site}/page.html"}).ok
    out = cut.dispatch("links", {"url": "https://example.org/"})
    assert not out.ok and "sandbox_network off" in out.text
    out = cut.dispatch("links", {"url": f"{site}/away"})
    assert not out.ok and "redirected to http://example.invalid/elsewhere" in out.text


def test_horde_py_shorthands_sent_as_bash_commands_run_the_tools(tmp_path: Path, site: str) -> None:
    """A model taught by horde.py sends `{"tool": "shell", "command": "links URL"}`."""
    out = tools(tmp_path).dispatch("bash", {"command": f"links {site}/page.html"})
    assert out.ok and out.text.startswith("6 unique links (href/src) on ")
    out = tools(tmp_path).dispatch("bash", {"command": f"sitemap {site}/sub1.xml"})
    assert out.ok and out.text.splitlines()[1:] == ["http://h/one", "http://h/two"]
    out = tools(tmp_path).dispatch("bash", {"command": f"links {site}/page.html | head"})
    assert "unique links" not in out.text, "anything more is an ordinary command"
