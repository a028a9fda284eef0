"""Every setting reaches the process that uses it, by every way of setting it.

The ways: `.horde/config.toml`, a `HORDE_*` variable, a `run` flag (where one exists)
and, for flags, a `run --detach` (the detached process gets the flag again). Each case
goes through the real launch code: `horde-tui run`'s parser, `check_launch`, the
supervisor it builds; then the child that uses the setting reads it itself:

- a member: its own configuration read (`load_member_config`) in a real process, from
  the environment the supervisor built for it (`Supervisor.member_env`);
- the gateway: started by the supervisor (`start_gateway`), it records the settings it
  runs with in `gateway.json`;
- the supervisor: the `Settings` the launch check hands it.

Each case first checks that its value differs from what the child sees by default, so
a setting that does not arrive fails the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv

from horde_tui.commands.cli import build_parser
from horde_tui.common.settings import SETTING_FIELDS, env_name, setting_value
from horde_tui.launch.launch import LaunchCheck, RunOptions, build_host, check_launch, detached_argv
from horde_tui.supervisor.processes import GatewayHandle
from horde_tui.supervisor.run import Supervisor

PRICED_MODEL = "openai/gpt-4o-mini"
"""A model litellm prices: a gateway with a cost budget refuses an unpriced one."""


@dataclass(frozen=True)
class Case:
    """One setting: its config.toml value, its variable's text, its `run` flag (None:
    none) and what the child that uses it must see."""

    field: str
    config: Any
    env: str
    flag: tuple[str, ...] | None
    seen: Any

    def ways(self) -> list[str]:
        return ["config", "env"] + (["flag", "detached"] if self.flag else [])


MEMBER = [
    Case("remind_calls", 3, "3", None, 3),
    Case("remind_ms", 4000, "4000", None, 4000),
    Case("inbox_turns", 5, "5", None, 5),
    Case("max_turns", 33, "33", None, 33),
    Case("request_timeout_s", 77, "77", None, 77.0),
    Case("sandbox", "off", "off", ("--sandbox", "off"), "off"),
    Case("sandbox_network", False, "off", None, False),
    Case("sandbox_env", ["FOO_A", "FOO_B"], "FOO_A,FOO_B", None, ["FOO_A", "FOO_B"]),
    # `--confirm` is refused for a detached run (no terminal), so no flag ways here.
    Case("confirm", True, "on", None, True),
    Case("sandbox_git_write", True, "on", None, True),
]
GATEWAY = [
    Case("model", "openai/other", "openai/other", ("--model", "openai/other"), "openai/other"),
    Case("thinking", "high", "high", ("--thinking", "high"), "high"),
    Case(
        "api_base",
        "http://127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1",
        ("--api-base", "http://127.0.0.1:9/v1"),
        "http://127.0.0.1:9/v1",
    ),
    Case("tool_protocol", "json", "json", ("--tool-protocol", "json"), "json"),
    Case("max_cost_usd", 2.5, "2.5", ("--max-cost-usd", "2.5"), 2.5),
    Case("retry_after_max_ms", 1234, "1234", None, 1234),
    Case("compact_tokens", 300, "300", ("--compact-tokens", "300"), 300),
    Case("aihorde_deadline_s", 90, "90", None, 90),
    Case("allow_downgrade", True, "on", None, True),
    Case(
        "member_models",
        {"member-2": "openai/b"},
        "member-2=openai/b",
        ("--member-model", "member-2=openai/b"),
        {"member-2": "openai/b"},
    ),
    Case("gateway_backoff_ms", 20, "20", None, 20),
    Case("max_in_flight", 3, "3", None, 3),
]
SUPERVISOR = [
    Case("max_minutes", 7.5, "7.5", ("--max-minutes", "7.5"), 7.5),
    Case("canary_ms", 1234, "1234", None, 1234),
    Case("stall_ms", 0, "0", None, 0),
    Case("reset_cap", 5, "5", None, 5),
    Case("swarm_stagger_ms", 10, "10", None, 10),
    Case("planner_ms", 999, "999", None, 999),
    Case("active_grace_ms", 11, "11", None, 11),
    Case("solved_confirm_ms", 12, "12", None, 12),
    Case("solved_stop_ms", 13, "13", None, 13),
    Case("allow_unverified", True, "on", None, True),
    Case("repair_rounds", 6, "6", None, 6),
    Case("repair_ms", 5000, "5000", None, 5000),
    Case("repair_tokens", 6000, "6000", None, 6000),
    Case("repair_min_tokens", 7000, "7000", None, 7000),
    Case("repair_min_ms", 8000, "8000", None, 8000),
    Case("repair_turns", 9, "9", None, 9),
    Case("deliverable", False, "off", None, False),
    Case("postmortem", False, "off", None, False),
    Case("postmortem_ms", 4321, "4321", None, 4321),
    Case("cleanup", False, "off", None, False),
    Case("continue_cooldown_ms", 14, "14", None, 14),
    Case("preset", "code-audit", "code-audit", ("--preset", "code-audit"), "code-audit"),
    Case("lessons", True, "on", ("--lessons",), True),
]
SERVE = ["serve_port"]
"""Read by `horde-tui serve` alone, no process of a run (tests/unit/web/test_web_serve.py checks
its variable, config key and refusal)."""
SECRET = "api_key"
"""Checked apart (`test_the_api_key_reaches_the_gateway_alone`): never written down."""


def _cases(group: list[Case]) -> list[Any]:
    return [pytest.param(c, way, id=f"{c.field}-{way}") for c in group for way in c.ways()]


def test_every_setting_is_in_one_group() -> None:
    """A new field must say which process uses it, and so get its reach test here."""
    named = [c.field for c in MEMBER + GATEWAY + SUPERVISOR] + SERVE + [SECRET]
    assert sorted(named) == sorted(SETTING_FIELDS)


# -- launching --------------------------------------------------------------------------------


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)  # strings, numbers, booleans and lists read the same in TOML


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project directory as cwd, with no `HORDE_*` variable but the model."""
    for name in list(os.environ):
        if name.startswith("HORDE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HORDE_MODEL", "openai/stub")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".horde").mkdir()
    # `lessons` on is refused without a lesson to give (`launch.lessons_refusal`).
    (tmp_path / ".horde" / "LESSONS.md").write_text("## 1. Claim first. (raised in 2 of 2 runs)\n")
    yield tmp_path


