"""`horde-tui doctor`: every check in both states, its exit codes and its JSON; `--probe`
through a real gateway against the stub model: up, down, slow, no tool calls, unpriced.

The checks run in-process on real files and real processes; litellm's view of a model
string comes from the gateway-side helper as its own process (only the gateway side
imports litellm), and `--probe` starts a gateway as the supervisor does, so those tests
pay litellm's import and are marked slow, like the other real-gateway runs.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_bwrap
from support.aihorde import FakeHorde, FakeHordeThread, FakeModel, json_tool_answer
from support.cli import cli, cli_argv, host_env, stub_env
from support.processes import dead_pid
from support.rundir import RunDir

from horde_tui.commands.doctor import checks as doctor
from horde_tui.commands.doctor.checks import Check, exit_code
from horde_tui.common.settings import Settings
from horde_tui.stubmodel import Step, StubThread

PRICED = "openai/gpt-4o-mini"
"""A model litellm prices, served by the stub through api_base."""


def statuses(checks: list[Check], name: str) -> list[str]:
    return [c.status for c in checks if c.name == name]


def only(checks: list[Check], name: str) -> Check:
    found = [c for c in checks if c.name == name]
    assert len(found) == 1, found
    return found[0]


# -- settings ---------------------------------------------------------------------------------


def test_config_absent_is_ok_and_a_valid_one_parses(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    assert statuses(doctor.check_config(horde), "config") == ["ok"]
    horde.mkdir()
    (horde / "config.toml").write_text('[horde]\nmodel = "openai/gpt-4o"\nmax_minutes = 30\n')
    check = only(doctor.check_config(horde), "config")
    assert check.status == "ok" and "2 settings" in check.text


def test_config_with_an_unknown_key_fails_naming_it(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    horde.mkdir()
    (horde / "config.toml").write_text('[horde]\nmodle = "openai/gpt-4o"\n')
    check = only(doctor.check_config(horde), "config")
    assert check.status == "FAIL" and "'modle'" in check.text and "config.toml" in check.fix


def test_config_that_does_not_parse_fails(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    horde.mkdir()
    (horde / "config.toml").write_text("[horde\nmodel = \n")
    assert only(doctor.check_config(horde), "config").status == "FAIL"


def test_a_preset_file_that_does_not_parse_is_named(tmp_path: Path) -> None:
    presets = tmp_path / ".horde" / "presets"
    presets.mkdir(parents=True)
    (presets / "good.toml").write_text('name = "good"\n')
    assert statuses(doctor.check_config(tmp_path / ".horde"), "preset") == []
    (presets / "bad.toml").write_text("name = \n")
    check = only(doctor.check_config(tmp_path / ".horde"), "preset")
    assert check.status == "warn" and "bad.toml" in check.text


def test_a_bad_variable_fails_the_settings(tmp_path: Path) -> None:
    settings, checks = doctor.check_settings(tmp_path / ".horde", {"HORDE_MAX_MINUTES": "soon"})
    assert settings is None and only(checks, "settings").status == "FAIL"
    assert "HORDE_MAX_MINUTES" in checks[0].text
    settings, checks = doctor.check_settings(tmp_path / ".horde", {"HORDE_MAX_MINUTES": "5"})
    assert settings is not None and settings.supervisor.max_minutes == 5
    assert only(checks, "settings").status == "ok"


def test_no_model_is_a_fail_and_the_flag_sets_one(tmp_path: Path) -> None:
    settings, _ = doctor.check_settings(tmp_path / ".horde", {})
    check = only(doctor.check_models(settings, {"models": []}), "model")
    assert check.status == "FAIL" and "--model" in check.fix
    settings, _ = doctor.check_settings(tmp_path / ".horde", {}, model="aihorde/x")
    assert settings is not None and settings.gateway.model == "aihorde/x"


# -- the model, as litellm resolves it (read from the helper's answer) ------------------------


def resolved(model: str, **info: Any) -> dict[str, Any]:
    base = {"model": model, "provider": "openai", "missing": [], "priced": True, "no_tools": False}
    return {"models": [{**base, **info}]}


def test_an_unknown_provider_fails() -> None:
    settings = Settings(model="foo/bar")
    lines = doctor.check_models(settings, resolved("foo/bar", provider=None, error="no provider"))
    assert statuses(lines, "model") == ["FAIL"]


def test_a_missing_key_fails_without_showing_any_key() -> None:
    settings = Settings(model="openai/gpt-4o")
    lines = doctor.check_models(settings, resolved("openai/gpt-4o", missing=["OPENAI_API_KEY"]))
    key = only(lines, "key")
    assert key.status == "FAIL" and "OPENAI_API_KEY" in key.text + key.fix
    given = Settings(model="openai/gpt-4o", api_key="sk-secret-value")
    key = only(doctor.check_models(given, resolved("openai/gpt-4o")), "key")
    assert key.status == "ok" and "sk-secret" not in key.line()


def test_a_missing_key_with_an_api_base_is_a_warning() -> None:
    settings = Settings(model="openai/local", api_base="http://127.0.0.1:9/v1")
    lines = doctor.check_models(settings, resolved("openai/local", missing=["OPENAI_API_KEY"]))
    assert statuses(lines, "key") == ["warn"]


def test_an_unpriced_model_warns_and_fails_under_a_budget() -> None:
    lines = doctor.check_models(Settings(model="openai/x"), resolved("openai/x", priced=False))
    assert statuses(lines, "price") == ["warn"]
    budget = Settings(model="openai/x", max_cost_usd=2)
    assert statuses(doctor.check_models(budget, resolved("openai/x", priced=False)), "price") == [
        "FAIL"
    ]
    assert statuses(doctor.check_models(budget, resolved("openai/x")), "price") == ["ok"]


def test_each_member_model_is_checked() -> None:
    settings = Settings(model="openai/a", member_models={"member-3": "anthropic/b"})
    answer = {
        "models": [
            resolved("openai/a")["models"][0],
            resolved("anthropic/b", provider="anthropic", missing=["ANTHROPIC_API_KEY"])["models"][
                0
            ],
        ]
    }
    keys = [c for c in doctor.check_models(settings, answer) if c.name == "key"]
    assert [c.status for c in keys] == ["ok", "FAIL"] and "anthropic/b" in keys[1].text


def test_an_aihorde_model_mixed_with_a_key_for_another_provider_fails() -> None:
    settings = Settings(
        model="aihorde/koboldcpp/x", member_models={"member-2": "openai/y"}, api_key="k"
    )
    assert "FAIL" in statuses(doctor.check_models(settings, resolved("openai/y")), "key")


@pytest.mark.slow
def test_the_litellm_helper_resolves_providers_and_keys_in_its_own_process() -> None:
    """The real helper (litellm imported there, never here): a known provider with its
    key, one without, and a model string no provider claims."""
    settings = Settings(model="openai/gpt-4o-mini", api_key=None)
    proc = doctor.start_resolve(["openai/gpt-4o-mini", "anthropic/claude-x", "nosuch/m"], settings)
    answer = doctor.finish_resolve(proc)
    by_model = {r["model"]: r for r in answer["models"]}
    assert by_model["openai/gpt-4o-mini"]["provider"] == "openai"
    assert by_model["openai/gpt-4o-mini"]["priced"] is True
    assert by_model["anthropic/claude-x"]["provider"] == "anthropic"
    assert by_model["nosuch/m"]["provider"] is None and by_model["nosuch/m"]["error"]
    missing = by_model["anthropic/claude-x"]["missing"]
    if not os.environ.get("ANTHROPIC_API_KEY"):
        assert missing == ["ANTHROPIC_API_KEY"]


# -- AI Horde workers --------------------------------------------------------------------------


@pytest.fixture
def swarm() -> Iterator[FakeHordeThread]:
    models = [
        FakeModel("koboldcpp/Served-7B", workers=2),
        FakeModel("koboldcpp/Idle-7B", workers=0),
    ]
    with FakeHordeThread(FakeHorde(models=models, answer=json_tool_answer)) as served:
        yield served


def test_an_aihorde_model_without_a_worker_warns(swarm: FakeHordeThread) -> None:
    served = Settings(model="aihorde/koboldcpp/Served-7B", api_base=swarm.api_base)
    assert statuses(doctor.check_aihorde(served), "workers") == ["ok"]
    idle = Settings(model="aihorde/koboldcpp/Idle-7B", api_base=swarm.api_base)
    check = only(doctor.check_aihorde(idle), "workers")
    assert check.status == "warn" and "Served-7B" in check.fix


def test_an_unreachable_aihorde_list_warns() -> None:
    settings = Settings(model="aihorde/koboldcpp/x", api_base=f"http://127.0.0.1:{free_port()}/api")
    assert statuses(doctor.check_aihorde(settings, timeout_s=5), "workers") == ["warn"]


# -- the machine -------------------------------------------------------------------------------


def test_rg_and_git_found_on_path_or_not(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert statuses(doctor.check_programs({"PATH": str(empty)}), "rg") == ["warn"]
    assert statuses(doctor.check_programs({"PATH": str(empty)}), "git") == ["warn"]
    full = tmp_path / "bin"
    full.mkdir()
    for name in ("rg", "git"):
        program = full / name
        program.write_text("#!/bin/sh\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    checks = doctor.check_programs({"PATH": str(full)})
    assert statuses(checks, "rg") == ["ok"] and statuses(checks, "git") == ["ok"]


@pytest.mark.parametrize(
    ("env", "size", "status", "needle"),
    [
        ({"TERM": "xterm-256color", "COLORTERM": "truecolor"}, (120, 40), "ok", "truecolor"),
        ({"TERM": "xterm-256color", "SSH_CONNECTION": "1 2 3 4"}, (120, 40), "ok", "SSH"),
        ({"TERM": "xterm"}, (120, 40), "warn", "xterm-256color"),
        ({"TERM": "dumb"}, (120, 40), "warn", "TERM=dumb"),
    ],
)
def test_terminal_colours(
    env: dict[str, str], size: tuple[int, int], status: str, needle: str
) -> None:
    check = only(doctor.check_terminal(env, size), "colours")
    assert check.status == status and needle in check.line()


def test_terminal_size_and_no_terminal() -> None:
    env = {"TERM": "xterm-256color"}
    assert only(doctor.check_terminal(env, (100, 30)), "terminal").status == "ok"
    small = only(doctor.check_terminal(env, (60, 20)), "terminal")
    assert small.status == "warn" and "60x20" in small.text
    assert only(doctor.check_terminal(env, None), "terminal").status == "ok"


def test_horde_dir_writable_or_not(tmp_path: Path) -> None:
    checks = doctor.check_horde_dir(tmp_path / ".horde")
    assert statuses(checks, "writable") == ["ok"] and "will be made" in checks[0].text
    (tmp_path / ".horde").write_text("a file where the folder belongs")
    assert statuses(doctor.check_horde_dir(tmp_path / ".horde"), "writable") == ["FAIL"]
    gone = tmp_path / "no-such-folder" / ".horde"
    assert statuses(doctor.check_horde_dir(gone), "writable") == ["FAIL"]


def test_free_disk_below_the_floor_fails(tmp_path: Path) -> None:
    assert statuses(doctor.check_horde_dir(tmp_path / ".horde"), "disk") in (["ok"], ["warn"])
    huge = 1 << 60  # more free space than any disk has
    assert statuses(doctor.check_horde_dir(tmp_path / ".horde", fail_bytes=huge), "disk") == [
        "FAIL"
    ]


def test_a_stale_live_marker_warns_and_a_live_run_fails(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    assert statuses(doctor.check_runs(horde), "runs") == ["ok"]
    RunDir(horde, "20260102-120000-aaaa").live(dead_pid())
    check = only(doctor.check_runs(horde), "runs")
    assert check.status == "warn" and "finalize 20260102-120000-aaaa" in check.fix
    RunDir(horde, "20260102-130000-bbbb").live(os.getpid())
    assert sorted(statuses(doctor.check_runs(horde), "runs")) == ["FAIL", "warn"]


# -- the command: exit codes and --json --------------------------------------------------------


def test_no_model_exits_1_and_says_so(tmp_path: Path) -> None:
    done = cli(tmp_path, "doctor")
    assert done.returncode == 1, done.stderr
    assert any(line.startswith("FAIL model:") for line in done.stdout.splitlines())
    assert "Traceback" not in done.stderr


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    assert cli(tmp_path, "doctor", "--timeout", "0").returncode == 2
    assert cli(tmp_path, "doctor", "--nonsense").returncode == 2


def test_json_shape(tmp_path: Path) -> None:
    done = cli(tmp_path, "doctor", "--json")
    answer = json.loads(done.stdout)
    assert set(answer) == {"ok", "exit", "checks"}
    assert answer["ok"] is False and answer["exit"] == done.returncode == 1
    assert all(set(c) == {"name", "status", "text", "fix"} for c in answer["checks"])
    assert {c["status"] for c in answer["checks"]} <= {"ok", "warn", "FAIL"}
    assert {"config", "settings", "model", "rg", "git", "writable", "disk", "runs"} <= {
        c["name"] for c in answer["checks"]
    }


def test_an_aihorde_model_with_workers_exits_0_without_litellm(
    tmp_path: Path, swarm: FakeHordeThread
) -> None:
    """An AI Horde model needs no litellm resolution: the whole doctor is quick, and a
    run can work (exit 0) once the model has a worker."""
    done = cli(
        tmp_path,
        "doctor",
        "--json",
        HORDE_MODEL="aihorde/koboldcpp/Served-7B",
        HORDE_API_BASE=swarm.api_base,
        HORDE_SANDBOX="auto",
    )
    answer = json.loads(done.stdout)
    assert done.returncode == 0, answer
    assert [c["status"] for c in answer["checks"] if c["name"] == "workers"] == ["ok"]


# -- --probe through a real gateway on the stub model ------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    done = subprocess.run(
        cli_argv("doctor", "--probe", "--json", *args),
        cwd=tmp_path,
        env={**env, "TMPDIR": str(tmp_path)},  # its gateway's folder: this test's own
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr
    answer = json.loads(done.stdout)
    assert not doctor_gateways(tmp_path), "the probe left its gateway running"
    return done.returncode, answer, elapsed


def doctor_gateways(tmpdir: Path) -> list[int]:
    """Gateways a doctor started with `tmpdir` as its TMPDIR (their run folder is its
    temporary `horde-doctor-*`): not those of a test running beside this one."""
    mine = f"{tmpdir}/horde-doctor-".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"horde_tui.gateway" in argv and any(mine in a for a in argv):
            found.append(int(entry.name))
    return found


def probe_lines(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        c["name"]: c for c in answer["checks"] if c["name"] in ("probe", "tool calls", "priced")
    }


@pytest.mark.slow
def test_probe_up_priced_with_native_tool_calls(tmp_path: Path) -> None:
    tool_call = {"tool_calls": [{"name": "ping", "arguments": {"text": "pong"}}]}
    with StubThread({"*": [tool_call]}) as stub:
        code, answer, _ = probe(tmp_path, {**stub_env(stub), "HORDE_MODEL": PRICED})
        asked = stub.stub.requests
    lines = probe_lines(answer)
    assert code == 0, answer
    assert lines["probe"]["status"] == "ok" and " s" in lines["probe"]["text"]
    assert lines["tool calls"]["status"] == "ok" and "native" in lines["tool calls"]["text"]
    assert lines["priced"]["status"] == "ok"
    assert len(asked) == 1 and asked[0].body.get("tools"), "one tiny call, with a tool"


@pytest.mark.slow
def test_probe_down_fails(tmp_path: Path) -> None:
    env = host_env(
        HORDE_MODEL=PRICED,
        HORDE_API_BASE=f"http://127.0.0.1:{free_port()}/v1",
        HORDE_API_KEY="stub",
        HORDE_GATEWAY_BACKOFF_MS="20",
    )
    code, answer, _ = probe(tmp_path, env)
    assert code == 1
    assert probe_lines(answer)["probe"]["status"] == "FAIL"


@pytest.mark.slow
def test_probe_slow_model_times_out(tmp_path: Path) -> None:
    with StubThread({"*": [Step(content="late", delay_ms=60_000)]}) as stub:
        code, answer, elapsed = probe(
            tmp_path, {**stub_env(stub), "HORDE_MODEL": PRICED}, "--timeout", "2"
        )
    line = probe_lines(answer)["probe"]
    assert code == 1 and line["status"] == "FAIL" and "no answer in 2 s" in line["text"]
    assert elapsed < 55, "the probe waited for the slow model instead of its timeout"


@pytest.mark.slow
def test_probe_without_tool_support_reports_the_json_protocol(tmp_path: Path) -> None:
    def no_tools(member: str, body: dict[str, Any]) -> Step | None:
        if body.get("tools"):
            return Step(status=400, error_message="tools are not supported by this model")
        return Step(content='{"tool": "ping", "arguments": {"text": "pong"}}')

    with StubThread(policy=no_tools) as stub:
        code, answer, _ = probe(tmp_path, {**stub_env(stub), "HORDE_MODEL": PRICED})
    lines = probe_lines(answer)
    assert code == 0, answer
    assert lines["tool calls"]["status"] == "warn"
    assert "JSON protocol" in lines["tool calls"]["text"]


@pytest.mark.slow
def test_probe_unpriced_model_warns(tmp_path: Path) -> None:
    tool_call = {"tool_calls": [{"name": "ping", "arguments": {"text": "pong"}}]}
    with StubThread({"*": [tool_call]}) as stub:
        code, answer, _ = probe(tmp_path, stub_env(stub))  # openai/stub: no price
    lines = probe_lines(answer)
    assert code == 0, answer
    assert lines["priced"]["status"] == "warn" and "unknown" in lines["priced"]["text"]
    assert exit_code([Check(**c) for c in answer["checks"]]) == 0


def test_probe_reaches_each_distinct_model_once() -> None:
    settings = Settings(
        model="openai/a",
        member_models={
            "member-2": "openai/a",
            "member-4": "anthropic/b",
            "member-5": "anthropic/b",
        },
    )
    assert doctor.probe_targets(settings) == [("doctor", "openai/a"), ("member-4", "anthropic/b")]


def test_a_live_marker_naming_no_pid_is_stale_and_a_run_being_set_up_is_not(
    tmp_path: Path,
) -> None:
    horde = tmp_path / ".horde"
    RunDir(horde, "20260102-120000-aaaa")
    (horde / "runs" / "20260102-120000-aaaa" / ".live").write_text("garbage\n")
    check = only(doctor.check_runs(horde), "runs")
    assert check.status == "warn" and "names no pid" in check.text
    setting_up = horde / "runs" / "20260102-130000-bbbb"
    setting_up.mkdir(parents=True)
    (setting_up / ".live").write_text(f"{os.getpid()}\n")  # no TASK.md yet
    assert statuses(doctor.check_runs(horde), "runs") == ["warn"]


@pytest.mark.slow
def test_probe_calls_a_member_model_as_that_member(tmp_path: Path) -> None:
    tool_call = {"tool_calls": [{"name": "ping", "arguments": {"text": "pong"}}]}
    with StubThread({"*": [tool_call]}) as stub:
        env = {
            **stub_env(stub),
            "HORDE_MODEL": PRICED,
            "HORDE_MEMBER_MODELS": "member-4=openai/stub",
        }
        code, answer, _ = probe(tmp_path, env)
        asked = stub.stub.requests
    assert code == 0, answer
    probes = [c for c in answer["checks"] if c["name"] == "probe"]
    assert [c["status"] for c in probes] == ["ok", "ok"]
    assert sorted(r.body["model"] for r in asked) == ["gpt-4o-mini", "stub"]
    priced = {
        c["text"].split(":")[0]: c["status"] for c in answer["checks"] if c["name"] == "priced"
    }
    assert priced == {PRICED: "ok", "openai/stub": "warn"}


def test_an_unknown_config_key_is_one_fail_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / ".horde").mkdir()
    (tmp_path / ".horde" / "config.toml").write_text("[horde]\nmax_minuts = 5\n")
    done = cli(tmp_path, "doctor")
    assert done.returncode == 1
    naming = [line for line in done.stdout.splitlines() if "max_minuts" in line]
    assert len(naming) == 1 and naming[0].startswith("FAIL config:"), done.stdout


def test_probe_is_not_tried_without_a_model(tmp_path: Path) -> None:
    done = cli(tmp_path, "doctor", "--probe", "--json")
    answer = json.loads(done.stdout)
    assert done.returncode == 1
    probes = [c for c in answer["checks"] if c["name"] == "probe"]
    assert len(probes) == 1 and probes[0]["status"] == "FAIL" and "not tried" in probes[0]["text"]


@pytest.mark.slow
def test_probe_with_a_budget_on_an_unpriced_model_is_a_fail_and_no_call(tmp_path: Path) -> None:
    """The gateway would refuse the budget: doctor says so before any call, and the
    gateway it started alongside is stopped."""
    with StubThread() as stub:
        code, answer, _ = probe(tmp_path, {**stub_env(stub), "HORDE_MAX_COST_USD": "1"})
        asked = stub.stub.requests
    assert code == 1
    probe_line = probe_lines(answer)["probe"]
    assert probe_line["status"] == "FAIL"
    assert "not tried" in probe_line["text"]
    assert [c["status"] for c in answer["checks"] if c["name"] == "price"] == ["FAIL"]
    assert asked == [], "no call is made when the budget cannot be enforced"


def test_sandbox_off_warns_and_auto_says_what_runs() -> None:
    from horde_tui.sandbox.policy import bwrap_problem

    assert statuses(doctor.check_sandbox(Settings(sandbox="off")), "sandbox") == ["warn"]
    auto = only(doctor.check_sandbox(Settings(sandbox="auto")), "sandbox")
    required = only(doctor.check_sandbox(Settings(sandbox="bwrap")), "sandbox")
    if bwrap_problem() is None:
        assert auto.status == required.status == "ok"
    else:
        assert auto.status == "warn" and required.status == "FAIL"


@needs_bwrap
def test_doctor_says_commands_get_a_network_of_their_own() -> None:
    """Issue 29 item 8: with bubblewrap and the network on, a command gets a network
    namespace of its own where slirp4netns runs (off: only a loopback of its own)."""
    from horde_tui.sandbox.policy import network_problem

    off = only(doctor.check_sandbox(Settings(sandbox_network=False)), "sandbox network")
    assert off.status == "ok" and "loopback" in off.text, off
    if (problem := network_problem()) is not None:
        pytest.skip(f"no network namespace of its own here: {problem}")
    on = only(doctor.check_sandbox(Settings()), "sandbox network")
    assert on.status == "ok" and "slirp4netns works" in on.text, on


@needs_bwrap
def test_without_slirp4netns_doctor_says_commands_share_this_machines_network(
    no_slirp4netns: None,
) -> None:
    shared = only(doctor.check_sandbox(Settings()), "sandbox network")
    assert shared.status == "warn" and "share this machine's network" in shared.text, shared
    assert "127.0.0.1" in shared.text and "apt-get install slirp4netns" in shared.fix, shared


def test_without_bubblewrap_doctor_says_cleanup_commands_do_not_run(no_bwrap: None) -> None:
    """Resource cleanup runs only inside bubblewrap, whatever the sandbox mode (issue 31
    item 5), so a machine without it hears so before a run, not in its REPORT.md."""
    for mode in ("auto", "off"):
        check = only(doctor.check_sandbox(Settings(sandbox=mode)), "sandbox")
        assert check.status == "warn", (mode, check)
        assert "resource cleanup commands do not run" in check.text, (mode, check)


def test_the_brief_absent_still_the_template_or_written(tmp_path: Path) -> None:
    from horde_tui.commands.init import BRIEF

    assert only(doctor.check_brief(tmp_path), "brief").status == "ok"
    (tmp_path / "AGENTS.md").write_text(BRIEF)
    template = only(doctor.check_brief(tmp_path), "brief")
    assert template.status == "warn" and "template" in template.text
    (tmp_path / "AGENTS.md").write_text("# Brief\n\nThe parser in src/ is under study.\n")
    assert only(doctor.check_brief(tmp_path), "brief").status == "ok"
