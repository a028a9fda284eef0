"""Append-only JSON-lines files: incremental reads, torn tails, corrupt lines.

A crash in the middle of `write()` can leave the last line without its newline. A
reader treats such a tail as "not yet written" and does not consume it; the next
writer, holding the lock, truncates it away before appending. A complete line that is
not valid JSON (a hand edit) is reported with its line number and skipped; it stays in
the file, because this file is never rewritten.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class CorruptLine:
    """A complete line that could not be parsed as a JSON object."""

    line_no: int
    offset: int
    error: str


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
        """Parse the complete lines appended since the last call; leave a torn tail."""
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
        pos = 0
        chunk = data[: end + 1]
        for raw in chunk.splitlines(keepends=True):
            self.line_count += 1
            line = raw.strip()
            if line:
                try:
                    value = json.loads(line)
                except ValueError as exc:
                    value = None
                    error = str(exc)
                else:
                    error = "" if isinstance(value, dict) else "not a JSON object"
                if error:
                    self.corrupt.append(CorruptLine(self.line_count, self.offset + pos, error))
                else:
                    records.append(value)
            pos += len(raw)
        self.offset += end + 1
        return records


def repair_torn_tail(path: Path) -> int:
    """Truncate a last line that has no newline; return how many bytes were cut.

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
        if os.read(fd, 1) == b"\n":
            return 0
        # Walk back in blocks to the last newline.
        block = 65536
        pos = size
        keep = 0
        while pos > 0:
            start = max(0, pos - block)
            os.lseek(fd, start, os.SEEK_SET)
            buf = os.read(fd, pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return size - keep
    finally:
        os.close(fd)


def encode_records(records: list[dict[str, Any]]) -> bytes:
    """One compact JSON object per line; non-ASCII kept readable."""
    return b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        for r in records
    )


def append_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Append `data` with a single `write` (then fsync), so a crash tears at most one tail."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
