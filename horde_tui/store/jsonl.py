"""Append-only JSON-lines files: incremental reads, torn tails, corrupt lines.

A crash in the middle of `write()` can leave the last line without its newline. A
reader treats such a tail as "not yet written" and does not consume it; the next
writer, holding the lock, truncates it away before appending. A complete line that is
not valid JSON (a hand edit) is reported with its line number and skipped; it stays in
the file, because this file is never rewritten.

The records of one append are one transaction. A write can also stop *between* two
lines (a SIGKILL between two pages of a large `write`, a disk that fills up), leaving
complete lines of a transaction that never finished. So every record of a multi-record
append but the last carries `"more": true`: readers leave records still marked `more`
at the end unread, like a torn tail, and the next writer cuts them with it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.paths import write_file

MORE = "more"
"""Set on each record of a multi-record append except the last: the append goes on."""

_BLOCK = 4096


@dataclass
class CorruptLine:
    """A complete line that could not be parsed as a JSON object."""

    line_no: int
    offset: int
    error: str


def _parse(line: bytes) -> tuple[Any, str]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        return None, str(exc)
    return value, "" if isinstance(value, dict) else "not a JSON object"


@dataclass
class JsonlTail:
    """Reads only what was appended to one JSON-lines file since the last call."""

    path: Path
    offset: int = 0
    """Byte offset just past the last complete line consumed."""
    line_count: int = 0
    """Complete lines consumed so far (valid or corrupt), for 1-based line numbers."""
    corrupt: list[CorruptLine] = field(default_factory=list)

    def read_new(self) -> list[dict[str, Any]]:
        """Parse the complete lines appended since the last call; leave a torn tail.

        The records of an append that is not complete yet (a writer mid-append, or one
        that died) are left unread too, so a transaction is seen whole or not at all.
        Records come back as they were given to `encode_records` (without `more`).
        """
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        records: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        pos = consumed = 0
        line_no = consumed_lines = self.line_count
        for raw in data[:end].split(b"\n"):
            line_no += 1
            start, pos = pos, pos + len(raw) + 1
            line = raw.strip()
            if line:
                value, error = _parse(line)
                if error:
                    self.corrupt.append(CorruptLine(line_no, self.offset + start, error))
                else:
                    pending.append(value)
                    if value.pop(MORE, None) is True:
                        continue  # the transaction goes on in the next line
            records += pending
            pending = []
            consumed, consumed_lines = pos, line_no
        self.offset += consumed
        self.line_count = consumed_lines
        return records


def _newline_before(fd: int, pos: int) -> int:
    """Index of the last newline before byte `pos`, or -1 (walks back in blocks)."""
    while pos > 0:
        start = max(0, pos - _BLOCK)
        os.lseek(fd, start, os.SEEK_SET)
        idx = os.read(fd, pos - start).rfind(b"\n")
        if idx >= 0:
            return start + idx
        pos = start
    return -1


def _continues(line: bytes) -> bool:
    """True for a record marked `more`: its transaction was not finished."""
    if b'"more":true' not in line:
        return False
    value, error = _parse(line)
    return not error and value.get(MORE) is True


def repair_torn_tail(path: Path) -> int:
    """Cut an unfinished append: a last line without its newline, and the complete lines
    of a transaction still marked `more`. Return how many bytes were cut.

    Only a writer holding the lock may call this: without the lock the "torn" tail
    could be another writer's append in progress.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        os.lseek(fd, size - 1, os.SEEK_SET)
        keep = size if os.read(fd, 1) == b"\n" else _newline_before(fd, size) + 1
        while keep > 0:
            start = _newline_before(fd, keep - 1) + 1
            os.lseek(fd, start, os.SEEK_SET)
            if not _continues(os.read(fd, keep - start)):
                break
            keep = start
        if keep < size:
            os.ftruncate(fd, keep)
            os.fsync(fd)
        return size - keep
    finally:
        os.close(fd)


def encode_records(records: list[dict[str, Any]]) -> bytes:
    """One compact JSON object per line, non-ASCII kept readable; all but the last record
    are marked `more`, so the lines are read (and repaired) as one transaction."""
    last = len(records) - 1
    return b"".join(
        json.dumps(
            r if i == last else {**r, MORE: True}, ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")
        + b"\n"
        for i, r in enumerate(records)
    )


def append_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Append `data` with a single `write` (then fsync), so a crash tears at most one tail."""
    write_file(path, data, os.O_APPEND, fsync=fsync)
