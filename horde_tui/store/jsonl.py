"""Append-only JSON-lines files: incremental reads, torn tails, corrupt lines.

A crash in the middle of `write()` can leave the last line without its newline. A
reader treats such a tail as "not yet written" and does not consume it; the next
writer, holding the lock, settles it before appending: a last line that parses is a
complete record that only lost its newline (an editor, an `echo -n` round trip), so the
newline is restored and the record kept; a last line that does not parse is torn, and it
is cut, kept aside in `<file>.torn` and reported (`TailRepair`). A complete line that is
not valid JSON (a hand edit) is reported with its line number and skipped; it stays in
the file, because this file is never rewritten. The numbers it still shows (`"seq"`,
`"id"`) are noted, so they are never handed out again.

The records of one append are one transaction. A write can also stop *between* two
lines (a SIGKILL between two pages of a large `write`, a disk that fills up), leaving
complete lines of a transaction that never finished. So every record of a multi-record
append but the last carries `"more": true`: readers leave records still marked `more`
at the end unread, like a torn tail, and the next writer cuts them with it.

An append that fails (a full disk, an I/O error) is undone by its own writer where it
can be: `AppendError.state` says what it left in the file.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common.inputs import loads
from horde_tui.store.durable import forget_synced
from horde_tui.store.paths import write_file

MORE = "more"
"""Set on each record of a multi-record append except the last: the append goes on."""
_MORE_MARK = b'"more":true'
"""How `encode_records` writes the marker: lines without it are not parsed to look."""
NOT_OBJECT = "not a JSON object"
"""The error of a line that parses but is not an object (a list, a number)."""

_BLOCK = 4096
# At most 18 digits: more is no seq or id this store handed out, and int() refuses
# over 4300 (a hand-edited line must not stop the store from opening).
_RAW_ID = re.compile(rb'"id"\s*:\s*"(#|[A-Z])([0-9]{1,18})"')
_RAW_SEQ = re.compile(rb'"seq"\s*:\s*([0-9]{1,18})(?![0-9])')

UNDONE = "undone"
"""The failed append left nothing in the file (it wrote nothing, or was cut off again)."""
UNFLUSHED = "unflushed"
"""Every byte is in the file and readers may have it; only the flush to disk failed."""
TORN = "torn"
"""Part of the append is in the file and could not be cut off: the next writer settles it."""


class AppendError(OSError):
    """An append failed; `state` (`UNDONE`, `UNFLUSHED`, `TORN`) says what it left."""

    def __init__(self, cause: OSError, state: str) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.state = state


@dataclass
class CorruptLine:
    """A complete line that could not be parsed as a JSON object."""

    line_no: int
    offset: int
    error: str
    seq: int = 0
    """The highest `"seq"` the raw line still shows (0: none)."""
    ids: dict[str, int] = field(default_factory=dict)
    """Id prefix -> the highest `"id"` number the raw line still shows (`#3` -> {"#": 3})."""


def _numbers_in(raw: bytes) -> tuple[int, dict[str, int]]:
    """The `"seq"` and `"id"` values a line that does not parse still shows, so a writer
    never hands them out again (a person who fixes the line would get two of them)."""
    seq = max((int(m.group(1)) for m in _RAW_SEQ.finditer(raw)), default=0)
    ids: dict[str, int] = {}
    for m in _RAW_ID.finditer(raw):
        prefix = m.group(1).decode()
        ids[prefix] = max(ids.get(prefix, 0), int(m.group(2)))
    return seq, ids


def parse_line(line: bytes | str) -> tuple[Any, str]:
    """One complete line as a JSON object, or why it is not one (the decoder's words).

    Every reader of a JSON-lines file parses through here (`inputs.loads`: a line nested
    past the parser's depth is one corrupt line, not a RecursionError)."""
    try:
        value = loads(line)
    except ValueError as exc:
        return None, str(exc)
    return value, "" if isinstance(value, dict) else NOT_OBJECT


def parse_record(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One line as a record for a viewer, or None and a one-line reason why it is not
    one; the `more` marker of a multi-record append is dropped (as `read_new` does)."""
    if not raw.strip():
        return None, "blank line"
    value, error = parse_line(raw)
    if error:
        return None, error if error == NOT_OBJECT else f"not valid JSON ({error})"
    if value.get(MORE) is True:
        del value[MORE]
    return value, ""


@dataclass
class JsonlTail:
    """Reads only what was appended to one JSON-lines file since the last call."""

    path: Path
    offset: int = 0
    """Byte offset just past the last complete line consumed."""
    line_count: int = 0
    """Complete lines consumed so far (valid or corrupt), for 1-based line numbers."""
    corrupt: list[CorruptLine] = field(default_factory=list)
    skim: Callable[[bytes], dict[str, Any] | None] | None = None
    """Reads what a reader needs of a line without parsing it, or None to parse it: a
    reader that needs a few lines whole and only a number of the rest saves the parse."""

    def read_new(self) -> list[dict[str, Any]]:
        """Parse the complete lines appended since the last call; leave a torn tail.

        The records of an append that is not complete yet (a writer mid-append, or one
        that died) are left unread too, so a transaction is seen whole or not at all.
        Records come back as they were given to `encode_records` (without `more`).
        """
        try:
            if os.stat(self.path).st_size <= self.offset:
                return []  # nothing new: a waiting writer asks every 30 ms (`HordeLock`)
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
            skimmed = self.skim(line) if self.skim is not None and line else None
            if skimmed is not None:
                pending.append(skimmed)
            elif line:
                value, error = parse_line(line)
                if error:
                    seq, ids = _numbers_in(line)
                    self.corrupt.append(CorruptLine(line_no, self.offset + start, error, seq, ids))
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


def continues(line: bytes) -> bool:
    """True for a record marked `more`: its transaction was not finished."""
    if _MORE_MARK not in line:
        return False
    value, error = parse_line(line)
    return not error and value.get(MORE) is True


@dataclass
class TailRepair:
    """What `repair_torn_tail` did to the end of a file (nothing, when all are zero)."""

    path: Path
    cut: int = 0
    """Bytes cut: a torn last line and the complete lines of an unfinished append."""
    lines: int = 0
    """Lines cut (a torn last line counts as one)."""
    kept: Path | None = None
    """Where the cut bytes were kept (`<file>.torn`)."""
    newline_restored: bool = False
    """The last line was a complete record without its newline: kept, newline added."""

    def describe(self) -> str:
        """The one line a person reads about the cut (empty when nothing was cut)."""
        if not self.cut:
            return ""
        kept = self.kept.name if self.kept else "nowhere"
        return (
            f"{self.path.name} ended in an append that never finished (a writer died or the "
            f"disk filled mid-write): {self.cut} bytes ({self.lines} line"
            f"{'s' if self.lines != 1 else ''}) were cut and kept in {kept}; "
            "nothing acknowledged was in them"
        )


def _keep_aside(path: Path, at: int, cut: bytes, lines: int) -> Path:
    """Append the cut bytes to `<file>.torn` under a header line, flushed before the cut."""
    kept = path.with_name(path.name + ".torn")
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    plural = "" if lines == 1 else "s"
    header = f"# {when} cut from {path.name} at byte {at}: {len(cut)} bytes, {lines} line{plural}\n"
    body = cut if cut.endswith(b"\n") else cut + b"\n"
    write_file(kept, header.encode() + body, os.O_APPEND)
    return kept


def repair_torn_tail(path: Path) -> TailRepair:
    """Settle the end of `path` before an append: restore the newline of a complete last
    record; cut a torn last line and the complete lines of an unfinished append (still
    marked `more`), keeping them aside in `<file>.torn`.

    Only a writer holding the lock may call this: without the lock the "torn" tail
    could be another writer's append in progress. Raises `OSError` (the file unchanged,
    but for a restored newline) when the cut bytes cannot be kept aside.
    """
    repair = TailRepair(path)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return repair
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return repair
        os.lseek(fd, size - 1, os.SEEK_SET)
        keep_to = size
        if os.read(fd, 1) != b"\n":
            start = _newline_before(fd, size) + 1
            os.lseek(fd, start, os.SEEK_SET)
            value, error = parse_line(os.read(fd, size - start).strip())
            if not error and value.get(MORE) is not True:
                os.lseek(fd, size, os.SEEK_SET)
                os.write(fd, b"\n")
                os.fsync(fd)
                repair.newline_restored = True
                return repair
            keep_to, repair.lines = start, 1
        while keep_to > 0:
            start = _newline_before(fd, keep_to - 1) + 1
            os.lseek(fd, start, os.SEEK_SET)
            if not continues(os.read(fd, keep_to - start)):
                break
            keep_to, repair.lines = start, repair.lines + 1
        if keep_to < size:
            os.lseek(fd, keep_to, os.SEEK_SET)
            cut = os.read(fd, size - keep_to)
            repair.kept = _keep_aside(path, keep_to, cut, repair.lines)
            os.ftruncate(fd, keep_to)
            os.fsync(fd)
            forget_synced(path)
            repair.cut = size - keep_to
        return repair
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
    """Append `data` with a single `write` (then fsync), so a crash tears at most one tail.

    On failure (caller holds the lock) a partial append is cut off again, so a full disk
    leaves no torn tail; `AppendError.state` says what is in the file.
    """
    try:
        before = os.stat(path).st_size
    except FileNotFoundError:
        before = 0
    try:
        write_file(path, data, os.O_APPEND, fsync=fsync)
    except OSError as exc:
        raise AppendError(exc, _undo(path, before, len(data))) from exc


def _undo(path: Path, before: int, length: int) -> str:
    """Cut a failed append back to `before` bytes; return what it left (`UNDONE`, ...)."""
    try:
        size = os.stat(path).st_size
        if size == before + length:
            return UNFLUSHED
        if size != before:
            os.truncate(path, before)
            forget_synced(path)
    except FileNotFoundError:
        return UNDONE
    except OSError:
        return TORN
    return UNDONE
