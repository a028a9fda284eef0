"""The one parser of the timestamps `.horde/` files carry.

The store writes `2026-01-02T12:03:04.123456Z` (`store.utc_now`); older files and other
writers may drop the fraction, give an offset, or record epoch seconds. Every reader
parses through here, in UTC: `time.mktime` reads a struct as *local* time, so a parser
built on it is off by the DST hour half the year.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any


def parse_utc(ts: Any) -> _dt.datetime | None:
    """`ts` as an aware UTC datetime; a time without an offset is UTC. None if unreadable."""
    if isinstance(ts, bool):
        return None
    if isinstance(ts, (int, float)):
        try:
            return _dt.datetime.fromtimestamp(ts, _dt.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(ts, str):
        return None
    try:
        stamp = _dt.datetime.fromisoformat(ts.strip())
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=_dt.UTC)
    return stamp.astimezone(_dt.UTC)


def epoch(ts: Any) -> float | None:
    """`ts` (ISO text or epoch seconds) as epoch seconds, or None if unreadable."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return float(ts)
    stamp = parse_utc(ts)
    return stamp.timestamp() if stamp is not None else None
