"""Supervisor notices: what the run's supervisor tells its running members.

Members coordinate through ledgers every member writes, so a board post that says
"WRAP UP" could come from any of them. The supervisor's own notices (a clean stop's
wrap-up) also go to `runs/<id>/notices.jsonl`, which only the supervisor writes (the
member's file tools refuse `.horde/`). A member session reads the notices written while
it runs and inserts each at its next turn boundary as a message labelled as the
supervisor's, outside any data fence (`horde_tui.common.fence`), where peer text never appears.
A session started later is not told: the wrap-up of discovery is no news to a repair
session that starts after it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import JsonlTail, append_bytes, encode_records, repair_torn_tail

LABEL = "[supervisor notice]"
"""How a notice starts in a member's context; the system prompt names it."""


def post(path: Path, kind: str, text: str, to: str = "all") -> None:
    """Append one notice for `to` (a member name, or `all`). The supervisor is the only
    writer, so a tail torn by its own crash is cut without the ledger lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(path)
    record = {"ts": time.time(), "kind": kind, "to": to, "text": text}
    append_bytes(path, encode_records([record]))


def render(text: str) -> str:
    """A notice as the member's model reads it."""
    return f"{LABEL} {text}"


class NoticeReader:
    """The notices for one member written since its session started."""

    def __init__(self, path: Path, member: str) -> None:
        self.member = member
        try:
            start = path.stat().st_size
        except OSError:
            start = 0
        self._tail = JsonlTail(path, offset=start)

    def read_new(self) -> list[str]:
        """Texts of the notices for this member appended since the last call, rendered."""
        records: list[dict[str, Any]] = self._tail.read_new()
        return [
            render(str(r.get("text") or ""))
            for r in records
            if r.get("to") in ("all", self.member) and r.get("text")
        ]
