"""`LineIndex`: random access by line number into a growing JSON-lines or text file.

The read side of a log viewer for files that only grow (toolong's design): an
`array('Q')` of the byte offset where every complete line starts, extended on each
`refresh` from the last indexed byte, so the cost of a refresh follows what was
appended, never the file's length. A line is read with one `os.pread` of exactly its
bytes, so showing line 180,000 costs the same as showing line 3.

What counts as a line is `horde_tui.store.jsonl`'s rule (`continues`, `parse_record`):
a last line without its newline is a write in progress (or a crash) and stays invisible until it completes, and the
records of a multi-record append still marked `"more": true` at the end of the file
wait for the record that completes their transaction. A file that shrank or was
replaced (another inode at the path) is indexed again from the start, and
`generation` moves on so views built on the index know to rebuild too.
"""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from itertools import accumulate, repeat
from operator import add
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import continues, parse_record

BATCH = 2048
"""Lines a reader walking many of them takes per `raw_lines` call (one `pread` each), so
a first pass over a long file holds about half a MB, never the file."""
CHUNK = 256 << 10
"""Bytes read per `pread` while indexing. Small on purpose: with 4 MB reads (and 8192-line
batches) each first pass over a long file left the allocator's heap fragmented, and the
app's peak RSS grew with the file (26 MB above its imports at 20,000 events, 53 MB at
200,000, attached to a bench run); at 256 KB and 2048 lines, 13 and 30 MB, where the
indexes themselves hold ~36 bytes per event."""


