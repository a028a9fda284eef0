"""`LineIndex`: appends, torn and unfinished tails, corrupt lines, truncation, and cost.

The cost tests count the bytes `os.pread` returns: a refresh must read what was
appended (plus one byte that checks the file was not rewritten), and a line read must
read that line, whatever the file's length.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from horde_tui.store import linefile
from horde_tui.store.linefile import LineIndex


def write(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "events.jsonl"


@pytest.fixture
def pread_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes returned by each `os.pread` call the index makes."""
    calls: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        data = real(fd, n, offset)
        calls.append(len(data))
        return data

    monkeypatch.setattr(linefile.os, "pread", counting)
    return calls


def test_appended_lines_become_visible_and_read_by_number(path):
    write(path, "alpha\nbeta\ngamma\n")
    idx = LineIndex(path)

    assert idx.refresh() == 3
    assert [idx.line(0), idx.line(2), idx.line(-1)] == ["alpha", "gamma", "gamma"]

    write(path, "delta\nepsilon\n")
    assert idx.refresh() == 2
    assert len(idx) == 5
    assert idx.lines(1, 4) == ["beta", "gamma", "delta"]
    assert idx.lines(3, 99) == ["delta", "epsilon"]
    assert idx.lines(4, 2) == []
    assert idx.offset(1) == 6
    assert idx.refresh() == 0


def test_a_missing_file_is_empty_until_it_appears(path):
    idx = LineIndex(path)
    assert (idx.refresh(), len(idx)) == (0, 0)
    write(path, "one\n")
    assert (idx.refresh(), idx.line(0)) == (1, "one")


def test_out_of_range_line_raises_index_error(path):
    write(path, "one\n")
    idx = LineIndex(path)
    idx.refresh()
    with pytest.raises(IndexError):
        idx.line(1)
    with pytest.raises(IndexError):
        idx.line(-2)


def test_a_torn_last_line_stays_invisible_until_its_newline(path):
    write(path, "done\nhalf a li")
    idx = LineIndex(path)

    assert idx.refresh() == 1
    assert idx.refresh() == 0
    write(path, "ne\n")
    assert idx.refresh() == 1
    assert idx.line(1) == "half a line"


def test_an_unfinished_multi_record_append_waits_for_its_last_record(path):
    write(path, '{"id":"E1"}\n{"id":"E2","more":true}\n')
    idx = LineIndex(path)

    assert idx.refresh() == 1
    write(path, '{"id":"E3"}\n')
    assert idx.refresh() == 2
    assert [idx.record(1), idx.record(2)] == [{"id": "E2"}, {"id": "E3"}]


def test_plain_text_mode_ignores_more_markers(path):
    write(path, '{"more":true}\n')
    idx = LineIndex(path, transactions=False)
    assert idx.refresh() == 1


def test_corrupt_blank_and_non_object_lines_are_none_with_the_reason(path):
    write(path, '{"ok":1}\n{"torn":\n\n[1, 2]\n')
    idx = LineIndex(path)
    idx.refresh()

    assert idx.record(0) == {"ok": 1}
    assert idx.error(0) == ""
    assert idx.record(1) is None
    assert idx.error(1).startswith("not valid JSON (")
    assert (idx.record(2), idx.error(2)) == (None, "blank line")
    assert (idx.record(3), idx.error(3)) == (None, "not a JSON object")


def test_records_are_cached_with_a_bounded_lru(path, pread_bytes):
    write(path, "".join(json.dumps({"n": i}) + "\n" for i in range(5)))
    idx = LineIndex(path, cache_size=2)
    idx.refresh()
    pread_bytes.clear()

    idx.record(0)
    idx.record(1)
    idx.record(0)  # hit
    assert len(pread_bytes) == 2
    idx.record(2)  # evicts line 1, the least recently used
    idx.record(1)
    assert len(pread_bytes) == 4
    assert idx.record(0) == {"n": 0}
    assert len(pread_bytes) == 5  # line 0 was evicted by line 1


