"""Benchmark: what checking quoted evidence adds to a finding write, on a 10 MB file.

Issue 19's target: the evidence check costs under 5 ms per finding write on a 10 MB
file. Measured two ways, each a median of `--repeat` calls:

- `checked_spans` alone, for a quote at the top, the middle and the end of the file
  (lines before a citation are counted a chunk at a time; the end is the worst case);
- whole `horde finding` writes through the real store, quoting a line in the middle,
  against the same writes citing no file (the difference is the check).

    python tests/benchmarks/bench_evidence.py
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from horde_tui.protocol import run_action
from horde_tui.protocol.evidence import checked_spans
from horde_tui.store.store import HordeStore

LINES = 150_000
WORDS = ["".join(random.Random(i).choices("bcdfghklmnprstvz", k=4)) + "on" for i in range(3000)]
"""Made-up words: each finding's text is its own, so none is taken for a duplicate."""


def big_file(workdir: Path) -> Path:
    """About 10 MB of Python-looking lines, `value_<i> = ...` on line i + 1."""
    path = workdir / "src" / "big.py"
    path.parent.mkdir(parents=True)
    pad = "x" * 30
    path.write_text("".join(f"value_{i} = compute({i}, '{pad}')\n" for i in range(LINES)))
    return path


def median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def writes_ms(workdir: Path, repeat: int, quoted: bool) -> float:
    """Median of `repeat` finding writes, each under its own claimed idea."""
    store = HordeStore(workdir / ".horde", "member-1")
    times = []
    rng = random.Random(7 if quoted else 3)
    for i in range(repeat):
        tag = "q" if quoted else "p"
        idea = run_action(store, {"action": "idea", "text": f"audit part {tag}{i}"}, run="b")
        assert run_action(store, {"action": "claim", "id": idea.id}, run="b").ok
        n = LINES // 2 + i
        evidence = f"src/big.py:{n + 1} `value_{n} = compute(`" if quoted else f"ran test {i}"
        params = {
            "action": "finding",
            "text": " ".join(rng.choice(WORDS) for _ in range(12)),
            "evidence": evidence,
            "concern": "input",
            "concernDef": "unchecked input",
        }
        t0 = time.perf_counter()
        result = run_action(store, params, run="b")
        times.append(time.perf_counter() - t0)
        assert result.text.startswith("ok F"), result.text
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=31)
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        path = big_file(workdir)
        print(f"file: {path.stat().st_size / 1e6:.1f} MB, {LINES:,} lines")
        worst = 0.0
        for where, n in (("top", 10), ("middle", LINES // 2), ("end", LINES - 1)):
            ms = median_ms(
                lambda n=n: checked_spans(f"src/big.py:{n + 1} `value_{n} =`", workdir),
                args.repeat,
            )
            print(f"checked_spans, quote at the {where:<6} (line {n + 1:>7,}): {ms:6.2f} ms")
            worst = max(worst, ms)
        plain = writes_ms(workdir, args.repeat, quoted=False)
        quoted = writes_ms(workdir, args.repeat, quoted=True)
    added = quoted - plain
    print(f"finding write citing no file: {plain:.2f} ms; quoting the middle line: {quoted:.2f} ms")
    print(f"the check adds {added:.2f} ms per finding write (target < 5)")
    print(f"the worst case, a quote at the end of the file: {worst:.2f} ms (target < 5)")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if added < 5 and worst < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
