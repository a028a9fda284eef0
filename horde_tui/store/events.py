"""`runs/<id>/events.jsonl`: every action and lifecycle event of a run, in order.

Each event gets the next `E#` of its run. A write action records an `intent` (the full
submission) and an `outcome` (ok, ids, receipt). The outcome of an earlier request with
the same `requestId` from the same actor is what a retry gets back, so a member whose
tool call timed out can safely send it again. (A write that changed the ledger is also
answered from the ledger, which carries its `requestId`: see `LedgerState.requests`.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common.inputs import whole_number
from horde_tui.store.jsonl import (
    UNFLUSHED,
    AppendError,
    JsonlTail,
    TailRepair,
    append_bytes,
    encode_records,
    repair_torn_tail,
)

ERROR_OUTCOME = "error"
"""The outcome label of a write stopped by a full disk or an I/O error."""


EVENT_ID = re.compile(r"E?([1-9][0-9]{0,11})")
"""An event id as a person types it (`E12` or `12`): `fork --at`, `replay --at`."""

_LAST_ID = re.compile(rb'"id":"E([0-9]{1,18})"\}$')
"""The E# of a line as `append` writes it: `id` is the last key, compact JSON."""


@dataclass
class EventLog:
    """What the store needs of one run's `events.jsonl` (the next E#, and the outcomes of
    `actor`'s requests), kept current by offset tailing.

    Only the lines that may be one of `actor`'s outcomes are parsed; of the rest, the E#
    is read off the end of the line: every writer reads every event, twelve writers each
    event twelve times. With `actor` None, every request's outcome is kept.
    """

    path: Path
    actor: str | None = None
    count: int = 0
    outcomes: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(actor, requestId) -> the outcome event of that request."""
    _tail: JsonlTail | None = None
    _corrupt_seen: int = 0

    def __post_init__(self) -> None:
        mine = json.dumps(self.actor).encode() if self.actor is not None else None
        if mine is not None and not mine.isascii():
            mine = None  # written unescaped: look at every request

        def skim(line: bytes) -> dict[str, Any] | None:
            if b'"requestId"' in line and (mine is None or mine in line):
                return None
            found = _LAST_ID.search(line)
            return {"id": f"E{int(found.group(1))}"} if found else None

        self._tail = JsonlTail(self.path, skim=skim)

    def catch_up(self) -> None:
        assert self._tail is not None
        for ev in self._tail.read_new():
            self._index(ev)
        # An E# a corrupt line still shows is never handed out again.
        for bad in self._tail.corrupt[self._corrupt_seen :]:
            self.count = max(self.count, bad.ids.get("E", 0))
        self._corrupt_seen = len(self._tail.corrupt)

    def _index(self, ev: dict[str, Any]) -> None:
        ident = str(ev.get("id", ""))
        number = whole_number(ident[1:]) if ident[:1] == "E" else None
        if number is not None:
            self.count = max(self.count, number)
        rid = ev.get("requestId")
        # A write a full disk or an I/O error stopped (`error`) changed nothing: its retry
        # must be tried again, not answered with the error.
        if ev.get("type") == "outcome" and rid and ev.get("outcome") != ERROR_OUTCOME:
            self.outcomes[(ev.get("actor", ""), rid)] = ev

    def repair(self) -> TailRepair:
        """Settle the file's end (writer only, under the lock), then read what it kept:
        a last event whose newline was restored has an E# the next event must not reuse."""
        assert self._tail is not None
        repair = repair_torn_tail(self.path)
        if repair.cut:
            self._tail.offset = min(self._tail.offset, self.path.stat().st_size)
        if repair.newline_restored:
            self.catch_up()
        return repair

    def next_id(self) -> str:
        return f"E{self.count + 1}"

    @property
    def end(self) -> int:
        """Bytes of the file this log has read or written (its appends end here)."""
        assert self._tail is not None
        return self._tail.offset

    def append(self, events: list[dict[str, Any]], *, fsync: bool = True) -> list[str]:
        """Number and append events (caller holds the lock and has caught up).

        Raises `AppendError` when the events are not in the file (a full disk): their
        E# are then not used. Events written whole whose flush failed count as written.
        """
        ids = [f"E{self.count + i}" for i in range(1, len(events) + 1)]
        for ev, ident in zip(events, ids, strict=True):
            ev["id"] = ident
        assert self._tail is not None
        data = encode_records(events)
        try:
            append_bytes(self.path, data, fsync=fsync)
        except AppendError as exc:
            if exc.state != UNFLUSHED:
                raise
        for ev in events:
            self._index(ev)
        self._tail.offset += len(data)
        self._tail.line_count += len(events)
        return ids
