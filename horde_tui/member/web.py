"""The member's `links URL` and `sitemap URL` tools: horde.py's shorthands for OSINT.

A model that fetches a page with curl gets kilobytes of HTML to wade through; these
give it the short list it wants: the unique `href`/`src` of a page, or the page URLs a
sitemap lists (following sub-sitemaps), at most 250 either way. A URL that fails is
one line, never an exception: the loop carries on. Only http and https (urllib would
also open `file:` and read outside the working directory), responses capped in bytes,
and the run's network policy holds as it does for commands: with `sandbox_network`
off, only loopback hosts are fetched, redirects included. Stdlib only, imported when
a tool runs, so a member that never fetches pays nothing for urllib.
"""

from __future__ import annotations

import gzip
import html
import ipaddress
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

LIMIT = 250
"""At most this many URLs in a result (horde.py's cap)."""
MAX_BYTES = 5 * 1024 * 1024
"""A page or sitemap is read up to this many bytes; the rest is ignored."""
MAX_SITEMAPS = 50
"""Sub-sitemaps fetched for one `sitemap` call at most."""
TIMEOUT_S = 20.0
USER_AGENT = "horde-tui member (links/sitemap)"
_LOC = re.compile(rb"<loc>\s*(.*?)\s*</loc>", re.IGNORECASE | re.DOTALL)
_INDEX = re.compile(rb"<sitemapindex[\s>]", re.IGNORECASE)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class FetchError(Exception):
    """A URL could not be fetched; the message is the reason, for one line."""


@dataclass(frozen=True)
class WebResult:
    ok: bool
    text: str


def url_problem(url: str, network: bool) -> str | None:
    """Why `url` may not be fetched (None: it may): not http(s), no host, or a host off
    the loopback while the run cuts the network."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "only http and https URLs with a host are fetched"
    if not network and not _loopback(parts.hostname):
        return "the run cuts the network (sandbox_network off: loopback only), as for commands"
    return None


def _loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


Fetch = Callable[[str], tuple[str, bytes, str]]
"""url -> (final url, body, charset)."""


def fetcher(network: bool) -> Fetch:
    """A GET that follows redirects only where `url_problem` allows, reads at most
    MAX_BYTES and raises `FetchError` with a short reason."""
    import urllib.error
    import urllib.request

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> Any:
            problem = url_problem(newurl, network)
            if problem:
                raise FetchError(f"redirected to {newurl}: {problem}")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    opener = urllib.request.build_opener(Redirects)

    def fetch(url: str) -> tuple[str, bytes, str]:
        problem = url_problem(url, network)
        if problem:
            raise FetchError(problem)
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        try:
            with opener.open(request, timeout=TIMEOUT_S) as response:
                body = response.read(MAX_BYTES)
                charset = response.headers.get_content_charset() or "utf-8"
                return response.geturl(), body, charset
        except urllib.error.HTTPError as exc:
            raise FetchError(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise FetchError(str(exc.reason)) from None
        except (OSError, ValueError) as exc:
            raise FetchError(str(exc) or type(exc).__name__) from None

    return fetch


def page_links(base: str, text: str) -> list[str]:
    """The unique `href`/`src` values of an HTML page, absolute, in page order."""
    from html.parser import HTMLParser

    found: list[str] = []
    seen: set[str] = set()
    state = {"base": base}

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for name, value in attrs:
                if name not in ("href", "src") or not value or not value.strip():
                    continue
                value = value.strip()
                if tag == "base" and name == "href":
                    state["base"] = urljoin(base, value)
                    continue
                if value.startswith("#"):
                    continue  # a place on this page, not a link out of it
                url = urldefrag(urljoin(state["base"], value))[0] or value
                if url not in seen:
                    seen.add(url)
                    found.append(url)

    Collector(convert_charrefs=True).feed(text)
    return found


def links(url: str, fetch: Fetch) -> WebResult:
    """`links URL`: the unique href/src of the page, at most LIMIT."""
    try:
        final, body, charset = fetch(url)
    except FetchError as exc:
        return WebResult(False, f"links failed: {url}: {exc}; check the URL or try another page")
    found = page_links(final, body.decode(charset, errors="replace"))
    return WebResult(True, _listing(found, f"{{n}} unique links (href/src) on {final}"))


def sitemap(url: str, fetch: Fetch) -> WebResult:
    """`sitemap URL`: the <loc> pages of the sitemap, following sub-sitemaps, at most LIMIT."""
    pages: list[str] = []
    seen_pages: set[str] = set()
    queue, visited, notes = [url], set[str](), []
    while queue and len(pages) < LIMIT and len(visited) < MAX_SITEMAPS:
        current = queue.pop(0)
        if current in visited:
            continue
        visited.add(current)
        try:
            body = _unpacked(fetch(current)[1])
        except FetchError as exc:
            if current == url:
                return WebResult(
                    False, f"sitemap failed: {url}: {exc}; check the URL (often /sitemap.xml)"
                )
            notes.append(f"[sub-sitemap {current} failed: {exc}]")
            continue
        locs = [html.unescape(m.decode("utf-8", "replace")) for m in _LOC.findall(body)]
        if _INDEX.search(body):
            queue += [urljoin(current, loc) for loc in locs]
            continue
        for loc in locs:
            if loc not in seen_pages:
                seen_pages.add(loc)
                pages.append(loc)
    head = f"{{n}} pages in the sitemap {url} ({len(visited)} sitemap files read)"
    return WebResult(True, "\n".join([_listing(pages, head), *notes]))


def _unpacked(body: bytes) -> bytes:
    """A gzipped sitemap (`sitemap.xml.gz`) as its XML."""
    if body[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(body)[:MAX_BYTES]
        except (OSError, EOFError, zlib.error) as exc:
            raise FetchError(f"bad gzip data: {exc}") from None
    return body


def _listing(urls: list[str], head: str) -> str:
    shown = urls[:LIMIT]
    lines = [head.format(n=len(shown)), *shown]
    if len(urls) > LIMIT:
        lines.append(f"[... more cut: at most {LIMIT} are listed]")
    return "\n".join(lines)
