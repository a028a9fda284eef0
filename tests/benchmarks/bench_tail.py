"""Benchmark: tailing a big `events.jsonl` for the UI (`horde_tui.view`).

    python tests/benchmarks/bench_tail.py

A synthetic run log of 200,000 events from 12 members and the parent (intents,
outcomes, lifecycle events, shaped like `HordeStore` writes them). Reported:

- the first index build (line offsets alone, then with the event facets);
- making an appended batch of 1,000 events visible under an active filter
  (refresh + filter update) [target: a few ms, well under one 100 ms UI frame];
- a filter change over all 200,000 events [target: well under a second];
- a refresh with nothing appended, and one with one event appended, at 20k, 100k and
  200k lines [target: the same at every size];
- formatting one screen (50 rows) of a filtered view.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from horde_tui.store.linefile import LineIndex
from horde_tui.view.events import EventFilter, EventView

MEMBERS = 12
ACTIONS = ("finding", "claim", "idea", "post", "done", "verify", "list", "fact")


def event(n: int, rng: random.Random, lifecycle: float = 0.04) -> str:
    """One event line as the store writes it (compact JSON, `ts`/`actor` first); a
    `lifecycle` share of them are the parent's lifecycle events about a member."""
    ts = f"2026-01-02T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{n % 999999:06d}Z"
    member = f"member-{rng.randint(1, MEMBERS)}"
    roll = rng.random()
    if roll < lifecycle:
        kind = rng.choice(("member-spawn", "member-exit", "phase-start", "member-reset"))
        ev = {"ts": ts, "actor": "parent", "type": "lifecycle", "kind": kind, "member": member}
    else:
        action = rng.choice(ACTIONS)
        ev = {"ts": ts, "actor": member, "action": action, "requestId": f"r{n}"}
        if roll < 0.52:
            ev |= {
                "type": "intent",
                "params": {"action": action, "text": "x" * rng.randint(40, 400)},
            }
        else:
            ev |= {"type": "outcome", "ok": True, "outcome": "created", "entry": f"F{n}",
                   "text": f"ok F{n} filed under #3 · concern sqli · r1 · unreviewed"}  # fmt: skip
    ev["id"] = f"E{n}"
    return json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_events(
    path: Path, start: int, count: int, rng: random.Random, lifecycle: float = 0.04
) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(event(n, rng, lifecycle) for n in range(start, start + count)))


def best(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of `repeat` runs, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def per_call(fn: Callable[[], object], calls: int) -> float:
    """Median seconds per call over 5 rounds of `calls` calls."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - t0) / calls)
    return statistics.median(rounds)


def main() -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        write_events(path, 1, 200_000, rng)
        mb = path.stat().st_size / 1e6
        print(f"events.jsonl: 200,000 events, {mb:.1f} MB, {MEMBERS} members + parent\n")

        t_index = best(lambda: LineIndex(path).refresh(), 3)
        views: list[EventView] = []
        t_view = best(lambda: views.append(EventView(path)) or views[-1].refresh(), 3)
        print(f"first build, line offsets only        {t_index * 1000:8.1f} ms")
        print(f"first build, offsets + event facets   {t_view * 1000:8.1f} ms")

        view = EventView(path, EventFilter.of(actors=["member-3"], kinds=["finding"]))
        view.refresh()
        batch = []
        next_n = 200_001
        for _ in range(5):
            write_events(path, next_n, 1_000, rng)
            next_n += 1_000
            t0 = time.perf_counter()
            view.refresh()
            view.texts(max(0, len(view) - 50), len(view))  # and show the new tail
            batch.append(time.perf_counter() - t0)
        print(
            f"1,000 appended events visible         {statistics.median(batch) * 1000:8.1f} ms"
            "  (refresh + filter + format 50 rows; median of 5)"
        )

        filters = [
            EventFilter.of(actors=["member-7"]),
            EventFilter.of(kinds=["member-spawn", "member-exit"]),
            EventFilter.of(actors=["member-2", "parent"], kinds=["outcome"]),
            EventFilter(),
        ]
        changes = []
        for flt in filters * 2:
            t0 = time.perf_counter()
            view.filter = flt
            changes.append(time.perf_counter() - t0)
        print(
            f"filter change over {len(view.index):,} events   {max(changes) * 1000:8.1f} ms"
            f"  (worst of {len(changes)}; median {statistics.median(changes) * 1000:.1f} ms)"
        )
        view.filter = EventFilter.of(actors=["member-5"])
        tops = iter(range(0, len(view) - 50, 97))  # a new screen each call: no cache hits
        t_screen = per_call(lambda: view.texts(top := next(tops), top + 50), 20)
        print(f"format one screen (50 filtered rows)  {t_screen * 1000:8.2f} ms  (uncached)\n")

    print("refresh cost as the file grows:")
    print(f"{'lines':>9} {'nothing appended':>18} {'one event appended':>20}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        n = 1
        view = EventView(path)
        for size in (20_000, 100_000, 200_000):
            write_events(path, n, size - (n - 1), rng)
            n = size + 1
            view.refresh()
            idle = per_call(view.refresh, 2_000)
            one = []
            for _ in range(200):
                write_events(path, n, 1, rng)
                n += 1
                t0 = time.perf_counter()
                view.refresh()
                one.append(time.perf_counter() - t0)
            print(f"{size:>9,} {idle * 1e6:>15.1f} us {statistics.median(one) * 1e6:>17.1f} us")


if __name__ == "__main__":
    main()
