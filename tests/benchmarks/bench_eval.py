"""Benchmark: what `horde-tui eval` adds to each run (setup, copy, scoring).

    python tests/benchmarks/bench_eval.py [--files 2000] [--repeat 3] [--findings 20]

A task is written whose material is `--files` small files (the 2,000-file folder of
issue 15), with 20 planted defects; the stub model plays one member that files
`--findings` findings (half true, half false). `horde-tui eval TASKSET --configs single
--repeat R` runs it as a user would, and reports:

- per run: the harness's own time around the run (`overhead_s` in EVAL.json: creating
  the run folder and copying the material, `setup_s`, then reading the ledger,
  ACCEPTANCE.json, usage.jsonl and events.jsonl and scoring, `score_s`), median and max,
  and the CPU time of that work (`overhead_cpu_s`: on a loaded machine wall time
  stretches with the load, CPU time does not);
- per eval: the whole command's wall time minus the runs' own wall time, divided by the
  number of runs (interpreter start, loading and hashing the task set, writing EVAL.json,
  EVAL.md and eval.svg);
- the run itself (median wall), for scale.

Target (issue 15): under 2 s per run over the run itself, on a 2,000-file folder.
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
from typing import Any

from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy

DEFECTS = 20


def write_task(root: Path, files: int) -> Path:
    """A task set with one task of `files` files in nested folders; defect n is at line
    3 of `pkg<n % 20>/mod<n>.py` for n < 20."""
    task = root / "set" / "big"
    material = task / "material"
    for n in range(files):
        folder = material / f"pkg{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n}.py").write_text(
            f'"""Module {n}."""\n\nQUERY = "SELECT * FROM t WHERE id = " + str({n})\n'
            + "".join(f"VALUE_{i} = {i}\n" for i in range(20))
        )
    truth = []
    for n in range(DEFECTS):
        truth += [
            "[[defect]]",
            f'id = "d{n}"',
            f'file = "pkg{n % 20}/mod{n}.py"',
            "lines = [3, 3]",
            'concern = "sql-injection"',
            'words = ["injection"]',
            "",
        ]
    (task / "truth.toml").write_text("\n".join(truth))
    (task / "prompt.md").write_text("Review the code for SQL injection; cite file:line.\n")
    return root / "set"


def plan(findings: int) -> dict[str, list[dict[str, Any]]]:
    items: list[dict[str, Any]] = [
        {"tool": "horde", "args": {"action": "idea", "text": "Check the queries"}},
        {"tool": "horde", "args": {"action": "claim", "id": "$id"}},
    ]
    for n in range(findings):
        true = n % 2 == 0
        where = f"pkg{n % 20}/mod{n}.py:3" if true else f"pkg{n % 20}/mod{n + 100}.py:9"
        items.append(
            {
                "tool": "horde",
                "args": {
                    "action": "finding",
                    "idea": "$I",
                    "concern": f"concern-{n}",
                    "concernDef": f"benchmark concern number {n}",
                    "concernNew": True,
                    "text": f"query {n} concatenates input: injection",
                    "evidence": where,
                    "support": "derived",
                    "importance": "medium",
                    "confidence": "high",
                },
            }
        )
    return {"member-1": items}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--findings", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as scratch:
        root = Path(scratch)
        taskset = write_task(root, args.files)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
        env.update(HORDE_GATEWAY_BACKOFF_MS="20", HORDE_POSTMORTEM="off", HORDE_DELIVERABLE="off")
        with StubThread(policy=AgentPolicy(plan(args.findings))) as stub:
            started = time.perf_counter()
            argv = [sys.executable, "-m", "horde_tui", "eval", str(taskset), "--configs"]
            argv += ["single", "--model", stub.model, "--api-base", stub.api_base]
            argv += ["--api-key", "stub", "--repeat", str(args.repeat), "--out", str(root / "out")]
            done = subprocess.run(
                argv,
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
            )
            total = time.perf_counter() - started
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
        runs = json.loads((root / "out" / "EVAL.json").read_text())["runs"]
    overhead = [r["overhead_s"] for r in runs]
    walls = [r["wall_s"] for r in runs]
    found = {(r["found"], r["findings"]) for r in runs}
    per_eval = (total - sum(walls)) / len(runs)
    print(f"material: {args.files} files; {len(runs)} runs; (found, findings) {sorted(found)}")
    print(
        f"harness per run (copy + score): median {statistics.median(overhead):.3f} s, "
        f"max {max(overhead):.3f} s (copy median "
        f"{statistics.median(r['setup_s'] for r in runs):.3f} s, score median "
        f"{statistics.median(r['score_s'] for r in runs):.3f} s)"
    )
    cpu = [r["overhead_cpu_s"] for r in runs]
    print(f"harness CPU per run: median {statistics.median(cpu):.3f} s, max {max(cpu):.3f} s")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"eval command beyond its runs, per run: {per_eval:.3f} s")
    print(f"the run itself: median {statistics.median(walls):.1f} s")
    # The command's time beyond its runs already holds each run's copy and scoring.
    print(f"target < 2 s per run: {'met' if per_eval < 2 else 'MISSED'} ({per_eval:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
