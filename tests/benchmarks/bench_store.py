"""Benchmark: latency and throughput of `horde` tool writes through the real store.

Measures p50/p99 latency of one write (`run_action`, lock + catch-up + append + fsync +
projections + events) and total throughput, for 1 and 12 concurrent writer processes,
with the ledgers pre-filled to 100 and to 10,000 entries.

    python tests/benchmarks/bench_store.py            # full run (a few minutes)
    python tests/benchmarks/bench_store.py --quick    # smaller, for a smoke check

Targets (issue 2): p99 <= 25 ms for one writer at 10,000 entries, and p99 at 10,000
within 3x of p99 at 100.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from horde_tui.protocol import run_action
from horde_tui.store.jsonl import append_bytes, encode_records
from horde_tui.store.store import HordeStore, utc_now

RUN = "bench"
_VOCAB = [
    "".join(random.Random(i).choices("bcdfghjklmnpqrstvwxz", k=3))
    + random.Random(i + 7).choice(["al", "er", "on", "is", "um"])
    for i in range(4000)
]


def _text(rng: random.Random, n: int, tag: str) -> str:
    words = " ".join(rng.choice(_VOCAB) for _ in range(n))
    return f"{words} in src/{tag}.py"


def prefill(root: Path, entries: int, seed: int = 1) -> None:
    """Write `entries` ledger records directly (ideas, facts, posts, findings), then project."""
    rng = random.Random(seed)
    records = [
        {
            "seq": 1,
            "ts": utc_now(),
            "run": RUN,
            "actor": "parent",
            "op": "run.start",
            "task_sha256": "0" * 64,
        }
    ]
    counts = {"idea": 0, "fact": 0, "finding": 0}
    records.append({"op": "concern.add", "slug": "bench", "definition": "benchmark entries"})
    for i in range(entries):
        kind = ("idea", "fact", "post", "finding")[i % 4]
        text = _text(rng, 12, f"pre/{kind}_{i}")
        if kind == "idea":
            counts["idea"] += 1
            records.append({"op": "idea.add", "id": f"#{counts['idea']}", "text": text})
        elif kind == "fact":
            counts["fact"] += 1
            records.append({"op": "fact.add", "id": f"T{counts['fact']}", "text": text})
        elif kind == "post":
            records.append({"op": "board.post", "text": text})
        else:
            counts["finding"] += 1
            records.append(
                {
                    "op": "finding.add",
                    "id": f"F{counts['finding']}",
                    "idea": "#1",
                    "concern": "bench",
                    "text": text,
                    "evidence": f"src/pre/e{i}.py:1",
                    "support": "tested",
                    "importance": "low",
                    "confidence": "medium",
                }
            )
    for seq, rec in enumerate(records, start=1):
        rec.setdefault("ts", utc_now())
        rec.setdefault("run", RUN)
        rec.setdefault("actor", "parent")
        rec["seq"] = seq
    root.mkdir(parents=True, exist_ok=True)
    (root / "runs" / RUN).mkdir(parents=True, exist_ok=True)
    (root / "runs" / RUN / "TASK.md").write_text("# Task\n\nbenchmark\n")
    append_bytes(root / "ledger.jsonl", encode_records(records))
    store = HordeStore(root, "parent")
    store.ensure_run(RUN)  # projects every ledger once


def writer(root: str, name: str, writes: int, seed: int, out: str, start_at: float) -> None:
    """One writer process: a mix of idea / post / fact writes, each timed."""
    rng = random.Random(seed)
    store = HordeStore(Path(root), name)
    store.refresh()  # the initial fold is start-up cost, not per-write latency
    run_action(store, {"action": "post", "text": f"{name} warming up"}, run=RUN)
    while time.time() < start_at:
        time.sleep(0.001)
    latencies = []
    for i in range(writes):
        kind = ("idea", "post", "fact")[i % 3]
        text = _text(rng, 10, f"{name}/w{i}")
        t0 = time.perf_counter()
        result = run_action(store, {"action": kind, "text": text}, run=RUN)
        latencies.append(time.perf_counter() - t0)
        if not result.ok:
            raise SystemExit(f"{name}: write {i} refused: {result.text}")
    Path(out).write_text(json.dumps(latencies))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scenario(entries: int, procs: int, writes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".horde"
        prefill(root, entries)
        ctx = mp.get_context("spawn")
        start_at = time.time() + 3.0 + 0.3 * procs
        jobs = []
        for p in range(procs):
            out = str(Path(tmp) / f"lat-{p}.json")
            proc = ctx.Process(
                target=writer, args=(str(root), f"member-{p + 1}", writes, p + 11, out, start_at)
            )
            proc.start()
            jobs.append((proc, out))
        for proc, _ in jobs:
            proc.join()
            if proc.exitcode != 0:
                raise SystemExit(f"writer failed with exit code {proc.exitcode}")
        wall = time.time() - start_at
        lat = [x for _, out in jobs for x in json.loads(Path(out).read_text())]
    return {
        "entries": entries,
        "writers": procs,
        "writes": len(lat),
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": pct(lat, 0.99) * 1000,
        "throughput_per_s": len(lat) / wall,
    }


def cli_list_seconds(samples: int = 9) -> float:
    """Median wall time of `horde-tui tool list` (a fresh process) on a small horde."""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".horde"
        prefill(root, 100)
        env = {**os.environ, "HORDE_DIR": str(root), "HORDE_RUN": RUN}
        times = []
        for _ in range(samples):
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "horde_tui", "tool", "list"],
                env=env,
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer writes, for a smoke check")
    args = parser.parse_args()
    single, each = (60, 15) if args.quick else (300, 50)
    rows = []
    for entries in (100, 10_000):
        rows.append(scenario(entries, 1, single))
        rows.append(scenario(entries, 12, each))
    print(
        f"{'entries':>8} {'writers':>7} {'writes':>6} {'p50 ms':>8} {'p99 ms':>8} {'writes/s':>9}"
    )
    for r in rows:
        print(
            f"{r['entries']:>8} {r['writers']:>7} {r['writes']:>6} {r['p50_ms']:>8.2f} "
            f"{r['p99_ms']:>8.2f} {r['throughput_per_s']:>9.1f}"
        )
    one = {r["entries"]: r for r in rows if r["writers"] == 1}
    ratio = one[10_000]["p99_ms"] / one[100]["p99_ms"]
    print(
        f"\none writer: p99 at 10,000 = {one[10_000]['p99_ms']:.2f} ms (target <= 25), "
        f"p99(10,000)/p99(100) = {ratio:.2f} (target <= 3)"
    )
    cli_s = cli_list_seconds()
    print(
        f"`horde-tui tool list` on a 100-entry horde, a fresh process: median {cli_s * 1000:.0f} ms "
        "(target: well under 500)"
    )
    ok = one[10_000]["p99_ms"] <= 25 and ratio <= 3 and cli_s < 0.5
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
