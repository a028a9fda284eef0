"""Integrity of the small I/O helpers (issue 11, item 6): atomic writes, reading
`events.jsonl` at finalize, and parsing the store's UTC timestamps under any local zone.
"""

from __future__ import annotations

import calendar
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from horde_tui.store import paths as store_paths
from horde_tui.store.jsonl import encode_records
from horde_tui.store.paths import atomic_write_bytes, atomic_write_text
from horde_tui.supervisor.finalize import read_events

# -- atomic_write_text ------------------------------------------------------------------


def test_two_threads_of_one_process_writing_one_file_never_collide(tmp_path: Path) -> None:
    """A per-pid temp name is shared by threads: one's rename takes the other's file."""
    path = tmp_path / "IDEAS.md"
    errors: list[BaseException] = []
    texts = [f"writer {n}\n" * 2000 for n in range(4)]

    def write(text: str) -> None:
        try:
            for _ in range(150):
                atomic_write_text(path, text, fsync=False)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert path.read_text() in texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["IDEAS.md"]


@pytest.mark.parametrize("write", [atomic_write_text, atomic_write_bytes])
def test_a_failed_atomic_write_leaves_no_temp_file(tmp_path: Path, write) -> None:
    target = tmp_path / "REPORT.md"
    target.mkdir()
    (target / "keep").write_text("x")  # os.replace onto a non-empty directory fails

    with pytest.raises(OSError):
        write(target, "new\n" if write is atomic_write_text else b"new\n")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["REPORT.md"]


def test_atomic_write_fsyncs_the_file_then_the_directory(tmp_path: Path, monkeypatch) -> None:
    """A rename is durable only once the directory is synced; spy on `os.fsync`."""
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(store_paths.os, "fsync", spy)
    atomic_write_text(tmp_path / "TASK.md", "task\n")
    assert synced == ["file", "dir"]

    synced.clear()
    atomic_write_text(tmp_path / "IDEAS.md", "ideas\n", fsync=False)
    assert synced == []


def test_temp_names_match_the_glob_that_clears_a_dead_writers_temps(
    tmp_path: Path, monkeypatch
) -> None:
    """`HordeStore._catch_up_locked` removes `.*.md.*.tmp`: a temp must match it."""
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: Path, dst: Path) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(store_paths.os, "replace", spy)
    atomic_write_text(tmp_path / "IDEAS.md", "x\n", fsync=False)
    assert len(seen) == 1
    assert Path(tmp_path / seen[0]).match(".*.md.*.tmp")
    assert str(os.getpid()) in seen[0]


# -- finalize.read_events ---------------------------------------------------------------


def test_read_events_leaves_an_unfinished_transaction_unread(tmp_path: Path) -> None:
    """Records still marked `"more": true` at the end belong to an append that died."""
    done = [{"id": "E1", "kind": "run-start"}, {"id": "E2", "kind": "member-spawn"}]
    torn = [{"id": "E3", "kind": "member-exit"}, {"id": "E4", "kind": "run-end"}]
    data = encode_records(done) + encode_records(torn).split(b"\n")[0] + b"\n"
    (tmp_path / "events.jsonl").write_bytes(data)

    events = read_events(tmp_path)

    assert events == done  # E3 (marked more, its E4 never written) is not an event
    assert all("more" not in e for e in events)


def test_read_events_skips_a_corrupt_line_and_a_torn_tail(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_bytes(b'{"id":"E1"}\nnot json\n{"id":"E2"}\n{"id":"E3","ki')

    assert [e["id"] for e in read_events(tmp_path)] == ["E1", "E2"]
    assert read_events(tmp_path / "missing") == []


# -- one UTC timestamp parser -------------------------------------------------------------

SUMMER = "2026-07-01T12:00:00.250000Z"
SUMMER_EPOCH = calendar.timegm((2026, 7, 1, 12, 0, 0)) + 0.25

_IN_ZONE = """
import json, sys, time
time.tzset()
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor import recover
from horde_tui.supervisor.reviews import _age_s
ts = sys.argv[1]
members = recover.rebuild_members(
    {"members": [{"name": "member-1"}]},
    [{"type": "lifecycle", "kind": "member-spawn", "member": "member-1", "ts": ts}],
)
print(json.dumps({
    "epoch": epoch(ts),
    "age": _age_s(ts, epoch(ts) + 90.0),
    "recover": members[0].started,
    "isdst": time.localtime(epoch(ts)).tm_isdst,
}))
"""


@pytest.mark.parametrize("zone", ["Europe/London", "America/New_York", "UTC"])
def test_timestamps_parse_as_utc_in_a_dst_zone(zone: str) -> None:
    env = {**os.environ, "TZ": zone}
    out = subprocess.run(
        [sys.executable, "-c", _IN_ZONE, SUMMER],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(out.stdout)

    assert got["isdst"] == (0 if zone == "UTC" else 1)  # the zone really is in DST
    for key in ("epoch", "recover"):
        assert got[key] == pytest.approx(SUMMER_EPOCH, abs=1e-3), key
    assert got["age"] == pytest.approx(90.0, abs=1e-3)


def test_no_module_parses_timestamps_on_its_own() -> None:
    """One parser: local-time and hand-rolled parsing elsewhere is how the DST bug came."""
    import horde_tui

    package = Path(horde_tui.__file__).parent
    offenders = [
        f"{path.relative_to(package)}: {word}"
        for path in package.rglob("*.py")
        if path.name != "timestamps.py"
        for word in ("strptime", "mktime", "fromisoformat", "time.timezone")
        if word in path.read_text()
    ]
    assert offenders == []


def test_the_parser_takes_the_forms_the_files_hold() -> None:
    from horde_tui.store.timestamps import epoch, parse_utc

    assert epoch(SUMMER) == pytest.approx(SUMMER_EPOCH)
    assert epoch("2026-07-01T12:00:00Z") == SUMMER_EPOCH - 0.25
    assert epoch("2026-07-01T12:00:00.123Z") == pytest.approx(SUMMER_EPOCH - 0.127)
    assert epoch("2026-07-01T13:00:00+01:00") == SUMMER_EPOCH - 0.25
    assert epoch("2026-07-01T12:00:00") == SUMMER_EPOCH - 0.25  # naive: UTC, not local
    assert epoch(1_700_000_000) == 1_700_000_000.0
    assert epoch(True) is None
    assert epoch("yesterday") is None
    assert epoch(None) is None
    stamp = parse_utc(SUMMER)
    assert stamp is not None and stamp.utcoffset() is not None
    assert stamp.utcoffset().total_seconds() == 0


def test_finalize_from_disk_in_a_dst_zone_reports_the_real_start(tmp_path: Path) -> None:
    """`horde-tui finalize` after a parent death: SUMMARY.md's start is the event's time."""
    root = tmp_path / ".horde"
    run_dir = root / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "MANIFEST.json").write_text(json.dumps({"members": [], "created": 0}))
    (run_dir / "events.jsonl").write_bytes(
        encode_records([{"id": "E1", "ts": SUMMER, "type": "lifecycle", "kind": "run-start"}])
    )
    script = (
        "import sys, time; time.tzset()\n"
        "from pathlib import Path\n"
        "from horde_tui.supervisor.recover import finalize_from_disk\n"
        "print(finalize_from_disk(Path(sys.argv[1]), 'r1').started)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        env={**os.environ, "TZ": "Europe/London"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert float(out.stdout.strip()) == pytest.approx(SUMMER_EPOCH, abs=1e-3)
    assert "2026-07-01 12:00:00 UTC" in (run_dir / "SUMMARY.md").read_text()
