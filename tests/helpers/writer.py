"""A horde member that writes a mix of actions through `run_action`, for stress and crash tests.

    python writer.py ROOT ACTOR TAG COUNT ACKS [--run R] [--resume]
                     [--pace-ms N]
                     [--crash torn|torn-batch|after-append|mid-projection --crash-at K]

Each unit of six writes is: idea, claim it, post, fact, finding under the idea, done.
Texts name a path unique to TAG and the unit (`src/TAG/file_I.py`), so dedup never
merges two of them. After every acknowledged (ok) write, one JSON line goes to ACKS with
flush + fsync, so a test can kill this process at any moment and know exactly what was
acknowledged. A refused write exits with status 3 (the tests expect none).

Write number N is sent with `requestId` TAG-N. `--resume` carries on where an earlier,
killed writer with the same ACKS stopped: it drops a torn last ack line and sends the
first unacknowledged write again with the same requestId, as a member restarted after a
kill would. The killed writer may already have written it; the store must then answer
from the first write (the receipt says "replayed"), never write it twice. It prints
`resumed TAG-N replayed|fresh` on stdout.

`--crash` makes the K-th ledger append (1-based) die by SIGKILL at a chosen point:
`torn` writes half the first record line; `torn-batch` writes the first record of a
multi-record append whole and half of the second (what a kill between two pages of a
large write, or a disk filling up, leaves); `after-append` writes it whole and dies
before the projections; `mid-projection` dies after writing half a projection's temp file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from horde_tui.protocol import run_action
from horde_tui.store import paths as store_paths
from horde_tui.store import store as store_module
from horde_tui.store.store import HordeStore


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install_crash(mode: str, at: int) -> None:
    """Patch the store's write primitives so the `at`-th ledger append dies as `mode`."""
    real_append = store_module.append_bytes
    real_atomic = store_module.atomic_write_text
    appends = 0
    armed = False

    def append_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
        nonlocal appends, armed
        if path.name == "ledger.jsonl":
            appends += 1
            if appends == at:
                if mode == "torn":
                    first = data[: data.index(b"\n") + 1]
                    real_append(path, first[: len(first) // 2], fsync=True)
                    die()
                if mode == "torn-batch":
                    first_end = data.index(b"\n") + 1
                    second_end = data.index(b"\n", first_end) + 1  # needs two records
                    real_append(path, data[: (first_end + second_end) // 2], fsync=True)
                    die()
                real_append(path, data, fsync=fsync)
                if mode == "after-append":
                    die()
                armed = True
                return
        real_append(path, data, fsync=fsync)

    def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
        if armed and mode == "mid-projection":
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text[: len(text) // 2], encoding="utf-8")
            die()
        real_atomic(path, text, fsync=fsync)

    store_module.append_bytes = append_bytes  # type: ignore[assignment]
    store_module.atomic_write_text = atomic_write_text  # type: ignore[assignment]
    assert store_paths.atomic_write_text is real_atomic


def unit_calls(tag: str, i: int, idea_id: str | None) -> list[tuple[str, dict[str, Any]]]:
    path = f"src/{tag}/file_{i}.py"
    return [
        ("idea", {"text": f"Audit {path} for unchecked request input ({tag} unit {i})"}),
        ("claim", {"id": idea_id}),
        ("post", {"text": f"{tag} progress {i}: reading {path}"}),
        ("fact", {"text": f"{path} reads its settings from the environment ({tag} {i})"}),
        (
            "finding",
            {
                "text": f"Request input reaches the file reader unchecked in {path} line {i + 1}",
                "idea": idea_id,
                "concern": f"{tag}-input",
                "concernDef": f"Unchecked request values in the {tag}pkg package and {tag}mod helpers",
                "evidence": f"{path}:{i + 1} passes the request value straight through",
                "importance": "medium",
                "confidence": "high",
            },
        ),
        ("done", {"id": idea_id, "result": f"filed a finding for {path}"}),
    ]


def resume_point(acks: Path) -> tuple[int, str | None]:
    """Acknowledged writes so far, and the open unit's idea id; cut a torn last ack."""
    if not acks.exists():
        return 0, None
    data = acks.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        os.truncate(acks, len(whole))  # killed mid-line: that write was never acknowledged
    done = [json.loads(line) for line in whole.decode().splitlines()]
    step = len(done) % 6
    return len(done), (done[len(done) - step]["id"] if step else None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("actor")
    ap.add_argument("tag")
    ap.add_argument("count", type=int)
    ap.add_argument("acks", type=Path)
    ap.add_argument("--run", default="r1")
    ap.add_argument("--crash", choices=["torn", "torn-batch", "after-append", "mid-projection"])
    ap.add_argument("--crash-at", type=int, default=1)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--pace-ms", type=int, default=0, help="sleep after each acknowledged write")
    args = ap.parse_args()
    if args.crash:
        install_crash(args.crash, args.crash_at)

    store = HordeStore(args.root, args.actor)
    ack_fd = os.open(args.acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    written, idea_id = resume_point(args.acks) if args.resume else (0, None)
    first = written if args.resume else -1
    unit, start = divmod(written, 6)
    while written < args.count:
        for step in range(start, 6):
            if written >= args.count:
                break
            action, fields = unit_calls(args.tag, unit, idea_id)[step]
            raw = {"action": action, "requestId": f"{args.tag}-{written}", **fields}
            while True:
                result = run_action(store, raw, run=args.run)
                if result.ok or "could not take" not in result.text:
                    break  # a lock timeout wrote nothing: retry with the same requestId
            if not result.ok or result.text.startswith("duplicate"):
                print(f"{args.actor} {action} refused: {result.text}", file=sys.stderr)
                return 3
            if written == first:
                how = "replayed" if "(replayed: same requestId)" in result.text else "fresh"
                print(f"resumed {raw['requestId']} {how}", flush=True)
            if action == "idea":
                idea_id = result.id
            key = unit_calls(args.tag, unit, idea_id)[0 if action == "claim" else step][1]
            ack = {"actor": args.actor, "action": action, "id": result.id, "key": key.get("text")}
            os.write(ack_fd, (json.dumps(ack) + "\n").encode())
            os.fsync(ack_fd)
            written += 1
            if args.pace_ms:
                time.sleep(args.pace_ms / 1000)
        unit, start, idea_id = unit + 1, 0, None
    os.close(ack_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
