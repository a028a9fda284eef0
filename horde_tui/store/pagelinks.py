"""Where the browser view shows an id: the page of each ledger entry, its anchor, and
the event-audit page of an event. The web pages define these anchors; GRAPH.md, written
by the supervisor from the store alone, links its nodes to the same places."""

from __future__ import annotations

import re

EVENTS_PER_PAGE = 1000
"""Event-audit lines per page: a 200,000-event run is 200 pages, none of them large."""
ENTRY_PAGES = {
    "#": "ideas",
    "F": "findings",
    "T": "facts",
    "C": "claims",
    "R": "resources",
    "Q": "collaboration",
    "A": "collaboration",
}
"""An id's first character -> the run page that anchors it (threads and artifacts are on
the collaboration page; reviews have no entry of their own)."""


def anchor(key: str) -> str:
    """The stable anchor of a ledger entry: `F3`, `idea-3` for `#3`, `Q2`."""
    return re.sub(r"[^A-Za-z0-9_-]", "", key.replace("#", "idea-")) or "entry"


def entry_page(ident: str) -> str | None:
    """`F3` -> `findings.html#F3` (relative to the run's folder); None for an id no
    ledger page anchors."""
    page = ENTRY_PAGES.get(ident[:1])
    return f"{page}.html#{anchor(ident)}" if page else None


def event_page(line: int) -> str:
    """The audit page that shows line `line` (0-based) of `events.jsonl`."""
    return f"events-{line // EVENTS_PER_PAGE + 1}.html"
