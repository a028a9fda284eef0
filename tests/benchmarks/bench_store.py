"""Benchmark: latency and throughput of `horde` tool writes through the real store.

Measures p50/p99 latency of one write (`run_action`, lock + catch-up + append + fsync +
projections + events) and total throughput, for 1 and 12 concurrent writer processes,
with the ledgers pre-filled to 100 and to 10,000 entries, each writer writing directly
under the lock (the one write path); then cold `horde-tui tool` writes (a fresh process
each) at 10,000 entries: the lock hold each reports through `HORDE_LOCK_TRACE`, and the
wall time. Every figure is the median of `--repeat` runs.

    python tests/benchmarks/bench_store.py              # full run (a few minutes)
    python tests/benchmarks/bench_store.py --quick      # smaller, for a smoke check
    python tests/benchmarks/bench_store.py --cli-storm  # also 12 shells of cold writes

Targets (issue 2): p99 <= 25 ms for one writer at 10,000 entries, and p99 at 10,000
within 3x of p99 at 100. Issue 11, item 8: with 12 writers, p99 < 100 ms at 100 and at
10,000 entries (their throughput against one writer's is printed, not a target: issue 31
withdrew the 0.8x target, which measured CPU contention at a write rate no run nears;
`bench_real_load.py` measures a run's load). Item 7: a cold `horde-tui tool` write at
10,000 entries holds the lock < 10 ms; its wall time is printed (the < 300 ms target was
met through the store server, which issue 31 took away; 259-302 ms directly before).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def writer(root: str, name: str, writes: int, seed: int, out: str, start: Any) -> None:
    """One writer process: a mix of idea / post / fact writes, each timed."""
    rng = random.Random(seed)
    store = HordeStore(Path(root), name)
    store.refresh()  # the initial fold is start-up cost, not per-write latency
    # So is a process's first write of each kind: an idea or fact readies its match
    # indexes from the checkpoint (`dispatch.ASKS`).
    for kind in ("post", "idea", "fact"):
        warm = run_action(store, {"action": kind, "text": f"{name} warming up {kind}s"}, run=RUN)
        if not warm.ok:
            raise SystemExit(f"{name}: warm-up {kind} refused: {warm.text}")
    start.wait()  # every writer is warm: all start together
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


def held_ms(line: str) -> float:
    """The hold time of one `HORDE_LOCK_TRACE` line (`... held_ms=1.234`)."""
    return float(dict(part.split("=", 1) for part in line.split())["held_ms"])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scenario(entries: int, procs: int, writes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".horde"
        prefill(root, entries)
        trace = Path(tmp) / "lock-trace"
        os.environ["HORDE_LOCK_TRACE"] = str(trace)  # the writers inherit it
        ctx = mp.get_context("spawn")
        start = ctx.Barrier(procs + 1)
        jobs = []
        for p in range(procs):
            out = str(Path(tmp) / f"lat-{p}.json")
            proc = ctx.Process(
                target=writer,
                args=(str(root), f"member-{p + 1}", writes, p + 11, out, start),
            )
            proc.start()
            jobs.append((proc, out))
        start.wait(timeout=600)
        started = time.perf_counter()
        for proc, _ in jobs:
            proc.join()
            if proc.exitcode != 0:
                raise SystemExit(f"writer failed with exit code {proc.exitcode}")
        wall = time.perf_counter() - started
        del os.environ["HORDE_LOCK_TRACE"]
        lat = [x for _, out in jobs for x in json.loads(Path(out).read_text())]
        held = [held_ms(line) for line in trace.read_text().splitlines()]
    return {
        "entries": entries,
        "writers": procs,
        "writes": len(lat),
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": pct(lat, 0.99) * 1000,
        "throughput_per_s": len(lat) / wall,
        "held_ms": statistics.median(held),
    }


def median_row(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over repeated runs of one scenario."""
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def cold_write(root: Path, trace: Path, text: str, action: str = "post") -> tuple[float, float]:
    """One `horde-tui tool ACTION` in a fresh process: (lock hold, wall time) in seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env |= {"HORDE_DIR": str(root), "HORDE_RUN": RUN, "HORDE_LOCK_TRACE": str(trace)}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "horde_tui", "tool", action, f"text={text}"],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not proc.stdout.startswith("ok"):
        raise SystemExit(f"cold write failed: {proc.stdout}{proc.stderr}")
    last = trace.read_text().splitlines()[-1]
    held = held_ms(last) / 1000
    return held, wall


def cold_cli(entries: int, samples: int) -> dict[str, float]:
    """Cold `horde-tui tool` writes: the first with no checkpoint (it folds everything,
    then saves one), then `samples` more that start from the checkpoint."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".horde"
        prefill(root, entries)
        (root / ".ledger.checkpoint").unlink(missing_ok=True)
        trace = Path(tmp) / "trace"
        first_held, first_wall = cold_write(root, trace, "the first cold write")
        if not (root / ".ledger.checkpoint").exists():
            raise SystemExit("the first cold write saved no checkpoint")
        pairs = [cold_write(root, trace, f"cold write {n}") for n in range(samples)]
        held, wall = [h for h, _ in pairs], [w for _, w in pairs]
        # An idea's decision asks the idea index: unpacked from the checkpoint first.
        ideas = [
            cold_write(root, trace, f"check the q{n}x parser in src/cold/q{n}.py", "idea")
            for n in range(samples)
        ]
    return {
        "idea_held_ms": statistics.median(h for h, _ in ideas) * 1000,
        "idea_wall_ms": statistics.median(w for _, w in ideas) * 1000,
        "first_held_ms": first_held * 1000,
        "first_wall_ms": first_wall * 1000,
        "held_ms": statistics.median(held) * 1000,
        "held_max_ms": max(held) * 1000,
        "wall_ms": statistics.median(wall) * 1000,
        "wall_max_ms": max(wall) * 1000,
    }