def _check(project: Path, argv: list[str]) -> LaunchCheck:
    options = RunOptions.from_args(build_parser().parse_args(argv))
    check = check_launch(options, project / ".horde")
    assert check.ok, [r.message for r in check.refusals]
    return check


def launch(
    project: Path, monkeypatch: pytest.MonkeyPatch, case: Case | None, way: str = ""
) -> Supervisor:
    """The supervisor `horde-tui run 2 ...` builds with `case` set `way` (None: defaults)."""
    argv = ["run", "--headless", "2", "audit app.py"]
    if case is not None and way == "config":
        monkeypatch.delenv(env_name(case.field), raising=False)  # the base model's variable
        (project / ".horde" / "config.toml").write_text(
            f"[horde]\n{case.field} = {_toml(case.config)}\n"
        )
    elif case is not None and way == "env":
        monkeypatch.setenv(env_name(case.field), case.env)
    elif case is not None:
        assert case.flag is not None
        argv += case.flag
    check = _check(project, argv)
    if way == "detached":  # the command line a detached run starts with, parsed again
        words = detached_argv(RunOptions.from_args(build_parser().parse_args(argv)), None)
        assert words[:3] == cli_argv()
        check = _check(project, words[3:])
    sup = build_host(check, project)
    assert isinstance(sup, Supervisor)
    return sup


# -- members ----------------------------------------------------------------------------------

MEMBER_READ = """\
import json
from horde_tui.member.config import load_member_config
c = load_member_config()
print(json.dumps({
    **c.settings.model_dump(),
    "sandbox": c.sandbox.mode, "sandbox_network": c.sandbox.network,
    "sandbox_env": list(c.sandbox.env_names),
    "sandbox_git_write": c.sandbox.git_write,
}))
"""


