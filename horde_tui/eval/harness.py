"""Runs an eval: every task under every configuration, each run a fresh headless CLI run.

For each (task, configuration, repeat) the harness copies the task's material into a new
folder (so a fresh `.horde/`), starts there the headless run `horde-tui run --detach`
would start (`launch.detached_argv`, with the same model, budget and deadline), waits,
and scores the run from its files. The run is a subprocess and its files are the
interface, so the harness measures exactly what a user's `horde-tui run` does.

Configurations: `single` is one member (no verifier, no repair); `horde:N` is N members
(the last of 3+ is the verifier) with repair; `horde:N:no-repair` the same with repair
disabled (`HORDE_REPAIR_ROUNDS=0`); `:lessons` after either gives the members the top
lessons of the eval's LESSONS.md (`run --lessons`: each such run gets a copy of it in its
fresh `.horde/`), so `horde:4,horde:4:lessons` compares a horde with and without them
under the same model and budget. Runs of one configuration run up to `parallel` at a
time, and every run of the eval joins its one gateway (`eval.gateway`) with its own
token and run directory: usage, cost and budget stay the run's, while P runs put no more
calls in flight on the provider than one run may (`max_in_flight`), a 429 seen by one
run lowers the limit for all of them, and litellm is imported once per eval.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from horde_tui.eval.collect import read_run
from horde_tui.eval.score import grade_answers, per_true, score_defects
from horde_tui.eval.taskset import Task
from horde_tui.gateway.limiter import SHARED_LIMIT_ENV
from horde_tui.launch.launch import RunOptions, detached_argv, detached_env
from horde_tui.store.paths import atomic_write_text
from horde_tui.supervisor.lessons import LESSONS_FILE
from horde_tui.supervisor.processes import SHARED_GATEWAY_TOKEN_ENV, SHARED_GATEWAY_URL_ENV

CLEAN_STOP_GRACE_S = 180.0
"""Beyond `--max-minutes`, how long a run may take to stop clean before it is stopped."""
HARD_STOP_GRACE_S = 30.0
MEMBER_ENV = ("HORDE_DIR", "HORDE_RUN", "HORDE_MEMBER", "HORDE_ROLE", "HORDE_SIBLINGS")
"""Variables that point a process at one particular `.horde/` or run: each eval run must
get its own, and a member's (HORDE_GATEWAY_URL) would make the run a refused nested one."""
_CONFIG = re.compile(
    r"^(?:single|horde:(?P<n>\d+)(?P<norepair>:no-repair)?)(?P<lessons>:lessons)?$"
)


class EvalUsageError(ValueError):
    """Bad `eval` input; printed as one line, exit status 2."""


@dataclass(frozen=True)
class Config:
    """One way of running a task: how many members, with or without repair, with or
    without the lessons of earlier runs."""

    name: str
    members: int
    repair: bool
    with_lessons: bool = False


def parse_configs(text: str) -> list[Config]:
    """`single,horde:4,horde:4:no-repair,horde:4:lessons` -> configurations, in the order
    given."""
    out: list[Config] = []
    for word in (w.strip() for w in text.split(",")):
        m = _CONFIG.match(word)
        if m is None:
            raise EvalUsageError(
                f"--configs: {word!r} is not a configuration; use single, horde:N or "
                "horde:N:no-repair (N members, 2-12), each optionally followed by :lessons, "
                "comma-separated"
            )
        given = bool(m.group("lessons"))
        if m.group("n") is None:
            config = Config(word, 1, False, given)
        else:
            n = int(m.group("n"))
            if not 2 <= n <= 12:
                raise EvalUsageError(f"--configs: {word!r}: a horde has 2-12 members")
            config = Config(word, n, not m.group("norepair"), given)
        if config in out:
            raise EvalUsageError(f"--configs: {word!r} is given twice")
        out.append(config)
    return out


@dataclass(frozen=True)
class EvalOptions:
    """What every run of one eval shares: model, budget, deadline, where to write."""

    model: str
    configs: tuple[Config, ...]
    out: Path
    max_cost_usd: float | None = None
    max_minutes: float | None = None
    repeat: int = 1
    parallel: int = 1
    api_base: str | None = None
    api_key: str | None = None
    """Given to each run in its environment (`detached_env`), never on its command line."""
    lessons: Path | None = None
    """The LESSONS.md each `:lessons` run gets a copy of (`supervisor.lessons`)."""


@dataclass(frozen=True)
class RunJob:
    task: Task
    config: Config
    repeat: int
    folder: Path

    @property
    def label(self) -> str:
        return f"{self.task.name} {self.config.name} #{self.repeat}"


def run_options(job: RunJob, options: EvalOptions) -> RunOptions:
    """The job as `horde-tui run` takes it: every job of the eval the same but its count
    and prompt."""
    return RunOptions(
        str(job.config.members),
        job.task.run_prompt(),
        model=options.model,
        max_minutes=options.max_minutes,
        max_cost_usd=options.max_cost_usd,
        api_base=options.api_base,
        api_key=options.api_key,
    )


