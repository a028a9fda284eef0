"""The eval harness's pieces: configurations, each run's command line and environment,
the deadline's escalation on a real child process, and reading a run that never started."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.commands.cli import build_parser, main
from horde_tui.common.settings import SettingsError, load_settings
from horde_tui.eval import harness
from horde_tui.eval.collect import read_run
from horde_tui.eval.harness import (
    Config,
    EvalOptions,
    EvalUsageError,
    RunJob,
    parse_configs,
    plan_jobs,
    run_argv,
    run_env,
    score_run,
)
from horde_tui.eval.taskset import load_taskset
from horde_tui.gateway.limiter import SHARED_LIMIT_ENV
from horde_tui.launch.launch import RunOptions, check_launch, detached_argv
from horde_tui.supervisor.processes import SHARED_GATEWAY_TOKEN_ENV, SHARED_GATEWAY_URL_ENV

TASK = load_taskset("bundled").select(["sql-injection"])[0]


def test_configurations_parse_in_order_with_members_and_repair() -> None:
    assert parse_configs("single,horde:4,horde:4:no-repair,horde:12") == [
        Config("single", 1, False),
        Config("horde:4", 4, True),
        Config("horde:4:no-repair", 4, False),
        Config("horde:12", 12, True),
    ]
    for bad in ("horde", "horde:13", "horde:4:fast", "single,single", ""):
        with pytest.raises(EvalUsageError):
            parse_configs(bad)


def _options(tmp_path: Path, **extra: object) -> EvalOptions:
    configs = tuple(parse_configs("single,horde:3"))
    return EvalOptions(model="openai/gpt-4o-mini", configs=configs, out=tmp_path, **extra)  # type: ignore[arg-type]


def test_every_run_gets_the_same_model_budget_and_deadline_and_the_key_only_in_its_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HORDE_RUN", "someone-elses-run")
    monkeypatch.setenv("HORDE_GATEWAY_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("HORDE_THINKING", "low")
    monkeypatch.setenv(SHARED_LIMIT_ENV, "/another/eval")
    options = _options(
        tmp_path, max_cost_usd=0.5, max_minutes=10.0, api_base="http://x/v1", api_key="sk-1"
    )
    jobs = plan_jobs([TASK], options)
    assert [(j.config.name, j.folder.name) for j in jobs] == [
        ("single", "sql-injection.single.1"),
        ("horde:3", "sql-injection.horde-3.1"),
    ]
    single, horde = (run_argv(j, options) for j in jobs)
    for argv, members in ((single, "1"), (horde, "3")):
        # One way to start a headless run: the command line `run --detach` starts.
        same = RunOptions(
            members,
            TASK.run_prompt(),
            model="openai/gpt-4o-mini",
            max_minutes=10.0,
            max_cost_usd=0.5,
            api_base="http://x/v1",
            api_key="sk-1",
        )
        assert argv == detached_argv(same, None)
        parsed = build_parser().parse_args(argv[3:])
        assert (parsed.count, parsed.prompt, parsed.headless) == (members, TASK.run_prompt(), True)
        assert (parsed.model, parsed.max_cost_usd, parsed.max_minutes) == (
            "openai/gpt-4o-mini",
            0.5,
            10.0,
        )
        assert "sk-1" not in argv
    # Every run joins the eval's one gateway (`SharedGateway.run_env`); another eval's
    # pointers in this environment reach none of them.
    monkeypatch.setenv(SHARED_GATEWAY_URL_ENV, "http://127.0.0.1:2")
    joined = {SHARED_GATEWAY_URL_ENV: "http://127.0.0.1:9", SHARED_GATEWAY_TOKEN_ENV: "t" * 43}
    single_env, horde_env = (run_env(j, options, joined) for j in jobs)
    assert single_env["HORDE_REPAIR_ROUNDS"] == "0" and "HORDE_REPAIR_ROUNDS" not in horde_env
    for env in (single_env, horde_env):
        assert env["HORDE_API_KEY"] == "sk-1" and env["HORDE_THINKING"] == "low"
        assert "HORDE_RUN" not in env and "HORDE_GATEWAY_URL" not in env
        assert SHARED_LIMIT_ENV not in env
        assert {k: env[k] for k in joined} == joined
    assert SHARED_GATEWAY_URL_ENV not in run_env(jobs[0], options)


STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def test_past_the_deadline_a_run_is_asked_to_stop_clean_then_stopped_hard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that ignores the clean stop (SIGINT) gets SIGTERM after the grace."""
    monkeypatch.setattr(harness, "CLEAN_STOP_GRACE_S", 0.5)
    monkeypatch.setattr(harness, "HARD_STOP_GRACE_S", 5.0)
    proc = subprocess.Popen(
        [sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    started = time.monotonic()
    harness._wait(proc, 0.2)
    assert proc.returncode == -signal.SIGTERM
    assert time.monotonic() - started < 30


def test_a_run_that_never_started_scores_zero_and_names_no_run(tmp_path: Path) -> None:
    files = read_run(tmp_path)
    assert (files.run_id, files.findings, files.cost_usd) == (None, [], None)
    job = RunJob(TASK, Config("single", 1, False), 1, tmp_path)
    result = score_run(job, tmp_path)
    assert result["run_id"] is None and result["recall"] == 0.0 and result["precision"] is None
    assert result["manifest_sha256"] is None


def test_eval_refuses_a_non_empty_out_folder_and_touches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = subprocess.run(
        cli_argv("eval", "bundled", "--model", "m", "--out", str(out)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "is not empty" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_material_that_cannot_be_copied_is_one_line_per_run_and_exit_1(tmp_path: Path) -> None:
    """A socket in the material (copytree refuses special files): no run starts, the
    eval still writes its outputs and names the run that never started."""
    import socket

    task = tmp_path / "set" / "t1"
    (task / "material").mkdir(parents=True)
    (task / "material" / "a.py").write_text("x = 1\n")
    (task / "prompt.md").write_text("Review a.py")
    (task / "truth.toml").write_text(
        '[[defect]]\nid = "d"\nfile = "a.py"\nlines = [1, 1]\nconcern = "c"\nwords = ["x"]\n'
    )
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(task / "material" / "s.sock"))
    try:
        done = subprocess.run(
            cli_argv(
                "eval",
                str(tmp_path / "set"),
                "--model",
                "m",
                "--configs",
                "single",
                "--out",
                str(tmp_path / "out"),
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        sock.close()
    assert done.returncode == 1, done.stderr
    assert "no run: cannot set up the run" in done.stdout
    assert "Traceback" not in done.stderr
    assert "1 run(s) never started" in done.stderr
    assert (tmp_path / "out" / "EVAL.json").exists()


@pytest.mark.parametrize("flag", ["--max-cost-usd", "--max-minutes"])
@pytest.mark.parametrize("text", ["inf", "1e309", "nan", "-inf", "0", "-1", "0.5"])
def test_eval_takes_a_budget_flag_exactly_when_run_s_settings_model_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, text: str
) -> None:
    """One validation for `--max-cost-usd` and `--max-minutes`: the settings model's.
    What it passes, the eval passes on to the next check (a non-empty --out here, so
    nothing runs); what it refuses, the eval refuses in one line naming the flag."""
    field = flag.removeprefix("--").replace("-", "_")
    try:
        load_settings(environ={}, overrides={field: text})
        settings_take = True
    except SettingsError:
        settings_take = False
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code = main(["eval", "bundled", "--model", "m", "--out", str(out), f"{flag}={text}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    if settings_take:
        assert "is not empty" in lines[0]
    else:
        assert lines[0].startswith(f"horde-tui eval: refused: {flag}"), lines[0]


def test_lessons_configurations_parse_beside_the_others() -> None:
    assert parse_configs("horde:4,horde:4:lessons,horde:3:no-repair:lessons,single:lessons") == [
        Config("horde:4", 4, True),
        Config("horde:4:lessons", 4, True, True),
        Config("horde:3:no-repair:lessons", 3, False, True),
        Config("single:lessons", 1, False, True),
    ]
    for bad in ("horde:4:lessons:no-repair", "horde:4:lessons:lessons", "lessons"):
        with pytest.raises(EvalUsageError, match="optionally followed by :lessons"):
            parse_configs(bad)


def test_a_lessons_run_gets_the_lessons_and_the_same_budget(tmp_path: Path) -> None:
    """`horde:2,horde:2:lessons`: both runs the same command line (model, budget), only the
    `:lessons` one with LESSONS.md in its fresh `.horde/` and lessons on, as its own launch
    check reads them."""
    source = tmp_path / "LESSONS.md"
    source.write_text("## 1. Claim an idea before working it. (raised in 2 of 2 runs)\n")
    options = EvalOptions(
        model="openai/gpt-4o-mini",
        configs=tuple(parse_configs("horde:2,horde:2:lessons")),
        out=tmp_path / "out",
        max_cost_usd=0.5,
        lessons=source,
    )
    plain, given = plan_jobs([TASK], options)
    assert run_argv(plain, options)[4:] == run_argv(given, options)[4:]
    for job, on in ((plain, False), (given, True)):
        work = harness.prepare_work(job, options)
        assert (work / ".horde" / "LESSONS.md").exists() is on
        args = build_parser().parse_args(run_argv(job, options)[3:])
        check = check_launch(
            RunOptions.from_args(args), work / ".horde", environ=run_env(job, options)
        )
        assert check.ok, [r.message for r in check.refusals]
        assert check.settings is not None and check.settings.supervisor.lessons is on


def test_eval_refuses_lessons_without_a_lessons_file_and_writes_nothing(
    in_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "demo", "--model", "demo", "--configs", "horde:2,horde:2:lessons"]
    assert main([*argv, "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a :lessons configuration" in err
    assert "horde-tui lessons" in err and not (in_dir / "out").exists()
