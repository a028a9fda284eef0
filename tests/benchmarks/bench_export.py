"""Benchmark: `horde-tui export` and `horde-tui serve` on a long run (issue 17).

    python tests/benchmarks/bench_export.py [--events 200000] [--messages 2000]
        [--readers 20] [--requests 30] [--rate 200]

A fixture run is written as `bench_app.py` writes one (12 members, their spawns, then
synthetic events shaped like the store's), plus one session transcript of `--messages`
messages per member (tool calls and 40-line tool results, as members write them).
Reported:

- export: `horde-tui export <run>` in a child process, wall time and the child's peak
  RSS (`ru_maxrss`), pages and megabytes written;
- serve: `horde-tui serve --port 0` in a child process while this process appends
  `--rate` events a second to the run; after one look at each page (the server indexes
  the run on its first look: reported apart), `--readers` concurrent readers each fetch
  `--requests` pages round-robin from a mix (overview, findings, the collaboration page,
  the newest event-audit page, a transcript page, the graph), waiting about `--think`
  seconds between pages (default 1 s: three times the load of live pages reloading
  every 3 s; `--think 0` floods); median, p95 and max latency, and the server's peak RSS.

Targets: export < 30 s and < 300 MB on the 2-core machine; served p95 < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import RUN_ID, write_run
from bench_tail import MEMBERS, write_events


def write_transcripts(run: Path, messages: int) -> None:
    """One session per member: `messages` lines, a tool call then its 40-line result."""
    for m in range(1, MEMBERS + 1):
        folder = run / "sessions" / f"member-{m}"
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "20260102T120001-bench00.jsonl", "w", encoding="utf-8") as fh:
            for i in range(messages // 2):
                call = {
                    "role": "assistant",
                    "content": f"step {i}",
                    "tool_calls": [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {
                                "name": "bash",
                                "arguments": json.dumps({"command": f"sed -n {i}p x"}),
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 2000 + i, "completion_tokens": 50},
                }
                result = {
                    "role": "tool",
                    "tool_call_id": f"c{i}",
                    "name": "bash",
                    "content": "\n".join(f"{i}:{j} " + "x" * 60 for j in range(40)),
                }
                fh.write(json.dumps(call) + "\n" + json.dumps(result) + "\n")


def bench_export(horde: Path, out: Path) -> None:
    env = {**os.environ, "HORDE_DIR": str(horde)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "horde_tui", "export", RUN_ID, "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode != 0:
        raise SystemExit(f"export failed: {done.stderr[-2000:]}")
    folder = out / f"horde-export-{RUN_ID}"
    files = [p for p in folder.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files) / 1e6
    note = "" if peak > before else " (at most; an earlier child peaked higher)"
    print(
        f"export   {wall:7.1f} s   peak RSS {peak / 1024:6.0f} MB{note}   "
        f"{len(files)} pages, {size:.0f} MB"
    )


def appender(path: Path, rate: int, stop: threading.Event, start: int) -> None:
    rng, n = random.Random(11), start
    while not stop.is_set():
        write_events(path, n, max(1, rate // 10), rng)
        n += max(1, rate // 10)
        stop.wait(0.1)


async def readers(
    base: str, count: int, requests: int, pages: list[str], think: float = 0.0
) -> list[tuple[float, str]]:
    import aiohttp

    latencies: list[tuple[float, str]] = []

    async def reader(k: int) -> None:
        async with aiohttp.ClientSession() as session:
            for r in range(requests):
                url = f"{base}/{pages[(k + r) % len(pages)]}"
                t0 = time.perf_counter()
                async with session.get(url) as resp:
                    await resp.read()
                    assert resp.status == 200, (url, resp.status)
                latencies.append((time.perf_counter() - t0, url.rsplit("/", 1)[-1]))
                await asyncio.sleep(think * random.uniform(0.5, 1.5))

    await asyncio.gather(*(reader(k) for k in range(count)))
    return latencies


def bench_serve(horde: Path, run: Path, args: argparse.Namespace) -> None:
    env = {**os.environ, "HORDE_DIR": str(horde)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "horde_tui", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    stop = threading.Event()
    try:
        assert proc.stdout is not None
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/", proc.stdout.readline())
        assert found, "serve did not start"
        base = found.group(1)
        last = -(-(args.events + 2 + MEMBERS) // 1000)
        pages = [
            f"runs/{RUN_ID}/index.html",
            f"runs/{RUN_ID}/findings.html",
            f"runs/{RUN_ID}/collaboration.html",
            f"runs/{RUN_ID}/events-{last}.html",
            f"runs/{RUN_ID}/members/member-3/transcript-1-{min(7, -(-args.messages // 50))}.html",
            f"runs/{RUN_ID}/graph.html",
        ]
        t0 = time.perf_counter()
        asyncio.run(readers(base, 1, len(pages), pages))  # the first look indexes the run
        first = time.perf_counter() - t0
        writer = threading.Thread(
            target=appender, args=(run / "events.jsonl", args.rate, stop, args.events + 100)
        )
        writer.start()
        timed = asyncio.run(readers(base, args.readers, args.requests, pages, args.think))
        stop.set()
        writer.join()
        lat = sorted(t for t, _ in timed)
        slowest = max(timed)
        p95 = lat[int(0.95 * (len(lat) - 1))]
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = re.search(r"VmHWM:\s+(\d+) kB", status)
        rss = f"{int(hwm.group(1)) / 1024:.0f} MB" if hwm else "?"
        print(
            f"serve    first look at every page once: {first:.1f} s (indexing the run)\n"
            f"         then {len(lat)} requests by {args.readers} readers (think {args.think:g} s) "
            f"while {args.rate} ev/s "
            f"are appended: median {statistics.median(lat) * 1000:.1f} ms, "
            f"p95 {p95 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms ({slowest[1]}); "
            f"server peak RSS {rss}"
        )
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="seconds a reader waits between pages (a live page reloads every 3 s; 0: flood)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        horde = Path(tmp) / ".horde"
        run = write_run(horde, args.events)
        write_transcripts(run, args.messages)
        mb = (run / "events.jsonl").stat().st_size / 1e6
        print(
            f"run: {MEMBERS} members, {args.events:,} events ({mb:.0f} MB), "
            f"{args.messages:,}-message transcripts; load {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} cores"
        )
        bench_export(horde, Path(tmp) / "out")
        bench_serve(horde, run, args)


if __name__ == "__main__":
    main()
