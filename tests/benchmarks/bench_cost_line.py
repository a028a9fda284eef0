"""Benchmark: what the run screen's cost line and baseline column cost per recount.

    python tests/benchmarks/bench_cost_line.py [--findings 200] [--trials 15]

Builds a `.horde/` through the real tool: a baseline run r0 and a run r1 each filing
`--findings` findings (random words, so none is a duplicate), every one reviewed in
support by another member. Then times, on the folded state, the two things the app
recounts when the ledger moved: `finding_yield` (the cost line's findings and accepted
ones, in a thread after a batch of events) and the Findings tab's baseline cells
(`BaselineColumn.update`: the Delta REPORT.md prints, with the evidence re-check of
the resolved findings). Prints the medians.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # conftest

from conftest import Horde

from horde_tui.supervisor.forecast import finding_yield
from horde_tui.view.ledgers import LedgerView

rng = random.Random(7)
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "su", "ta") for b in range(400)]


def words(n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def fill(horde: Horde, run: str, findings: int) -> None:
    for i in range(findings):
        actor = f"member-{i % 4 + 1}"
        idea = horde(actor, "idea", run=run, text=words(8)).id
        assert horde(actor, "claim", run=run, id=idea).ok
        filed = horde(
            actor,
            "finding",
            run=run,
            idea=idea,
            text=words(10),
            evidence=f"m{i}.py:1",
            concern=f"c{i}",
            concernDef=words(6),
        )
        assert filed.ok, filed.text
        assert horde(actor, "done", run=run, id=idea, result="filed").ok
        reviewer = f"member-{(i + 1) % 4 + 1}"
        assert horde(
            reviewer,
            "review",
            run=run,
            target=filed.id,
            verdict="supports",
            support="tested",
            checked="ran it",
            evidence=f"m{i}.py:1",
        ).ok


def median_ms(call: object, trials: int) -> float:
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--findings", type=int, default=200)
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        horde = Horde(Path(tmp))
        fill(horde, "r0", args.findings)
        fill(horde, "r1", args.findings)
        view = LedgerView(horde.root, "r1", baseline="r0")
        view.refresh()
        state = view.state
        assert finding_yield(state, "r1") == (args.findings, args.findings)
        column = view.baseline
        assert column is not None
        yield_ms = median_ms(lambda: finding_yield(state, "r1"), args.trials)
        cells_ms = median_ms(lambda: column.update(state), args.trials)
        print(
            f"{args.findings} findings a run, each reviewed: finding_yield median "
            f"{yield_ms:.2f} ms; baseline cells ({len(column.theirs)} resolved) median "
            f"{cells_ms:.2f} ms"
        )


if __name__ == "__main__":
    main()
