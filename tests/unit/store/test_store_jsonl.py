"""`horde_tui.store.jsonl`: incremental reads, torn tails, corrupt lines, appends."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from horde_tui.store.jsonl import (
    UNDONE,
    AppendError,
    JsonlTail,
    append_bytes,
    encode_records,
    repair_torn_tail,
)


def line(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def test_missing_file_reads_as_empty(tmp_path: Path) -> None:
    tail = JsonlTail(tmp_path / "nope.jsonl")
    assert tail.read_new() == []
    assert tail.offset == 0
    assert repair_torn_tail(tmp_path / "nope.jsonl").cut == 0


def test_second_read_returns_only_new_records(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    append_bytes(path, encode_records([{"n": 1}, {"n": 2}]))
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}, {"n": 2}]
    first_offset = tail.offset
    assert first_offset == path.stat().st_size
    assert tail.read_new() == []
    append_bytes(path, encode_records([{"n": 3}]))
    assert tail.read_new() == [{"n": 3}]
    assert tail.line_count == 3
    assert tail.offset == path.stat().st_size > first_offset


def test_reader_leaves_a_torn_tail_unconsumed(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(line({"n": 1}) + b'{"n":2,"te')
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}]
    assert tail.offset == len(line({"n": 1}))
    assert tail.corrupt == []
    # The writer finishes its line: the reader now gets the whole record, once.
    with open(path, "ab") as fh:
        fh.write(b'xt":"x"}\n')
    assert tail.read_new() == [{"n": 2, "text": "x"}]
    assert tail.read_new() == []
    assert tail.corrupt == []


def test_repair_cuts_only_the_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    good = line({"n": 1}) + line({"n": 2})
    path.write_bytes(good + b'{"n":3,"half')
    assert repair_torn_tail(path).cut == len(b'{"n":3,"half')
    assert path.read_bytes() == good
    assert repair_torn_tail(path).cut == 0  # a clean file is left alone
    assert path.read_bytes() == good


def test_repair_of_a_file_that_is_all_tail(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"never":"finished')
    assert repair_torn_tail(path).cut == len(b'{"never":"finished')
    assert path.read_bytes() == b""


def test_repair_walks_back_over_a_tail_longer_than_one_block(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    good = line({"n": 1})
    torn = b'{"evidence":"' + b"x" * 200_000
    path.write_bytes(good + torn)
    assert repair_torn_tail(path).cut == len(torn)
    assert path.read_bytes() == good


def test_corrupt_lines_are_reported_with_line_numbers_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    data = line({"n": 1}) + b"this is not json\n" + line({"n": 2}) + b"[1, 2]\n" + line({"n": 3})
    path.write_bytes(data)
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert [c.line_no for c in tail.corrupt] == [2, 4]
    assert data[tail.corrupt[0].offset :].startswith(b"this is not json\n")
    assert data[tail.corrupt[1].offset :].startswith(b"[1, 2]\n")
    assert tail.corrupt[1].error == "not a JSON object"
    # Reported once, numbered from the start of the file on later reads too.
    append_bytes(path, b"{oops\n" + line({"n": 4}))
    assert tail.read_new() == [{"n": 4}]
    assert [c.line_no for c in tail.corrupt] == [2, 4, 6]
    # The file is never rewritten: the corrupt lines stay for a person to fix.
    assert b"this is not json\n" in path.read_bytes()


def test_encode_records_is_one_compact_line_per_record(tmp_path: Path) -> None:
    records = [{"text": "two\nlines", "who": "Zoë"}, {"n": 1}]
    data = encode_records(records)
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    assert "Zoë".encode() in data  # non-ASCII kept readable
    path = tmp_path / "l.jsonl"
    append_bytes(path, data)
    append_bytes(path, data, fsync=False)
    assert JsonlTail(path).read_new() == records + records


def test_records_of_one_append_are_read_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    append_bytes(path, encode_records([{"n": 1}]))
    batch = encode_records([{"n": 2}, {"n": 3}, {"n": 4}])
    assert batch.count(b'"more":true') == 2 and not batch.rstrip().endswith(b'"more":true}')
    cut = batch.index(b"\n", batch.index(b"\n") + 1) + 1  # two complete lines of three
    with open(path, "ab") as fh:
        fh.write(batch[:cut])
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}]
    assert (tail.offset, tail.line_count) == (len(encode_records([{"n": 1}])), 1)
    with open(path, "ab") as fh:
        fh.write(batch[cut:])
    assert tail.read_new() == [{"n": 2}, {"n": 3}, {"n": 4}]
    assert tail.line_count == 4 and tail.corrupt == []


def test_repair_cuts_an_unfinished_append_whole(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    done = encode_records([{"n": 1}, {"n": 2}])
    unfinished = encode_records([{"n": 3, "text": "x" * 9000}, {"n": 4}, {"n": 5}])
    second_end = unfinished.index(b"\n", unfinished.index(b"\n") + 1) + 1
    for keep in (second_end, second_end + 5, unfinished.index(b"\n") + 1):
        path.write_bytes(done + unfinished[:keep])
        assert repair_torn_tail(path).cut == keep
        assert path.read_bytes() == done
        assert JsonlTail(path).read_new() == [{"n": 1}, {"n": 2}]
    path.write_bytes(done + unfinished)
    assert repair_torn_tail(path).cut == 0  # a finished append is left alone


def test_a_corrupt_line_ends_an_unfinished_append(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    batch = encode_records([{"n": 1}, {"n": 2}])
    path.write_bytes(batch[: batch.index(b"\n") + 1] + b"hand-edited garbage\n")
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}]
    assert [c.line_no for c in tail.corrupt] == [2]
    assert tail.read_new() == [] and len(tail.corrupt) == 1  # reported once


def test_repair_restores_the_newline_of_a_complete_last_record(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(line({"n": 1}) + line({"n": 2})[:-1])  # an `echo -n` round trip
    tail = JsonlTail(path)
    assert tail.read_new() == [{"n": 1}]  # a reader cannot tell it from a write in progress
    repair = repair_torn_tail(path)
    assert (repair.newline_restored, repair.cut) == (True, 0)
    assert path.read_bytes() == line({"n": 1}) + line({"n": 2})
    assert tail.read_new() == [{"n": 2}]
    assert not (tmp_path / "l.jsonl.torn").exists()


def test_repair_keeps_what_it_cuts_aside_under_a_header(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    done = encode_records([{"n": 1}])
    unfinished = encode_records([{"n": 2}, {"n": 3}])
    partial = unfinished[: unfinished.index(b"\n") + 4]  # one whole line, a torn second
    path.write_bytes(done + partial)
    repair = repair_torn_tail(path)
    assert (repair.cut, repair.lines) == (len(partial), 2)
    assert path.read_bytes() == done
    assert repair.kept == tmp_path / "l.jsonl.torn"
    header, kept = repair.kept.read_bytes().split(b"\n", 1)
    assert (
        header.startswith(b"# ") and f"at byte {len(done)}: {len(partial)} bytes".encode() in header
    )
    assert kept == partial + b"\n"
    assert (
        "kept in l.jsonl.torn" in repair.describe() and f"{len(partial)} bytes" in repair.describe()
    )
    # A second cut is added below the first: nothing kept aside is ever overwritten.
    path.write_bytes(done + b'{"torn')
    assert repair_torn_tail(path).cut == len(b'{"torn')
    assert repair.kept.read_bytes().startswith(header + b"\n" + partial)
    assert repair.kept.read_bytes().endswith(b'{"torn\n')


def test_corrupt_lines_keep_the_numbers_they_still_show(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(
        line({"n": 1})
        + b'{"seq": 7, "op":"idea.add","id":"#3" oops, "text":"say \\"id\\":\\"#99\\""}\n'
    )
    tail = JsonlTail(path)
    tail.read_new()
    (bad,) = tail.corrupt
    assert (bad.seq, bad.ids) == (7, {"#": 3})  # an escaped quote inside a text is no id


def test_a_failed_append_is_cut_off_again(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse the bytes past the limit (EFBIG), mid-write."""
    import resource
    import signal

    path = tmp_path / "l.jsonl"
    append_bytes(path, encode_records([{"n": 1}]))
    before = path.read_bytes()
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 10, hard))
    try:
        try:
            append_bytes(path, encode_records([{"n": 2, "text": "x" * 100}]))
        except AppendError as exc:
            error = exc
        else:
            raise AssertionError("the append past the file size limit did not fail")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert error.state == UNDONE and error.errno == errno.EFBIG
    assert path.read_bytes() == before  # the 10 bytes that fitted were cut off again