def member_sees(sup: Supervisor) -> dict[str, Any]:
    """What member-1 reads from the environment its supervisor gives it, in its own
    process."""
    sup.gateway = GatewayHandle(None, "http://127.0.0.1:9", "token")  # type: ignore[arg-type]
    env = sup.member_env(sup.specs[0], 1)
    out = subprocess.run(
        [sys.executable, "-c", MEMBER_READ], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    seen: dict[str, Any] = json.loads(out.stdout)
    return seen


@pytest.mark.parametrize(("case", "way"), _cases(MEMBER))
def test_a_member_setting_reaches_the_member(
    project: Path, monkeypatch: pytest.MonkeyPatch, case: Case, way: str
) -> None:
    default = member_sees(launch(project, monkeypatch, None))[case.field]
    if default == case.seen:
        pytest.skip(f"{case.field}: {case.seen!r} is also what a member sees by default here")
    assert member_sees(launch(project, monkeypatch, case, way))[case.field] == case.seen


def test_a_swarm_helper_gets_the_member_settings(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A swarm's planner is a member session of the swarm host, not of a horde's
    supervisor: it reads the same settings from its own environment."""
    from horde_tui.supervisor.setup import MemberSpec
    from horde_tui.supervisor.swarm import PLANNER, SwarmSupervisor

    (project / ".horde" / "config.toml").write_text("[horde]\ninbox_turns = 5\nmax_turns = 33\n")
    swarm = build_host(_check(project, ["run", "--headless", "2/2", "audit app.py"]), project)
    assert isinstance(swarm, SwarmSupervisor)
    swarm.gateway = GatewayHandle(None, "http://127.0.0.1:9", "token")  # type: ignore[arg-type]
    env = swarm.member_env(MemberSpec(PLANNER, PLANNER), 1)
    out = subprocess.run(
        [sys.executable, "-c", MEMBER_READ], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert (seen["inbox_turns"], seen["max_turns"]) == (5, 33)


# -- the gateway ------------------------------------------------------------------------------


def gateway_sees(sup: Supervisor) -> dict[str, Any]:
    """The settings the gateway the supervisor starts says it runs with."""

    async def start() -> dict[str, Any]:
        sup.run_dir.mkdir(parents=True)
        await sup.start_gateway()
        try:
            info: dict[str, Any] = json.loads((sup.run_dir / "gateway.json").read_text())
        finally:
            await sup.stop_gateway()
        return info

    info = asyncio.run(start())
    assert "api_key" not in json.dumps(info["settings"])
    settings: dict[str, Any] = info["settings"]
    return settings


@pytest.mark.parametrize(("case", "way"), _cases(GATEWAY))
def test_a_gateway_setting_reaches_the_gateway(
    project: Path, monkeypatch: pytest.MonkeyPatch, case: Case, way: str
) -> None:
    if case.field == "max_cost_usd":
        monkeypatch.setenv("HORDE_MODEL", PRICED_MODEL)
    sup = launch(project, monkeypatch, case, way)
    assert setting_value(sup.settings, case.field) == case.seen
    defaults = SETTING_FIELDS[case.field].get_default(call_default_factory=True)
    assert defaults != case.seen
    if way != "detached":  # from the supervisor on, a detached run is the flag's case
        assert gateway_sees(sup)[case.field] == case.seen


def test_the_api_key_reaches_the_gateway_alone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key goes to the gateway's environment, never to a member's or a command line."""
    for way in ("config", "env", "flag"):
        case = Case("api_key", "sk-config", "sk-config", ("--api-key", "sk-config"), "")
        monkeypatch.delenv("HORDE_API_KEY", raising=False)
        (project / ".horde" / "config.toml").unlink(missing_ok=True)
        sup = launch(project, monkeypatch, case, way)
        assert sup._gateway_env()["HORDE_API_KEY"] == "sk-config", way
        assert "sk-config" not in json.dumps(member_sees(sup))
        sup.gateway = GatewayHandle(None, "http://127.0.0.1:9", "token")  # type: ignore[arg-type]
        assert "sk-config" not in json.dumps(sup.member_env(sup.specs[0], 1)), way


# -- the supervisor ---------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "way"), _cases(SUPERVISOR))
def test_a_supervisor_setting_reaches_the_supervisor(
    project: Path, monkeypatch: pytest.MonkeyPatch, case: Case, way: str
) -> None:
    default = setting_value(launch(project, monkeypatch, None).settings, case.field)
    assert default != case.seen
    assert setting_value(launch(project, monkeypatch, case, way).settings, case.field) == case.seen


# -- documentation ----------------------------------------------------------------------------


def test_run_help_names_every_setting_and_its_flags() -> None:
    out = subprocess.run(
        cli_argv("run", "--help"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for name in SETTING_FIELDS:
        assert env_name(name) in text, name
    for case in MEMBER + GATEWAY + SUPERVISOR:
        if case.flag:
            assert case.flag[0] in text, case.flag[0]
