"""Benchmark: the app on a long run (`horde-tui attach` on a 12-member run's files).

    python tests/benchmarks/bench_app.py [--sizes 20000,100000,200000] [--idle-s 10]
        [--rate 50] [--lifecycle 0.04]
    BENCH_PROFILE=/tmp/idle.prof python tests/benchmarks/bench_app.py --sizes 20000

For each size a fixture run is written (MANIFEST of 12 members, their spawns, then
synthetic events shaped like the store's, as in `bench_tail.py`) and the app is started
in a child process, headless at 120x36, attached to it with the default configuration
(watchfiles on). Reported per size:

- first paint: process start to the first frame of the run screen (Textual's `Ready`);
- events shown: process start to the Events tab holding every event of the file;
- 1,000 appended: one write of 1,000 events to their being in the Events tab;
- idle CPU: the app's CPU time / wall time while another process appends 50 events a
  second for `--idle-s` seconds (the app following them on screen): tool events (a
  member's `horde` writes, which is what a busy run appends), then again with a share
  `--lifecycle` (default 0.04) of them lifecycle events about members ("idle+lc": at
  4%, two member spawns, exits or resets a second, far more than a real run, each one
  repainting a row of the member table);
- peak RSS of the app process.

Targets (issue 5): first paint < 1.5 s, appended events visible < 0.5 s, idle CPU < 10%
of one core, RSS < 250 MB, none growing linearly with the file's length (the last lines
compare the largest size with the smallest).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tail import MEMBERS, write_events

RUN_ID = "20260102-120000-bnch"


def write_run(horde: Path, events: int) -> Path:
    """A live run directory as the supervisor leaves it, with `events` tool events."""
    run = horde / "runs" / RUN_ID
    (run / "sessions").mkdir(parents=True)
    (run / "TASK.md").write_text("# Task\n\nReview the sample project for injection bugs.\n")
    members = [
        {"name": f"member-{i}", "role": "verifier" if i == MEMBERS else "member", "layers": []}
        for i in range(1, MEMBERS + 1)
    ]
    manifest = {
        "run": RUN_ID,
        "created": time.time(),
        "model": "openai/bench",
        "demo_model": False,
        "members": members,
        "request": {"count": MEMBERS, "layers": [], "until_stop": False},
    }
    (run / "MANIFEST.json").write_text(json.dumps(manifest))
    head = [
        {"type": "lifecycle", "kind": "run-start", "members": MEMBERS, "model": "openai/bench"},
        {"type": "lifecycle", "kind": "phase-start", "phase": "discovery"},
    ] + [
        {"type": "lifecycle", "kind": "member-spawn", "attempt": 1, "member": m["name"]}
        for m in members
    ]
    with open(run / "events.jsonl", "w", encoding="utf-8") as fh:
        for n, ev in enumerate(head, start=1):
            record = {"ts": "2026-01-02T12:00:00.000000Z", "actor": "parent", **ev, "id": f"E{n}"}
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")
    write_events(run / "events.jsonl", len(head) + 1, events, random.Random(7))
    (run / ".live").write_text(f"{os.getpid()}\n")
    return run


# -- the child: the app, instrumented ---------------------------------------------------


def child(run_dir: Path, started: float) -> None:
    """Run the app attached to `run_dir`; report on stdout, take orders on stdin."""
    from horde_tui.app.app import HordeApp
    from horde_tui.widgets.event_log import EventTail

    def say(*words: object) -> None:
        # Straight to the descriptor: Textual captures `print` while the app runs.
        os.write(1, (" ".join(map(str, words)) + "\n").encode())

    # BENCH_PROFILE=FILE: cProfile the idle phase on the app's loop thread.
    profile = cProfile.Profile() if os.environ.get("BENCH_PROFILE") else None

    class BenchApp(HordeApp):
        target = 0
        checker: Any = None

        def on_ready(self) -> None:
            say("paint", time.monotonic() - started)
            self.target = sum(1 for _ in open(run_dir / "events.jsonl", "rb"))
            self.checker = self.set_interval(0.005, self.check)
            threading.Thread(target=self.orders, daemon=True).start()

        def check(self) -> None:
            rows = self.screen.query(EventTail)
            if self.target and rows and rows.first().row_count >= self.target:
                say("shown", self.target, time.monotonic())
                self.target = 0

        def orders(self) -> None:
            for line in sys.stdin:
                word, _, arg = line.strip().partition(" ")
                if word == "expect":
                    self.call_from_thread(setattr, self, "target", int(arg))
                elif word == "idle":
                    self.call_from_thread(self.checker.stop)
                    if profile:
                        self.call_from_thread(lambda: profile.enable())
                elif word == "quit":
                    if profile:
                        self.call_from_thread(lambda: profile.disable())
                        profile.dump_stats(os.environ["BENCH_PROFILE"])
                    self.call_from_thread(self.exit)
                    return

    BenchApp(attach=run_dir).run(headless=True, size=(120, 36))
    say("rss", peak_rss_mb())


def peak_rss_mb() -> float:
    """This process's own peak RSS. Linux keeps `ru_maxrss` across `execve`, so for a
    child forked from the benchmark it starts at the parent's RSS at the fork (which
    holds the fixture it just wrote: about 60 MB at 200,000 events); `VmHWM` belongs to
    the address space the exec made, so it counts only the app."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the parent: fixtures, writers, measurements ----------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` from /proc (clock ticks -> seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    events: int, idle_s: float, rate: float = 50.0, lifecycle: float = 0.04
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp) / ".horde", events)
        log = run / "events.jsonl"
        lines = sum(1 for _ in open(log, "rb"))
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", str(run), repr(started)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp,
        )
        assert proc.stdin is not None and proc.stdout is not None

        def read(word: str) -> list[str]:
            assert proc.stdout is not None
            for line in proc.stdout:
                parts = line.split()
                if parts and parts[0] == word:
                    return parts[1:]
            raise RuntimeError(f"the app exited before reporting {word!r}")

        paint = float(read("paint")[0])
        shown_at = float(read("shown")[1])
        result = {"paint": paint, "shown": shown_at - started}

        rng = random.Random(11)
        proc.stdin.write(f"expect {lines + 1000}\n")
        proc.stdin.flush()
        time.sleep(0.5)  # let the watcher settle before the timed write
        t0 = time.monotonic()
        write_events(log, lines + 1, 1000, rng)
        result["batch"] = float(read("shown")[1]) - t0
        lines += 1000

        proc.stdin.write("idle\n")
        proc.stdin.flush()
        time.sleep(1.0)
        for key, share in (("idle_cpu", 0.0), ("idle_cpu_lc", lifecycle)):
            cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
            n, next_at = 0, wall0
            while time.monotonic() - wall0 < idle_s:
                if rate > 0:
                    write_events(log, lines + 1 + n, 1, rng, lifecycle=share)
                    n += 1
                next_at += 1 / rate if rate > 0 else 0.1
                time.sleep(max(0.0, next_at - time.monotonic()))
            result[key] = (cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - wall0)
            lines += n

        proc.stdin.write("quit\n")
        proc.stdin.flush()
        result["rss"] = float(read("rss")[0])
        proc.wait(10)
        return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="20000,100000,200000")
    parser.add_argument("--idle-s", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=50.0, help="events a second while idle")
    parser.add_argument(
        "--lifecycle",
        type=float,
        default=0.04,
        help="share of lifecycle events about members in the idle+lc phase",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"app attached to a {MEMBERS}-member run, headless 120x36, cpus={os.cpu_count()}, "
        f"{args.rate:g} events/s while idle, idle+lc with {args.lifecycle:.0%} lifecycle events\n"
    )
    print(
        f"{'events':>8} {'paint s':>8} {'shown s':>8} {'+1000 s':>8} {'idle CPU':>9} "
        f"{'idle+lc':>8} {'RSS MB':>7}"
    )
    results = {}
    for size in sizes:
        r = results[size] = measure(size, args.idle_s, args.rate, args.lifecycle)
        print(
            f"{size:>8,} {r['paint']:8.2f} {r['shown']:8.2f} {r['batch']:8.2f} "
            f"{r['idle_cpu'] * 100:8.1f}% {r['idle_cpu_lc'] * 100:7.1f}% {r['rss']:7.0f}",
            flush=True,
        )
    small, large = results[sizes[0]], results[sizes[-1]]
    growth = sizes[-1] / sizes[0]
    print(f"\nlargest / smallest file: x{growth:g} events")
    for key, label in (("paint", "first paint"), ("batch", "+1000 visible"), ("rss", "RSS")):
        print(f"  {label:<14} x{large[key] / small[key]:.2f}")
    print(f"  {'idle CPU':<14} {small['idle_cpu'] * 100:.1f}% -> {large['idle_cpu'] * 100:.1f}%")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), float(sys.argv[3]))
    else:
        main()