def run_argv(job: RunJob, options: EvalOptions) -> list[str]:
    """The headless run's command line: the one `run --detach` starts (the key goes in
    the environment, not here)."""
    return detached_argv(run_options(job, options), None)


def eval_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environ` (this process's) as the eval's runs and its gateway start from it:
    without another run's or eval's pointers (`MEMBER_ENV`, a gateway, its token)."""
    env = dict(os.environ if environ is None else environ)
    pointers = (SHARED_LIMIT_ENV, SHARED_GATEWAY_URL_ENV, SHARED_GATEWAY_TOKEN_ENV)
    for name in (*MEMBER_ENV, "HORDE_GATEWAY_URL", "HORDE_GATEWAY_TOKEN", *pointers):
        env.pop(name, None)
    return env


def run_env(
    job: RunJob, options: EvalOptions, joined: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The detached run's environment, without another run's or eval's pointers
    (`MEMBER_ENV`, a gateway), with `joined`: the eval's gateway for the run to join
    (`SharedGateway.run_env`)."""
    env = eval_environ(detached_env(run_options(job, options)))
    env.update(joined or {})
    if not job.config.repair:
        env["HORDE_REPAIR_ROUNDS"] = "0"
    env["HORDE_LESSONS"] = "on" if job.config.with_lessons else "off"
    return env


def _wait(proc: subprocess.Popen[bytes], deadline_s: float | None) -> None:
    """Wait for the run; past the deadline ask a clean stop (SIGINT, as Ctrl-C), then a
    hard one (SIGTERM), then kill its process group."""
    try:
        proc.wait(timeout=deadline_s)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig, grace in ((signal.SIGINT, CLEAN_STOP_GRACE_S), (signal.SIGTERM, HARD_STOP_GRACE_S)):
        proc.send_signal(sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended between the last wait and the kill
    proc.wait()


def prepare_work(job: RunJob, options: EvalOptions) -> Path:
    """The job's fresh working directory: a copy of the task's material, and for a
    `:lessons` configuration the eval's LESSONS.md in its `.horde/`."""
    work = job.folder / "work"
    if job.folder.exists():
        shutil.rmtree(job.folder)
    job.folder.mkdir(parents=True)
    shutil.copytree(job.task.material, work, symlinks=True)
    if job.config.with_lessons and options.lessons is not None:
        (work / ".horde").mkdir(exist_ok=True)
        shutil.copyfile(options.lessons, work / ".horde" / LESSONS_FILE)
    return work


def execute(
    job: RunJob,
    options: EvalOptions,
    started_run: Callable[[subprocess.Popen[bytes]], None],
    joined: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Copy, run, score one job; every figure of it as a JSON-able dict, also kept in
    the run's folder as RESULT.json (an interrupted eval keeps what it finished)."""
    started, cpu = time.perf_counter(), time.thread_time()
    work = prepare_work(job, options)
    setup_s, setup_cpu = time.perf_counter() - started, time.thread_time() - cpu
    minutes = options.max_minutes
    deadline = None if minutes is None or math.isinf(minutes) else minutes * 60 + 60
    run_started = time.perf_counter()
    with open(job.folder / "run.log", "wb") as log:
        proc = subprocess.Popen(
            run_argv(job, options),
            cwd=work,
            env=run_env(job, options, joined),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started_run(proc)
        _wait(proc, deadline)
    wall_s = time.perf_counter() - run_started
    scoring, cpu = time.perf_counter(), time.thread_time()
    result = score_run(job, work)
    score_s, score_cpu = time.perf_counter() - scoring, time.thread_time() - cpu
    result.update(
        exit_code=proc.returncode,
        wall_s=round(wall_s, 3),
        overhead_s=round(setup_s + score_s, 4),
        setup_s=round(setup_s, 4),
        score_s=round(score_s, 4),
        overhead_cpu_s=round(setup_cpu + score_cpu, 4),
        folder=str(job.folder),
    )
    if result["run_id"] is None:
        result["error"] = last_line(job.folder / "run.log")
    atomic_write_text(job.folder / "RESULT.json", json.dumps(result, indent=2) + "\n")
    return result


def last_line(path: Path) -> str:
    """The last non-blank line of a run's log: why a run that never started did not."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")[:300]


def score_run(job: RunJob, work: Path) -> dict[str, Any]:
    """The figures of the run in `work`, scored against the task's truth: the run's
    files (`RunFiles`, findings counted, the answer graded not kept) and the score's."""
    files = read_run(work)
    result: dict[str, Any] = {
        "task": job.task.name,
        "config": job.config.name,
        "repeat": job.repeat,
    }
    result |= asdict(files) | {"findings": len(files.findings)}
    del result["answer"]
    if job.task.defects:
        score = score_defects(files.findings, job.task.defects)
        result |= asdict(score) | {"usd_per_true": per_true(files.cost_usd, score.found)}
        concerns = {f.id: f.concern for f in files.findings}
        for match in result["matches"]:
            match["concern"] = concerns.get(match["finding"], "")
    if job.task.questions:
        grades = grade_answers(job.task.questions, files.answer)
        result["answers"] = [asdict(g) for g in grades]
        result["answer_accuracy"] = sum(g.correct for g in grades) / len(grades)
    return result


Progress = Callable[[str], None]


class Runner:
    """Runs jobs configuration by configuration, up to `parallel` at a time, printing one
    line when each run starts and one when it ends (with the spend so far). Every run
    joins the gateway `joined` names (`SharedGateway.run_env`), when given.

    Ctrl-C asks every live run to stop clean (SIGINT, as Ctrl-C on `horde-tui run`) and
    starts no more; the stopped runs are still scored. A second Ctrl-C, or SIGTERM to the
    eval (`stop_hard`), stops them hard."""

    def __init__(
        self, options: EvalOptions, progress: Progress, joined: Mapping[str, str] | None = None
    ) -> None:
        self.options = options
        self.progress = progress
        self.joined = dict(joined or {})
        self.interrupted = False
        self._hard = False
        self._lock = threading.Lock()
        self._live: dict[int, subprocess.Popen[bytes]] = {}
        self._started = 0
        self._done = 0
        self._spent = 0.0
        self._unpriced = 0
        self._total = 0

    def run(self, jobs: list[RunJob]) -> list[dict[str, Any]]:
        """The results of the runs that ran (all of them unless interrupted)."""
        self._total = len(jobs)
        results: list[dict[str, Any]] = []
        for config in self.options.configs:
            batch = [j for j in jobs if j.config == config]
            with ThreadPoolExecutor(max_workers=max(1, self.options.parallel)) as pool:
                futures = [pool.submit(self._one, job) for job in batch]
                for future in futures:
                    while True:
                        try:
                            result = future.result()
                            break
                        except KeyboardInterrupt:
                            self._interrupt()
                    if result is not None:
                        results.append(result)
        return results

    def _interrupt(self, hard: bool = False) -> None:
        with self._lock:
            sig = signal.SIGTERM if self.interrupted or hard else signal.SIGINT
            self.interrupted = True
            self._hard = sig == signal.SIGTERM
            live = list(self._live.values())
        how = "hard (SIGTERM)" if sig == signal.SIGTERM else "clean; Ctrl-C again stops hard"
        self.progress(f"eval: interrupted: stopping {len(live)} live run(s) {how}")
        for proc in live:
            if proc.poll() is None:
                proc.send_signal(sig)

    def stop_hard(self) -> None:
        """SIGTERM to the eval: stop every live run hard and start no more; they are
        still scored, and the eval then stops its gateway."""
        self._interrupt(hard=True)

    def _one(self, job: RunJob) -> dict[str, Any] | None:
        with self._lock:
            if self.interrupted:
                return None
            self._started += 1
            self.progress(f"eval: start {job.label} ({self._started}/{self._total})")

        def started_run(proc: subprocess.Popen[bytes]) -> None:
            with self._lock:
                self._live[proc.pid] = proc
                if self.interrupted:
                    proc.send_signal(signal.SIGTERM if self._hard else signal.SIGINT)

        try:
            result = execute(job, self.options, started_run, self.joined)
        except OSError as exc:  # the material could not be copied, python not started
            result = score_run(job, job.folder / "work")
            result["error"] = f"cannot set up the run: {exc}"
        with self._lock:
            self._live = {pid: p for pid, p in self._live.items() if p.poll() is None}
            self._done += 1
            self._spent += result.get("cost_usd") or 0.0
            if result.get("cost_usd") is None and result.get("run_id"):
                self._unpriced += 1
            spent = f"spent ${self._spent:.4f}"
            if self._unpriced:
                spent += f" + {self._unpriced} unpriced run(s)"
            self.progress(
                f"eval: done  {job.label}: {brief(result)} ({self._done}/{self._total}, {spent})"
            )
        return result


def brief(result: dict[str, Any]) -> str:
    """One run's figures in a few words, for its progress line."""
    if result.get("run_id") is None:
        return f"no run: {result.get('error') or 'see run.log'}"
    outcome = result.get("outcome") or "no outcome"
    if outcome in ("failed", "no outcome") and result.get("diagnosis"):
        outcome += f" ({' '.join(str(result['diagnosis']).split())[:200]})"
    parts = [outcome]
    if "recall" in result:
        parts.append(f"recall {result['found']}/{result['planted']}")
        precision = result["precision"]
        parts.append("precision " + ("-" if precision is None else f"{precision:.2f}"))
    if "answer_accuracy" in result:
        right = sum(a["correct"] for a in result["answers"])
        parts.append(f"answers {right}/{len(result['answers'])}")
    cost = result.get("cost_usd")
    parts.append("cost unknown" if cost is None else f"${cost:.4f}")
    parts.append(f"{result.get('wall_s', 0):.0f}s")
    return ", ".join(parts)


def plan_jobs(tasks: list[Task], options: EvalOptions) -> list[RunJob]:
    """Every (task, configuration, repeat), each with its own folder under `out/runs/`."""
    jobs = []
    for config in options.configs:
        slug = config.name.replace(":", "-")
        for task in tasks:
            for n in range(1, options.repeat + 1):
                folder = options.out / "runs" / f"{task.name}.{slug}.{n}"
                jobs.append(RunJob(task, config, n, folder))
    return jobs
