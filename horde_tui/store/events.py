"""`runs/<id>/events.jsonl`: every action and lifecycle event of a run, in order.

Each event gets the next `E#` of its run. A write action records an `intent` (the full
submission) and an `outcome` (ok, ids, receipt). The outcome of an earlier request with
the same `requestId` from the same actor is what a retry gets back, so a member whose
tool call timed out can safely send it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import JsonlTail, append_bytes, encode_records, repair_torn_tail


@dataclass
class EventLog:
    """The in-memory view of one run's `events.jsonl`, kept current by offset tailing."""

    path: Path
    count: int = 0
    outcomes: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(actor, requestId) -> the outcome event of that request."""
    _tail: JsonlTail | None = None

    def __post_init__(self) -> None:
        self._tail = JsonlTail(self.path)

    def catch_up(self) -> list[dict[str, Any]]:
        assert self._tail is not None
        new = self._tail.read_new()
        for ev in new:
            self._index(ev)
        return new

    def _index(self, ev: dict[str, Any]) -> None:
        ident = str(ev.get("id", ""))
        if ident[:1] == "E" and ident[1:].isdigit():
            self.count = max(self.count, int(ident[1:]))
        rid = ev.get("requestId")
        if ev.get("type") == "outcome" and rid:
            self.outcomes[(ev.get("actor", ""), rid)] = ev

    def repair(self) -> int:
        """Cut a torn tail (writer only, under the lock)."""
        assert self._tail is not None
        cut = repair_torn_tail(self.path)
        if cut and self._tail.offset > self.path.stat().st_size:
            self._tail.offset = self.path.stat().st_size
        return cut

    def next_id(self) -> str:
        return f"E{self.count + 1}"

    def append(self, events: list[dict[str, Any]], *, fsync: bool = True) -> list[str]:
        """Number and append events (caller holds the lock and has caught up)."""
        ids = []
        for ev in events:
            ev["id"] = f"E{self.count + 1}"
            ids.append(ev["id"])
            self._index(ev)
        assert self._tail is not None
        data = encode_records(events)
        append_bytes(self.path, data, fsync=fsync)
        self._tail.offset += len(data)
        self._tail.line_count += len(events)
        return ids
