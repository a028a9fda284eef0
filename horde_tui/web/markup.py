"""Markdown as the pages show it: CommonMark with tables, no raw HTML, no images (an
export makes no network request), links to the project's files made plain text (they
are not in the export), and headings one level down (a page's title is its only h1)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markupsafe import escape


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.disable("image")  # an export makes no network request, and has no local images
    return md


_MD = _markdown()
_LOCAL_HREF = re.compile(r'<a href="(?!https?:|mailto:|#)[^"]*">')


def esc(text: object) -> str:
    """`text` as HTML text or an attribute value: the templates' autoescape, for the few
    pieces drawn in Python (the SVG graphs), so both escape alike."""
    return str(escape(text))


def markdown(text: str) -> str:
    """A document as HTML, its headings one level down (the page's title is its only
    h1); a link to a file of the project (not in the export) becomes plain text, so no
    link dangles."""
    tokens = _MD.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + 1)}"
    return _LOCAL_HREF.sub("<a>", _MD.renderer.render(tokens, _MD.options, {}))


def markdown_line(text: str) -> str:
    """One line of Markdown (a folded entry's summary) as inline HTML, heading marks and
    list bullets dropped."""
    line = re.sub(r"^\s*(?:#{1,6}\s+|[-*+]\s+)", "", text.strip())
    return _LOCAL_HREF.sub("<a>", _MD.renderInline(line))
