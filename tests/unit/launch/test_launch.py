"""The one check a new run passes, shared by `horde-tui run`/`plan` and the launch form:
each rule refuses with one line naming the field, and every bad field is named at once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.rundir import RunDir

from horde_tui.common.settings import THINKING_LEVELS
from horde_tui.launch.launch import RunOptions, check_launch, detached_argv

MODEL_ENV = {"HORDE_MODEL": "openai/stub"}


def refusals(check: object) -> dict[str, str]:
    return {r.field: r.message for r in check.refusals}  # type: ignore[attr-defined]


def test_a_good_open_run_yields_its_request_and_settings(tmp_path: Path) -> None:
    options = RunOptions("4", "Find the bugs", thinking="low", max_minutes="30", no_verifier=True)
    check = check_launch(options, tmp_path / ".horde", environ=MODEL_ENV)
    assert check.ok, check.refusals
    assert check.request is not None and check.settings is not None
    assert (check.request.prompt, check.request.count, check.request.verifier) == (
        "Find the bugs",
        4,
        False,
    )
    assert (
        check.settings.gateway.model == "openai/stub"
        and check.settings.supervisor.max_minutes == 30.0
    )
    assert check.settings.gateway.thinking == "low"


def test_plan_layers_give_the_plan_prompt_when_none_is_typed(tmp_path: Path) -> None:
    check = check_launch(RunOptions("2"), tmp_path / ".horde", "parser; checker", MODEL_ENV)
    assert check.ok and check.request is not None
    assert check.request.layers == ["parser", "checker"]
    assert check.request.prompt == "Analyse each layer: parser; checker"


@pytest.mark.parametrize(
    ("options", "layers", "field", "says"),
    [
        (RunOptions("13", "x"), None, "count", "a horde has 1 to 12 members, not 13"),
        (RunOptions("three", "x"), None, "count", "is not M or H/M"),
        (RunOptions("5/3", "x"), None, "count", "a swarm has 1 to 4 hordes, not 5"),
        (RunOptions("3/2"), "a; b", "layers", "plan 3/M needs at least 3 layers"),
        (RunOptions("3", "   "), None, "prompt", "the prompt is empty"),
        (RunOptions("3"), " ; ", "layers", 'plan needs layers separated by ";"'),
        (RunOptions("3", "x", max_minutes="soon"), None, "max_minutes", "valid number"),
        (RunOptions("3", "x", max_minutes="-5"), None, "max_minutes", "greater than 0"),
        (RunOptions("3", "x", thinking="max"), None, "thinking", "'off', 'low', 'medium'"),
    ],
)
def test_each_rule_refuses_with_one_line_on_its_field(
    tmp_path: Path, options: RunOptions, layers: str | None, field: str, says: str
) -> None:
    check = check_launch(options, tmp_path / ".horde", layers, MODEL_ENV)
    assert not check.ok and check.request is None
    found = refusals(check)
    assert list(found) == [field], found
    assert says in found[field] and found[field].startswith("refused: ")
    assert "\n" not in found[field]


def test_every_bad_field_is_named_at_once(tmp_path: Path) -> None:
    options = RunOptions("0", "", thinking="max", max_minutes="0")
    found = refusals(check_launch(options, tmp_path / ".horde", environ=MODEL_ENV))
    assert set(found) == {"count", "prompt", "thinking", "max_minutes"}, found


def test_no_model_anywhere_is_refused(tmp_path: Path) -> None:
    found = refusals(check_launch(RunOptions("3", "x"), tmp_path / ".horde", environ={}))
    assert list(found) == ["model"] and "no model" in found["model"]


def test_a_bad_config_file_is_refused_with_its_path(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    horde.mkdir()
    (horde / "config.toml").write_text('thinking = "max"\n')
    found = refusals(check_launch(RunOptions("3", "x"), horde, environ=MODEL_ENV))
    assert list(found) == ["settings"] and str(horde / "config.toml") in found["settings"]
    # The form's own thinking value overrides the file's, as a CLI flag would.
    check = check_launch(RunOptions("3", "x", thinking="high"), horde, environ=MODEL_ENV)
    assert check.ok, check.refusals


def test_a_live_run_in_the_directory_refuses_a_second(tmp_path: Path) -> None:
    live = RunDir(tmp_path / ".horde", "20260102-120000-aaaa")
    live.live(os.getpid())
    check = check_launch(RunOptions("3", "x"), tmp_path / ".horde", environ=MODEL_ENV)
    found = refusals(check)
    assert list(found) == ["run"] and "20260102-120000-aaaa is live" in found["run"]
    assert check.refusals[0].exit_code == 1


def test_a_member_cannot_start_a_nested_horde(tmp_path: Path) -> None:
    env = {**MODEL_ENV, "HORDE_GATEWAY_URL": "http://127.0.0.1:1", "HORDE_RUN": "r1"}
    found = refusals(check_launch(RunOptions("3", "x"), tmp_path / ".horde", environ=env))
    assert list(found) == ["run"] and "nested horde" in found["run"]


def test_thinking_levels_are_the_settings_own() -> None:
    assert THINKING_LEVELS == ("off", "low", "medium", "high")


def test_the_form_options_repeat_as_a_detached_command_line() -> None:
    options = RunOptions("2", "Review app.py", model="m/x", max_minutes="15", until_stop=True)
    assert detached_argv(options, None)[3:] == [
        "run",
        "--headless",
        "2",
        "Review app.py",
        "--model",
        "m/x",
        "--max-minutes",
        "15",
        "--until-stop",
    ]


def test_the_cli_prints_every_refusal_and_starts_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env["HORDE_MODEL"] = "openai/stub"
    done = subprocess.run(
        cli_argv("run", "--headless", "7/3", " "),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "horde-tui: refused: a swarm has 1 to 4 hordes, not 7",
        "horde-tui: refused: the prompt is empty; a run needs a task: say what the members "
        "should do",
    ]
    assert not (tmp_path / ".horde" / "runs").exists()
    assert not (tmp_path / ".horde" / "swarms").exists()


def test_a_plan_with_its_own_prompt_survives_the_detached_command_line(tmp_path: Path) -> None:
    """The form takes a prompt and layers together; `plan --prompt` carries both to the
    detached process, which checks them into the same request."""
    from horde_tui.commands.cli import build_parser

    options = RunOptions("2", "Audit the compiler")
    argv = detached_argv(options, "parser; checker")
    assert argv[3:] == [
        "plan",
        "--headless",
        "2",
        "parser; checker",
        "--prompt",
        "Audit the compiler",
    ]
    args = build_parser().parse_args(argv[3:])
    check = check_launch(RunOptions.from_args(args), tmp_path / ".horde", args.layers, MODEL_ENV)
    assert check.ok and check.request is not None
    assert (check.request.prompt, check.request.layers) == (
        "Audit the compiler",
        ["parser", "checker"],
    )


def test_one_line_says_where_a_detached_run_or_swarm_goes_on(tmp_path: Path) -> None:
    """`run --detach`, `resume RUN --detach`, `resume SWARM --detach` and the app's
    handoff all tell the person the same thing, built by `in_background`: which run or
    swarm, how it got there, its pid and log, and how to watch and stop it."""
    from horde_tui.launch.launch import DetachedStart, in_background
    from horde_tui.store.runs import write_swarm_json

    horde_dir = tmp_path / ".horde"
    log = horde_dir / "detached-1.log"
    run_dir = horde_dir / "runs" / "20250101-120000-beef"
    run = in_background(DetachedStart(4321, log, run_dir), "started")
    assert run.splitlines() == [
        f"run 20250101-120000-beef started in the background (pid 4321); log: {log}",
        "watch it: horde-tui attach 20250101-120000-beef   (or horde-tui status)",
        "stop it:  horde-tui stop-clean   (or horde-tui stop-hard)",
    ]
    swarm_dir = horde_dir / "swarms" / "s20250101-beef"
    swarm_dir.mkdir(parents=True)
    write_swarm_json(swarm_dir, {"id": "s20250101-beef", "hordes": 2, "members": 3})
    swarm = in_background(DetachedStart(99, log, swarm_dir), "goes on")
    assert swarm.splitlines() == [
        f"swarm s20250101-beef goes on in the background (pid 99); log: {log}",
        "watch it: horde-tui status   (one block per horde)",
        "a horde:  horde-tui attach s20250101-beef-h1   horde-tui attach s20250101-beef-h2",
        "stop it:  horde-tui stop-clean   (or horde-tui stop-hard)",
    ]
    assert in_background(DetachedStart(7, log, run_dir), "resumed").startswith(
        "run 20250101-120000-beef resumed in the background (pid 7)"
    )


def test_a_prompt_over_a_members_context_budget_is_refused_with_its_size(
    tmp_path: Path,
) -> None:
    """With a context budget (`--compact-tokens`) a prompt that alone fills it is refused
    with its size in tokens; one that takes more than half of it is started with a note."""
    horde = tmp_path / ".horde"
    big = "Review this log line by line: " + "error at app.py:12 " * 100  # 1,929 stripped
    check = check_launch(RunOptions("2", big, compact_tokens="400"), horde, environ=MODEL_ENV)
    assert refusals(check) == {
        "prompt": "refused: the prompt is about 483 tokens (1,929 characters) and a member's "
        "context budget is 400 tokens (--compact-tokens 400); shorten it (put the material "
        "in a file of the project and name the file), or raise --compact-tokens"
    }
    check = check_launch(RunOptions("2", big, compact_tokens="800"), horde, environ=MODEL_ENV)
    assert check.ok and check.notes == [
        "note: the prompt is about 483 tokens, more than half of a member's context budget "
        "of 800 (--compact-tokens 800): little room is left for the work"
    ]
    check = check_launch(RunOptions("2", big), horde, environ=MODEL_ENV)
    assert check.ok and check.notes == []  # no budget set: the provider's window decides
