"""Every reader of a JSON-lines file (the store's `JsonlTail`, the views' `LineIndex`, the
transcript reader) parses a line one way (`store.jsonl.parse_line`): the same records, the
same torn tail and unfinished `"more": true` transaction left unread, and a hostile line
(nested past the parser's depth) reported as one corrupt line, never a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

from horde_tui.store.jsonl import JsonlTail, encode_records
from horde_tui.store.linefile import LineIndex
from horde_tui.store.transcript import TranscriptEntry, read_transcript

DEEP = b"[" * 100_000 + b"]" * 100_000


def _write(path: Path) -> Path:
    data = encode_records([{"n": 1}])
    data += b"not json\n" + DEEP + b"\n" + b"[1, 2]\n"
    data += encode_records([{"n": 2}, {"n": 3}])  # one whole transaction
    data += encode_records([{"n": 4}, {"n": 5}]).split(b"\n")[0] + b"\n"  # its first half
    data += b'{"n": 6'  # torn
    path.write_bytes(data)
    return path


def test_the_store_and_the_views_read_the_same_records_and_leave_the_same_tail(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path / "events.jsonl")
    tail = JsonlTail(path)
    records = tail.read_new()
    index = LineIndex(path)
    index.refresh()

    assert records == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert [index.record(i) for i in range(len(index))] == [
        {"n": 1},
        None,
        None,
        None,
        {"n": 2},
        {"n": 3},
    ]
    assert index.size == tail.offset
    assert [c.line_no for c in tail.corrupt] == [2, 3, 4]
    assert "nested too deeply" in tail.corrupt[1].error
    assert "nested too deeply" in index.error(2)
    assert index.error(3) == tail.corrupt[2].error == "not a JSON object"
    index.close()


def test_the_transcript_reader_reports_a_hostile_line_and_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = json.dumps({"role": "user", "content": "hi"}).encode()
    path.write_bytes(line + b"\n" + DEEP + b"\n" + b'{"role": "assist')

    items = list(read_transcript(path))

    assert items[0] == TranscriptEntry(1, {"role": "user", "content": "hi"})
    assert items[1] == "line 2: not valid JSON"
    assert items[2] == "line 3: not valid JSON (torn last line)"
