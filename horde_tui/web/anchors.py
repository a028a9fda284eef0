"""Where a run's ids live in its pages: each ledger entry's anchor on its ledger page, an
artifact's on the collaboration page, and each event's line on its page of the event
audit. The graph links every mark through these, so no mark names an anchor no page
defines."""

from __future__ import annotations

import re
from typing import Any

from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.linefile import LineIndex
from horde_tui.store.pagelinks import EVENTS_PER_PAGE, anchor, event_page

__all__ = ["EVENTS_PER_PAGE", "anchor", "entry_pages", "event_line", "event_page", "mark_target"]
_EVENT_ID = re.compile(rb'"id":"E([0-9]{1,18})"\}\s*$')
"""An event line's own E#: `id` is its last key (`EventLog.append` writes it so)."""


def entry_pages(ledgers: Any, run_id: str, kinds: tuple[str, ...]) -> dict[str, str]:
    """Each id the run's pages anchor -> `page.html#anchor` (relative to the run folder):
    the entries of `kinds` on their ledger pages, threads and artifacts on the
    collaboration page."""
    found: dict[str, str] = {}
    for kind in (*kinds, "threads"):
        page = "collaboration" if kind == "threads" else kind
        for row in ledgers.rows(kind, "newest"):
            found.setdefault(row.key, f"{page}.html#{anchor(row.key)}")
    for item in acceptance_all(ledgers.state, run_id):
        if item.target.startswith("A"):
            found[item.target] = f"collaboration.html#{anchor(item.target)}"
    return found


def event_line(index: LineIndex, ident: str) -> int | None:
    """The line of event `ident` (`E17`) in `events.jsonl`, or None. An event's number is
    its line's but for lines a crash tore, so look there first, then search: numbers
    only grow down the file."""
    if not re.fullmatch(r"E[0-9]{1,18}", ident):
        return None
    want = int(ident[1:])

    def number(i: int) -> int | None:
        found = _EVENT_ID.search(index.raw_line(i))
        return int(found.group(1)) if found else None

    if 0 < want <= len(index) and number(want - 1) == want:
        return want - 1
    lo, hi = 0, len(index) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        probe, at = number(mid), mid
        while probe is None and at < hi:  # a torn line carries no number: the next one
            at += 1
            probe = number(at)
        if probe == want:
            return at
        if probe is None or probe > want:
            hi = mid - 1
        else:
            lo = at + 1
    return None


def mark_target(base: str, mark: Any, entries: dict[str, str], events: LineIndex) -> str:
    """Where a graph mark links (`base`: the run's folder): its ledger entry (a review:
    the finding or artifact it checked), else its event in the audit; "" when neither is
    on any page."""
    ident = mark.text
    if mark.kind in ("review", "refuted"):
        ident = re.split(r"[✓~✗?]", mark.text, maxsplit=1)[-1]
    if mark.kind in ("review", "refuted", "idea", "finding", "entity") and ident in entries:
        return base + entries[ident]
    line = event_line(events, mark.event) if mark.event else None
    if line is None:
        return ""
    return f"{base}{event_page(line)}#{anchor(mark.event)}"
