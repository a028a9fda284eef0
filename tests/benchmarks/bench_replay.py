"""Benchmark: moving the replay cursor (`horde-tui replay`) on a 200,000-event run.

    python tests/benchmarks/bench_replay.py [--events 200000] [--steps 200] [--jumps 40]

A finished run is written the way the store writes one: 12 members whose `horde` calls
are an intent and an outcome each (`bench_tail`'s shapes), about 30% of them writes (a
ledger record each, of the `bench_store` kinds plus claims and reviews, with the seq in
the outcome as `store.transact` records it), 10% refused, the rest reads, and the
parent's lifecycle events (spawns, resets, exits), 20 events a second. The project's
`ledger.jsonl` holds those records.

Reported, through the app the command opens (`ReplayApp`, headless, 120x36, a pilot
pressing the key; each key timed from the start of the action it runs to the end of the
first frame composed after it, so the fold, the member table, the status line, the
visible tab and the repaint are all in, the pilot's own waiting is not): ms per key,
median and p95, for one event on (`.`) and back (`,`) and one minute on (`]`) and back (`[`),
from the middle of the run, with the Findings tab, the Graph tab and the Events tab
open. Then the same moves through `Replay` alone (the fold, without Textual), and the
time to open the run (index the log, fold the ledger).

Target (issue 19): one event in under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_store import _text
from bench_tail import MEMBERS

from horde_tui.app.replay import ReplayApp
from horde_tui.screens.base import AppConfig
from horde_tui.screens.replay import ReplayScreen
from horde_tui.view.replay import Replay

RUN_ID = "20260102-120000-repl"
T0 = 1_767_355_200.0
PER_SECOND = 20


def stamp(t: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
    return f"{whole}.{int((t % 1) * 1e6):06d}Z"


def dump(ev: dict[str, Any]) -> str:
    return json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_run(horde: Path, events: int, seed: int = 5) -> Path:
    """The run and its ledger (see the module docstring)."""
    rng = random.Random(seed)
    run = horde / "runs" / RUN_ID
    run.mkdir(parents=True)
    names = [f"member-{i}" for i in range(1, MEMBERS + 1)]
    (run / "TASK.md").write_text("# Task\n\nReview the sample project for injection bugs.\n")
    manifest = {
        "run": RUN_ID,
        "model": "openai/bench",
        "members": [{"name": n, "role": "member", "layers": []} for n in names],
        "request": {"count": MEMBERS, "layers": [], "until_stop": False},
    }
    (run / "MANIFEST.json").write_text(json.dumps(manifest))
    out: list[str] = []
    records: list[dict[str, Any]] = []
    counts = {"#": 0, "F": 0, "T": 0, "V": 0}
    n = 0

    def record(t: float, actor: str, **rec: Any) -> int:
        rec = {"seq": len(records) + 1, "ts": stamp(t), "run": RUN_ID, "actor": actor, **rec}
        records.append(rec)
        return int(rec["seq"])

    def event(t: float, actor: str, **ev: Any) -> None:
        nonlocal n
        n += 1
        out.append(dump({"ts": stamp(t), "actor": actor, **ev, "id": f"E{n}"}))

    record(T0, "parent", op="run.start", task_sha256="0" * 64)
    record(T0, "parent", op="concern.add", slug="bench", definition="benchmark entries")
    event(T0, "parent", type="lifecycle", kind="run-start", members=MEMBERS, model="openai/bench")
    event(T0, "parent", type="lifecycle", kind="phase-start", phase="discovery")
    for name in names:
        event(T0, "parent", type="lifecycle", kind="member-spawn", attempt=1, member=name)
    while n < events - 2:
        t = T0 + n / PER_SECOND
        actor = rng.choice(names)
        roll = rng.random()
        if roll < 0.01:
            kind = rng.choice(("member-reset", "member-exit", "member-spawn"))
            event(t, "parent", type="lifecycle", kind=kind, member=actor, cause="bench")
            continue
        action, rec = "list", None
        text = _text(rng, 12, f"{actor}/{n}")
        if roll < 0.09:
            action, rec = "post", {"op": "board.post", "text": text}
        elif roll < 0.15:
            counts["#"] += 1
            action, rec = "idea", {"op": "idea.add", "id": f"#{counts['#']}", "text": text}
        elif roll < 0.19 and counts["#"]:
            action = "claim"
            rec = {"op": "idea.claim", "id": f"#{rng.randint(1, counts['#'])}"}
        elif roll < 0.24 and counts["#"]:
            counts["F"] += 1
            action, rec = (
                "finding",
                {
                    "op": "finding.add",
                    "id": f"F{counts['F']}",
                    "idea": f"#{rng.randint(1, counts['#'])}",
                    "concern": "bench",
                    "text": text,
                    "evidence": f"src/{n}.py:1",
                    "support": "tested",
                    "importance": "low",
                    "confidence": "medium",
                },
            )
        elif roll < 0.27 and counts["F"]:
            counts["V"] += 1
            action, rec = (
                "review",
                {
                    "op": "review.add",
                    "id": f"V{counts['V']}",
                    "target": f"F{rng.randint(1, counts['F'])}",
                    "revision": 1,
                    "verdict": rng.choice(("supports", "partially-supports", "refutes")),
                    "support": "tested",
                    "checked": text,
                },
            )
        elif roll < 0.31:
            counts["T"] += 1
            action, rec = "fact", {"op": "fact.add", "id": f"T{counts['T']}", "text": text}
        refused = rec is None and roll < 0.41
        base = {"action": action, "requestId": f"r{n}"}
        event(t, actor, **base, type="intent", params={"action": action, "text": text})
        entry = rec["id"] if rec and "id" in rec else None
        seq = record(t + 0.01, actor, **rec) if rec else len(records)
        answer = "refused" if refused else ("created" if rec else "ok")
        ok = not refused
        event(t + 0.02, actor, **base, type="outcome", ok=ok, outcome=answer, entry=entry, seq=seq)
    t = T0 + n / PER_SECOND
    event(t, "parent", type="lifecycle", kind="phase-end", phase="discovery")
    event(t, "parent", type="lifecycle", kind="run-end", outcome="finished", diagnosis="bench")
    (run / "events.jsonl").write_text("".join(out))
    (horde / "ledger.jsonl").write_text("".join(dump(r) for r in records))
    return run


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[int(0.95 * (len(values) - 1))]
    return f"median {statistics.median(values) * 1e3:6.1f} ms   p95 {p95 * 1e3:6.1f} ms"


class KeyTimer:
    """Times each cursor key from the start of its action (`ReplayScreen.action_move`,
    what the key runs) to the end of the first frame the screen composes after the
    action returned (`Screen._compositor_refresh`: the changed lines rendered), or to
    the action's end when frames during it painted everything; the pilot's own waiting
    is not counted."""

    def __init__(self, screen: ReplayScreen) -> None:
        self.times: list[float] = []
        self._start: float | None = None
        self._done = False
        move, frame = screen.action_move, screen._compositor_refresh

        async def timed_move(how: str, direction: int) -> None:
            self._start, self._done = time.perf_counter(), False
            await move(how, direction)
            if screen._dirty_widgets or screen._layout_required or screen._repaint_required:
                self._done = True  # the frame that paints the rest ends it
            else:  # painted already, by frames while the tab folded in its thread
                self.times.append(time.perf_counter() - self._start)
                self._start = None

        def timed_frame() -> None:
            frame()
            if self._done and self._start is not None:
                self.times.append(time.perf_counter() - self._start)
                self._start, self._done = None, False

        screen.action_move = timed_move  # type: ignore[method-assign]
        screen._compositor_refresh = timed_frame  # type: ignore[method-assign]


async def through_the_app(run: Path, steps: int, jumps: int) -> None:
    replay = Replay(run)
    replay.seek(replay.total // 2)
    app = ReplayApp(replay, config=AppConfig.deterministic(T0))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        timer = KeyTimer(screen)
        await pilot.pause()
        for tab, key in (("Findings", "3"), ("Graph", "9"), ("Events", "7")):
            await pilot.press(key)
            await pilot.pause(0.5)  # the tab's first load (a fold to the cursor)
            for label, k, count in (
                ("one event on  (.)", "full_stop", steps),
                ("one event back (,)", "comma", steps),
                ("a minute on   (])", "right_square_bracket", jumps),
                ("a minute back ([)", "left_square_bracket", jumps),
            ):
                replay.seek(replay.total // 2)  # from the middle, every time
                await screen.show_cursor()
                await pilot.pause(0.2)
                timer.times = []
                for n in range(count):
                    at = replay.at
                    await pilot.press(k)
                    deadline = time.monotonic() + 10
                    while len(timer.times) <= n:
                        assert time.monotonic() < deadline, f"no frame after {k} at {at}"
                        await pilot.pause(0.001)
                    assert replay.at != at, f"the cursor did not move: {k} {n} {at} {timer.times}"
                print(f"  {tab:8} tab  {label}  {ms(timer.times)}   ({count} keys)")


def through_the_fold(run: Path, steps: int, jumps: int) -> None:
    replay = Replay(run)
    mid = replay.total // 2
    for label, how, direction, count in (
        ("one event on", "event", 1, steps),
        ("one event back", "event", -1, steps),
        ("a minute on", "minute", 1, jumps),
        ("a minute back", "minute", -1, jumps),
    ):
        replay.seek(mid)
        replay.sync_ledger()
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            replay.step(how, direction)
            replay.sync_ledger()
            replay.members()
            times.append(time.perf_counter() - t0)
        print(f"  {label:15}  {ms(times)}")
    replay.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--jumps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        horde = Path(tmp) / ".horde"
        run = write_run(horde, args.events)
        size = (run / "events.jsonl").stat().st_size / 1e6
        lines = sum(1 for _ in open(horde / "ledger.jsonl", "rb"))
        print(f"run: {args.events:,} events ({size:.0f} MB), {lines:,} ledger records\n")
        t0 = time.perf_counter()
        replay = Replay(run)
        opened = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"open (index the log, fold the ledger to the end): {opened:.2f} s, peak RSS {rss:.0f} MB"
        )
        t0 = time.perf_counter()
        replay.seek(1)
        replay.sync_ledger()
        first = time.perf_counter() - t0
        print(f"from the last event to the first: {first * 1e3:.0f} ms\n")
        replay.close()
        print("through the app (pilot presses the key, waits for the repaint):")
        asyncio.run(through_the_app(run, args.steps, args.jumps))
        print("\nthrough the fold alone (Replay.step + ledger + members):")
        through_the_fold(run, args.steps, args.jumps)


if __name__ == "__main__":
    main()