def shell(root: str, trace: str, name: str, writes: int) -> None:
    """One shell running cold `horde-tui tool` writes back to back; a refusal is counted."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env |= {"HORDE_DIR": root, "HORDE_RUN": RUN, "HORDE_MEMBER": name, "HORDE_LOCK_TRACE": trace}
    refused = 0
    for n in range(writes):
        proc = subprocess.run(
            [sys.executable, "-m", "horde_tui", "tool", "post", f"text={name} cold {n}"],
            env=env,
            capture_output=True,
            text=True,
        )
        refused += proc.returncode != 0
    Path(trace).with_suffix(f".{name}").write_text(str(refused))


def cli_storm(entries: int, shells: int, writes: int) -> dict[str, float]:
    """`shells` concurrent shells of cold `horde-tui tool` writes (issue 11 item 7 saw
    1.1% of 2,400 such writes refused on the 10 s lock timeout at ~2,000 entries)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".horde"
        prefill(root, entries)
        trace = Path(tmp) / "trace"
        ctx = mp.get_context("spawn")
        jobs = [
            ctx.Process(target=shell, args=(str(root), str(trace), f"shell-{s}", writes))
            for s in range(shells)
        ]
        t0 = time.perf_counter()
        for job in jobs:
            job.start()
        for job in jobs:
            job.join()
        wall = time.perf_counter() - t0
        refused = sum(int(trace.with_suffix(f".shell-{s}").read_text()) for s in range(shells))
        held = [held_ms(line) for line in trace.read_text().splitlines()]
    return {
        "writes": shells * writes,
        "refused": refused,
        "held_p50_ms": statistics.median(held),
        "held_p99_ms": pct(held, 0.99),
        "writes_per_s": shells * writes / wall,
    }


def cli_list_seconds(samples: int = 9) -> float:
    """Median wall time of `horde-tui tool list` (a fresh process) on a small horde."""
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
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (median)")
    parser.add_argument("--cli-storm", action="store_true", help="12 shells of cold writes")
    args = parser.parse_args()
    single, each = (60, 15) if args.quick else (300, 50)
    repeat = 1 if args.quick else args.repeat
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    for entries in (100, 10_000):
        for procs, writes in ((1, single), (12, each)):
            runs = [scenario(entries, procs, writes) for _ in range(repeat)]
            rows.append(median_row(runs))
    print(f"\nmedian of {repeat} run(s) each")
    print(
        f"{'entries':>8} {'writers':>7} {'writes':>6} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'writes/s':>9} {'lock held ms':>12}"
    )
    for r in rows:
        print(
            f"{r['entries']:>8.0f} {r['writers']:>7.0f} {r['writes']:>6.0f} "
            f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['throughput_per_s']:>9.1f} "
            f"{r['held_ms']:>12.2f}"
        )
    row = {(r["entries"], r["writers"]): r for r in rows}
    one = {e: row[e, 1] for e in (100, 10_000)}
    ratio = one[10_000]["p99_ms"] / one[100]["p99_ms"]
    print(
        f"\none writer, direct: p99 at 10,000 = {one[10_000]['p99_ms']:.2f} ms (target <= 25), "
        f"p99(10,000)/p99(100) = {ratio:.2f} (target <= 3)"
    )
    ok = one[10_000]["p99_ms"] <= 25 and ratio <= 3
    for entries in (100, 10_000):
        many, alone = row[entries, 12], row[entries, 1]
        share = many["throughput_per_s"] / alone["throughput_per_s"]
        print(
            f"12 writers at {entries:,}: p99 {many['p99_ms']:.1f} ms (target < 100); "
            f"throughput {share:.2f}x one writer's (no target)"
        )
        ok = ok and many["p99_ms"] < 100
    cold = cold_cli(10_000, 3 if args.quick else 9)
    print(
        f"\ncold `horde-tui tool post` at 10,000 entries, from the checkpoint: lock held "
        f"median {cold['held_ms']:.1f} ms (max {cold['held_max_ms']:.1f}; target < 10), "
        f"wall median {cold['wall_ms']:.0f} ms (max {cold['wall_max_ms']:.0f})"
    )
    print(
        f"cold `horde-tui tool idea` (unpacks the idea index): lock held median "
        f"{cold['idea_held_ms']:.1f} ms, wall median {cold['idea_wall_ms']:.0f} ms"
    )
    print(
        f"the first one, with no checkpoint (folds 10,000, then saves one): lock held "
        f"{cold['first_held_ms']:.1f} ms, wall {cold['first_wall_ms']:.0f} ms"
    )
    ok = ok and cold["held_ms"] < 10
    if args.cli_storm:
        storm = cli_storm(2_000, 12, 10 if args.quick else 40)
        print(
            f"12 shells of cold writes at 2,000 entries: {storm['writes']:.0f} writes, "
            f"{storm['refused']:.0f} refused, lock held p50 {storm['held_p50_ms']:.1f} ms "
            f"p99 {storm['held_p99_ms']:.1f} ms, {storm['writes_per_s']:.1f} writes/s"
        )
        ok = ok and storm["refused"] == 0
    cli_s = cli_list_seconds()
    print(
        f"`horde-tui tool list` on a 100-entry horde, a fresh process: median {cli_s * 1000:.0f} ms "
        "(target: well under 500)"
    )
    ok = ok and cli_s < 0.5
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
