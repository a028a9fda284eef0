"""Benchmark: what the identity rule costs a write.

    python tests/benchmarks/bench_identity.py [--writes 300] [--repeats 5]

A live run is stood up for real (this process records itself as the supervisor of run
`r1` with four members, as `Supervisor` does), then from a child process that stands for
a member's own process (its pid recorded, `HORDE_*` set as a supervisor sets them):

- walk: the first `identity.caller` of a process (the /proc ppid walk plus each
  ancestor's environment), median over fresh processes;
- check: `identity.refusal` + `identity.writer` once the walk is cached, per write;
- post: a whole `run_action` post (lock, fsync'd ledger append, projections), per write;

so the last two lines read as the rule's share of a write. Medians of `--repeats`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from pathlib import Path
from horde_tui.protocol import run_action
from horde_tui.store import identity
from horde_tui.store.store import HordeStore

root, writes = Path(sys.argv[1]), int(sys.argv[2])
sys.stdin.readline()  # the record names this process now
t0 = time.perf_counter()
via = identity.caller(root, "r1")
walk = time.perf_counter() - t0
assert via.kind == "member" and via.member == "member-1", via
t0 = time.perf_counter()
for _ in range(writes):
    assert identity.refusal(root, "r1", "member-1") is None
    identity.writer(root, "r1")
check = (time.perf_counter() - t0) / writes
store = HordeStore(root, "member-1")
run_action(store, {"action": "post", "text": "warm-up"}, run="r1")
t0 = time.perf_counter()
for i in range(writes):
    assert run_action(store, {"action": "post", "text": f"note {i}"}, run="r1").ok
post = (time.perf_counter() - t0) / writes
print(json.dumps({"walk": walk, "check": check, "post": post}))
"""


def one(root: Path, writes: int) -> dict[str, float]:
    from horde_tui.store import identity

    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_DIR=str(root), HORDE_RUN="r1", HORDE_MEMBER="member-1")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(writes)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    members = {f"member-{n}": None for n in range(2, 5)}
    identity.record_processes(
        root / "runs" / "r1", {"member-1": identity.proc_of(proc.pid), **members}
    )
    out, _ = proc.communicate("go\n", timeout=600)
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from horde_tui.store.store import HordeStore

    results = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / ".horde"
            HordeStore(root, "parent").ensure_run("r1")
            results.append(one(root, args.writes))
    for key, label in (
        ("walk", "first caller() of a process"),
        ("check", "refusal+writer per write"),
        ("post", "whole post per write"),
    ):
        value = statistics.median(r[key] for r in results)
        print(f"{label:32s} {value * 1e6:10.1f} us")
    share = statistics.median(r["check"] / r["post"] for r in results)
    print(f"{'rule share of a write':32s} {share * 100:10.2f} %")
    print(f"(median of {args.repeats}, {args.writes} writes each, at {time.strftime('%H:%M')})")


if __name__ == "__main__":
    main()