def test_truncation_rebuilds_and_moves_the_generation(path):
    write(path, "a\nb\nc\nd\n")
    idx = LineIndex(path)
    idx.refresh()
    idx.record(3)

    with open(path, "r+b") as fh:
        fh.truncate(4)
    assert idx.generation == 0
    assert idx.refresh() == 2
    assert (idx.generation, len(idx), idx.lines(0, 9)) == (1, 2, ["a", "b"])


def test_a_replaced_file_is_indexed_again(path, tmp_path):
    write(path, "old 1\nold 2\n")
    idx = LineIndex(path)
    idx.refresh()

    new = tmp_path / "new.jsonl"
    new.write_text("new 1\nnew 2\nnew 3\n")
    os.replace(new, path)
    assert idx.refresh() == 3
    assert (idx.generation, idx.lines(0, 3)) == (1, ["new 1", "new 2", "new 3"])


def test_truncated_and_rewritten_past_the_old_end_is_caught(path):
    write(path, "aaaa\nbb\n")
    idx = LineIndex(path)
    idx.refresh()

    with open(path, "wb") as fh:  # same inode, longer, no newline where ours was
        fh.write(b"cccccccc\ndd\n")
    assert idx.refresh() == 2
    assert (idx.generation, idx.lines(0, 2)) == (1, ["cccccccc", "dd"])


def test_a_removed_file_empties_the_index(path):
    write(path, "a\n")
    idx = LineIndex(path)
    idx.refresh()
    path.unlink()
    assert (idx.refresh(), len(idx), idx.generation) == (0, 0, 1)


def test_a_line_longer_than_a_read_chunk(path, monkeypatch):
    monkeypatch.setattr(linefile, "CHUNK", 8)
    write(path, "x" * 50 + "\nshort\n" + "y" * 30)
    idx = LineIndex(path)
    assert idx.refresh() == 2
    assert idx.lines(0, 2) == ["x" * 50, "short"]


def test_refresh_reads_only_appended_bytes(path, pread_bytes):
    write(path, "".join(f'{{"n":{i}}}\n' for i in range(20_000)))
    idx = LineIndex(path)
    idx.refresh()
    pread_bytes.clear()

    assert idx.refresh() == 0
    assert pread_bytes == []  # nothing appended: one stat, no read

    write(path, '{"n":"new"}\n')
    assert idx.refresh() == 1
    assert sum(pread_bytes) == len('{"n":"new"}\n') + 1  # + the newline check


def test_reading_a_line_reads_only_that_line(path, pread_bytes):
    write(path, "".join(f"line {i}\n" for i in range(20_000)))
    idx = LineIndex(path)
    idx.refresh()
    pread_bytes.clear()

    assert idx.line(17_321) == "line 17321"
    assert pread_bytes == [len("line 17321")]


def test_close_keeps_the_index_and_reopens_on_demand(path, tmp_path):
    write(path, "a\nb\n")
    idx = LineIndex(path)
    idx.refresh()
    idx.close()
    assert idx.line(1) == "b"

    idx.close()
    new = tmp_path / "other"
    new.write_text("z\n")
    os.replace(new, path)
    with pytest.raises(IndexError):  # the index restarted: it describes the new file now
        idx.line(1)
    assert (idx.refresh(), idx.line(0)) == (1, "z")


def test_invalid_utf8_and_crlf_are_tolerated(path):
    path.write_bytes(b"caf\xe9\r\nok\n")
    idx = LineIndex(path)
    idx.refresh()
    assert idx.lines(0, 2) == ["caf\ufffd", "ok"]


def test_unread_bytes_is_what_the_next_refresh_would_read(path):
    index = LineIndex(path)
    assert index.unread_bytes() == 0  # no file yet
    path.write_bytes(b"one\ntwo\n")
    assert index.unread_bytes() == 8
    index.refresh()
    assert index.unread_bytes() == 0
    with open(path, "ab") as fh:
        fh.write(b"three\n")
    assert index.unread_bytes() == 6