class LineIndex:
    """Line-start offsets of one growing file, with an LRU cache of parsed lines."""

    def __init__(self, path: Path | str, *, cache_size: int = 2048, transactions: bool = True):
        """`transactions` holds back trailing `"more": true` records (JSON-lines written
        through `store.jsonl.encode_records`); plain text files can turn it off."""
        self.path = Path(path)
        self.cache_size = cache_size
        self.transactions = transactions
        self.generation = 0
        """Moves on each time the file shrank or was replaced and the index restarted."""
        self._starts = array("Q")
        self._end = 0
        """Byte offset just past the last indexed line."""
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        """(st_dev, st_ino) of the file the index describes."""
        self._cache: OrderedDict[int, tuple[dict[str, Any] | None, str]] = OrderedDict()

    # -- growing -----------------------------------------------------------------------

    def refresh(self) -> int:
        """Index the lines appended since the last call; return how many became visible.

        Nothing appended costs one `stat`. After a rebuild (see `generation`) the count is
        every line of the new file.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._ident is not None:
                self._close_fd()
                self._restart()
                self._ident = None
            return 0
        same = (st.st_dev, st.st_ino) == self._ident
        if same and st.st_size == self._end:
            return 0
        size = self._open_checked() if not same or self._fd is None else st.st_size
        if size is None:
            return 0
        if size < self._end or not self._still_ends_in_newline():
            self._restart()
        if size == self._end:
            return 0
        return self._scan(size)

    def _open_checked(self) -> int | None:
        """(Re)open the path; restart the index if it now names another file."""
        self._close_fd()
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        if self._ident is not None and ident != self._ident:
            self._restart()
        self._fd, self._ident = fd, ident
        return st.st_size

    def _still_ends_in_newline(self) -> bool:
        """A file truncated and written again past our end no longer has our last newline
        where we left it: a one-byte read catches most such rewrites."""
        if self._end == 0 or self._fd is None:
            return True
        return os.pread(self._fd, 1, self._end - 1) == b"\n"

    def _restart(self) -> None:
        self._starts = array("Q")
        self._end = 0
        self._cache.clear()
        self.generation += 1

    def _scan(self, size: int) -> int:
        assert self._fd is not None
        before = len(self._starts)
        pos, chunk = self._end, CHUNK
        parts: list[bytes] = []
        while pos < size:
            data = os.pread(self._fd, min(chunk, size - pos), pos)
            if not data:
                break
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if pos + len(data) >= size:
                    break  # only a torn tail is left
                chunk *= 2  # one line longer than a chunk
                continue
            parts = data[:cut].split(b"\n")
            parts.pop()
            starts = array("Q", accumulate(map(add, map(len, parts), repeat(1)), initial=pos))
            pos = starts.pop()
            self._starts.extend(starts)
        self._end = pos
        if self.transactions:
            # The last chunk's lines are still in memory: check those without a read.
            while len(self._starts) > before:
                last = parts.pop() if parts else self.raw_line(len(self._starts) - 1)
                if not continues(last):
                    break
                self._end = self._starts.pop()
        return len(self._starts) - before

    # -- reading -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def size(self) -> int:
        """Bytes indexed (up to the end of the last visible line)."""
        return self._end

    def unread_bytes(self) -> int:
        """Bytes of the file past what is indexed: what the next `refresh` would read
        (readers move a large backlog off the UI thread). 0 when the file is gone."""
        try:
            return max(0, os.stat(self.path).st_size - self._end)
        except OSError:
            return 0

    def offset(self, i: int) -> int:
        """Byte offset where line `i` starts."""
        return self._starts[self._check(i)]

    def _check(self, i: int) -> int:
        n = len(self._starts)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"line {i} out of range (0..{n - 1})")
        return i

    def _stop_of(self, i: int) -> int:
        """Byte offset just past line `i`'s newline."""
        return self._starts[i + 1] if i + 1 < len(self._starts) else self._end

    def _reader(self) -> int:
        """The open descriptor, reopened after `close` (which may restart the index, so
        callers look up offsets only after this)."""
        if self._fd is None and self._open_checked() is None:
            self._restart()
        if self._fd is None:
            raise FileNotFoundError(self.path)
        return self._fd

    def raw_line(self, i: int) -> bytes:
        """Line `i`'s bytes without the newline: one `pread`, whatever the file's length."""
        fd = self._reader()
        i = self._check(i)
        start = self._starts[i]
        return os.pread(fd, self._stop_of(i) - 1 - start, start)

    def raw_lines(self, start: int, stop: int) -> list[bytes]:
        """Lines `start..stop-1` (clamped) with one `pread` of exactly their bytes."""
        fd = self._reader()
        start, stop = max(0, start), min(stop, len(self._starts))
        if start >= stop:
            return []
        first = self._starts[start]
        data = os.pread(fd, self._stop_of(stop - 1) - first, first)
        parts = data.split(b"\n")
        parts.pop()
        return parts

    def line(self, i: int) -> str:
        """Line `i` as text (invalid UTF-8 replaced, a trailing CR dropped)."""
        return self.raw_line(i).decode("utf-8", "replace").removesuffix("\r")

    def lines(self, start: int, stop: int) -> list[str]:
        return [
            r.decode("utf-8", "replace").removesuffix("\r") for r in self.raw_lines(start, stop)
        ]

    def record(self, i: int) -> dict[str, Any] | None:
        """Line `i` parsed as a JSON object (cached); None for a corrupt line (`error`)."""
        return self._parsed(self._check(i))[0]

    def error(self, i: int) -> str:
        """Why line `i` is not a record (`""` when it is one)."""
        return self._parsed(self._check(i))[1]

    def _parsed(self, i: int) -> tuple[dict[str, Any] | None, str]:
        hit = self._cache.get(i)
        if hit is not None:
            self._cache.move_to_end(i)
            return hit
        parsed = parse_record(self.raw_line(i))
        self._cache[i] = parsed
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return parsed

    # -- lifetime ----------------------------------------------------------------------

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Release the file descriptor but keep the index: a view of a finished run need
        not hold a descriptor open. The next read or refresh reopens the file and starts
        over if the path now names another file."""
        self._close_fd()

    def __enter__(self) -> LineIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._close_fd()
        except (OSError, TypeError):  # interpreter shutdown
            pass
