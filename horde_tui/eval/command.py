"""`horde-tui eval`: the subcommand's parser and its one entry point.

`eval TASKSET --model M [--configs ...]` runs and scores; `eval --list [TASKSET]` prints
the tasks, one per line, the task's name first. Bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import math
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_CONFIGS = "single,horde:4,horde:4:no-repair"
EPILOG = """\
TASKSET is a folder of tasks (each: prompt.md, truth.toml, material/) or `bundled`.
Each run gets a fresh copy of its task's material and a fresh .horde/, and runs
`horde-tui run N PROMPT --headless` with the same model, budget and deadline; every run
joins the eval's one model gateway (one provider limit, each run's own usage). Scores are
computed by code from the runs' files: recall, precision, accepted recall, answers right,
duplicates, refusals, tokens, cost, wall time and $ per true finding.

Examples:
  horde-tui eval --list
  horde-tui eval bundled --model openai/gpt-4o-mini --max-cost-usd 0.50 --max-minutes 10
  horde-tui eval demo --model demo --configs horde:4   (no key: the demo model)
  horde-tui eval bundled --model openai/gpt-4o-mini --configs horde:4,horde:4:lessons
      (with and without the top lessons of .horde/LESSONS.md: `horde-tui lessons`)
  horde-tui eval financebench.jsonl --from-jsonl --model openai/gpt-4o --configs single
"""


def add_eval_command(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="score a single agent against hordes on a fixed task set (one model, one budget)",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "taskset", nargs="?", help="a task-set folder, `bundled`, or `demo` (the demo sample)"
    )
    p.add_argument("--list", action="store_true", help="print the task set's tasks and exit")
    p.add_argument("--model", help="litellm model string for every run (`demo`: the demo model)")
    p.add_argument("--configs", default=DEFAULT_CONFIGS, help=f"default {DEFAULT_CONFIGS}")
    p.add_argument("--tasks", help="only these tasks, comma-separated")
    p.add_argument("--max-cost-usd", type=float, help="budget of each run")
    p.add_argument("--max-minutes", type=float, help="deadline of each run")
    p.add_argument("--repeat", type=int, default=1, help="runs per task and configuration")
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="runs of one configuration at once (all runs share the eval's one gateway and "
        "its provider limit, max_in_flight)",
    )
    p.add_argument("--out", help="output folder (default: a new one under .horde/evals/)")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for the model")
    p.add_argument("--api-key", help="provider key (prefer the provider's own env variable)")
    p.add_argument(
        "--from-jsonl",
        action="store_true",
        help="TASKSET is a FinanceBench-style JSONL file: convert it (into OUT/taskset) first",
    )
    p.set_defaults(func=cmd_eval)


def _err(message: str, code: int = 2) -> int:
    print(f"horde-tui eval: {message}", file=sys.stderr)
    return code


def _positive(name: str, value: int) -> str | None:
    return f"refused: {name} must be a positive whole number" if value <= 0 else None


def _budget_problem(args: argparse.Namespace) -> str | None:
    """`--max-cost-usd` and `--max-minutes` go to every run as `run`'s own flags, so the
    settings model that checks them there checks them here (one rule, e.g. on `inf`)."""
    from horde_tui.common.settings import SettingsError, load_settings

    budget = {"max_cost_usd": args.max_cost_usd, "max_minutes": args.max_minutes}
    try:
        load_settings(environ={}, overrides=budget)
    except SettingsError as exc:
        return f"refused: {exc}"
    return None


def _json_limit(value: float | None) -> float | None:
    """A budget figure for EVAL.json: `inf` (no limit, as the settings model reads it) is
    null there, since JSON has no infinity."""
    return value if value is not None and math.isfinite(value) else None


def _materialize(taskset: str, from_jsonl: bool, scratch: Path) -> str | Path:
    """The task-set folder for TASKSET: `demo` (the demo sample) and a JSONL file are
    written into `scratch` first; `bundled` and folders are read where they are."""
    if from_jsonl:
        from horde_tui.eval.financebench import convert

        return convert(Path(taskset), scratch)
    if taskset == "demo":
        from horde_tui.eval.demo import write_demo_taskset

        return write_demo_taskset(scratch)
    return taskset


def cmd_eval(args: argparse.Namespace) -> int:
    from horde_tui.eval.taskset import BUNDLED, TaskSetError, load_taskset

    if args.list:
        try:
            with tempfile.TemporaryDirectory(prefix="horde-eval-list-") as scratch:
                source = _materialize(args.taskset or BUNDLED, args.from_jsonl, Path(scratch))
                taskset = load_taskset(source)
        except TaskSetError as exc:
            return _err(str(exc))
        for task in taskset.tasks:
            first = task.prompt.splitlines()[0][:100]
            size = len(task.defects) if task.defects else len(task.questions)
            unit = ("defect" if task.defects else "question") + ("" if size == 1 else "s")
            print(f"{task.name}\t{task.kind}\t{size} {unit}\t{first}")
        return 0
    if not args.taskset:
        return _err("give a TASKSET (a folder of tasks, or `bundled`); `eval --list` lists one")
    if not args.model:
        return _err("give --model (any litellm model string, or `demo` for the demo model)")
    for problem in (
        _budget_problem(args),
        _positive("--repeat", args.repeat),
        _positive("--parallel", args.parallel),
    ):
        if problem:
            return _err(problem)
    return _run_eval(args)


def _run_eval(args: argparse.Namespace) -> int:
    from horde_tui.eval.gateway import start_shared_gateway
    from horde_tui.eval.harness import (
        EvalOptions,
        EvalUsageError,
        Runner,
        eval_environ,
        parse_configs,
        plan_jobs,
    )
    from horde_tui.eval.report import aggregate, eval_json, now_iso, plain, table, write_outputs
    from horde_tui.eval.taskset import TaskSetError, load_taskset, taskset_hash
    from horde_tui.store.paths import default_horde_dir, sha256_file
    from horde_tui.supervisor.lessons import LESSONS_FILE, lessons_path, missing
    from horde_tui.supervisor.processes import GatewayStartError

    out = (
        Path(args.out)
        if args.out
        else Path.cwd() / ".horde" / "evals" / time.strftime("%Y%m%d-%H%M%S")
    )
    if out.exists() and any(out.iterdir()):
        return _err(f"refused: --out {out} is not empty; name a new folder")
    try:
        configs = parse_configs(args.configs)
    except EvalUsageError as exc:
        return _err(str(exc))
    lessons_file = None
    if any(config.with_lessons for config in configs):
        problem = missing(default_horde_dir())
        if problem is not None:
            return _err(
                f"refused: a :lessons configuration gives its runs the top lessons of "
                f"{problem}; write it with `horde-tui lessons`, or leave :lessons out"
            )
        # One copy for the whole eval: every `:lessons` run gets the same lessons, and
        # EVAL.json's hash is of what they got, whatever happens to the project's file.
        out.mkdir(parents=True, exist_ok=True)
        lessons_file = out / LESSONS_FILE
        shutil.copyfile(lessons_path(default_horde_dir()), lessons_file)
    try:
        taskset = load_taskset(_materialize(args.taskset, args.from_jsonl, out / "taskset"))
        tasks = taskset.select([t.strip() for t in args.tasks.split(",")] if args.tasks else None)
    except TaskSetError as exc:
        return _err(str(exc))
    stub = None
    model, api_base, api_key = args.model, args.api_base, args.api_key
    if model == "demo":
        from horde_tui.demo.run import DEMO_KEY
        from horde_tui.eval.demo import start_demo_model

        stub = start_demo_model()
        model, api_base, api_key = stub.model, stub.api_base, DEMO_KEY
    options = EvalOptions(
        model=model,
        configs=tuple(configs),
        out=out,
        max_cost_usd=args.max_cost_usd,
        max_minutes=args.max_minutes,
        repeat=int(args.repeat),
        parallel=int(args.parallel),
        api_base=api_base,
        api_key=api_key,
        lessons=lessons_file,
    )
    jobs = plan_jobs(tasks, options)
    try:
        gateway = start_shared_gateway(
            eval_environ(),
            {
                "model": model,
                "api_base": api_base,
                "api_key": api_key,
                "max_cost_usd": args.max_cost_usd,
            },
            out / "gateway",
        )
    except GatewayStartError as exc:
        if stub is not None:
            stub.close()
        return _err(f"no run started: {exc}")
    print(
        f"eval: {len(tasks)} task(s) x {len(configs)} configuration(s) x {args.repeat} "
        f"= {len(jobs)} run(s), model {args.model}, one shared gateway; writing to {out}",
        flush=True,
    )
    runner = Runner(options, lambda line: print(line, flush=True), gateway.run_env())
    terminated: list[int] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        terminated.append(signum)
        runner.stop_hard()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        runs = runner.run(jobs)
    finally:
        signal.signal(signal.SIGTERM, previous)
        gateway.stop()  # after every run has left it
        if stub is not None:
            stub.close()
    names = [c.name for c in configs]
    meta = {
        "version": 1,
        "created": now_iso(),
        "model": args.model,
        "configs": names,
        "repeat": int(args.repeat),
        "budget": {
            "max_cost_usd": _json_limit(args.max_cost_usd),
            "max_minutes": _json_limit(args.max_minutes),
        },
        "taskset": {
            "root": str(taskset.root),
            "sha256": taskset_hash(taskset.root),
            "tasks": [t.name for t in tasks],
        },
        "lessons": None
        if lessons_file is None
        else {
            "from": str(lessons_path(default_horde_dir())),
            "copy": str(lessons_file),
            "sha256": sha256_file(lessons_file),
        },
    }
    data = eval_json(meta, runs, names)
    write_outputs(out, data)
    print("\n" + plain(table(aggregate(runs, names)["summary"], "configuration")))
    print(f"\neval: wrote {out / 'EVAL.json'}, {out / 'EVAL.md'}, {out / 'eval.svg'}")
    if runner.interrupted:
        return _err(
            f"interrupted: {len(runs)} of {len(jobs)} run(s) scored; the outputs hold them",
            143 if terminated else 130,
        )
    missing = [f"{r['task']} {r['config']} #{r['repeat']}" for r in runs if not r.get("run_id")]
    if missing:
        return _err(f"{len(missing)} run(s) never started (see run.log): {', '.join(missing)}", 1)
    return 0
