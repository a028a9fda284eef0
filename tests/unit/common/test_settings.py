"""Settings precedence and errors: a typo must name the key, never fall back silently."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli_argv
from support.paths import REPO

from horde_tui.common.settings import SettingsError, load_settings


def test_defaults_match_the_reference_table() -> None:
    s = load_settings(environ={})
    assert (
        s.supervisor.canary_ms,
        s.supervisor.stall_ms,
        s.supervisor.reset_cap,
        s.member.remind_calls,
        s.member.inbox_turns,
    ) == (
        60_000,
        1_800_000,
        2,
        8,
        12,
    )
    assert (
        s.supervisor.deliverable and s.supervisor.postmortem and not s.supervisor.allow_unverified
    )
    assert s.repair.repair_ms is None and s.gateway.max_cost_usd is None


def test_precedence_config_then_env_then_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[horde]\nmodel = "openai/a"\nreset_cap = 5\nthinking = "low"\n')
    s = load_settings(cfg, environ={"HORDE_RESET_CAP": "3", "HORDE_THINKING": "high"})
    assert (s.gateway.model, s.supervisor.reset_cap, s.gateway.thinking) == ("openai/a", 3, "high")
    s = load_settings(cfg, environ={"HORDE_RESET_CAP": "3"}, overrides={"reset_cap": 1})
    assert s.supervisor.reset_cap == 1


def test_reference_on_off_booleans() -> None:
    s = load_settings(environ={"HORDE_DELIVERABLE": "off", "HORDE_ALLOW_UNVERIFIED": "1"})
    assert s.supervisor.deliverable is False and s.supervisor.allow_unverified is True


def test_unknown_config_key_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[horde]\nreset_kap = 5\n")
    with pytest.raises(SettingsError, match="unknown key 'reset_kap'"):
        load_settings(cfg, environ={})


def test_bad_env_value_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="HORDE_MAX_COST_USD: max_cost_usd"):
        load_settings(environ={"HORDE_MAX_COST_USD": "lots"})


def test_bad_toml_is_one_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[horde\n")
    with pytest.raises(SettingsError, match="cannot parse"):
        load_settings(cfg, environ={})


@pytest.mark.parametrize("word", ["flase", "disabled", "nope", "of", "2"])
def test_a_boolean_typo_is_an_error_naming_the_variable(word: str) -> None:
    """`HORDE_CLEANUP=flase` used to read as on (anything but off/0/false/no was on)."""
    with pytest.raises(SettingsError, match="HORDE_CLEANUP: cleanup"):
        load_settings(environ={"HORDE_CLEANUP": word})


@pytest.mark.parametrize(
    ("word", "value"),
    [
        ("on", True),
        ("OFF", False),
        (" no ", False),
        ("Yes", True),
        ("1", True),
        ("0", False),
        ("true", True),
        ("False", False),
    ],
)
def test_boolean_spellings_people_use_are_read(word: str, value: bool) -> None:
    s = load_settings(environ={"HORDE_SANDBOX_NETWORK": word, "HORDE_POSTMORTEM": word})
    assert s.sandboxing.sandbox_network is value and s.supervisor.postmortem is value


def test_run_refuses_a_boolean_typo_at_start_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_CLEANUP="flase", HORDE_MODEL="openai/stub")
    r = subprocess.run(
        cli_argv("run", "--headless", "2", "audit app.py"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "HORDE_CLEANUP" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".horde" / "runs").exists()


def test_member_refuses_a_sandbox_network_typo() -> None:
    """The member reads its own HORDE_SANDBOX_NETWORK: a typo there must not mean "on"."""
    from horde_tui.member.config import MemberConfigError, load_member_config

    env = {
        "HORDE_MEMBER": "member-1",
        "HORDE_DIR": "/tmp/.horde",
        "HORDE_RUN": "r1",
        "HORDE_GATEWAY_URL": "http://127.0.0.1:9",
        "HORDE_GATEWAY_TOKEN": "t",
    }
    assert load_member_config({**env, "HORDE_SANDBOX_NETWORK": "Off"}).sandbox.network is False
    assert load_member_config(env).sandbox.network is True
    # the supervisor's refusal, word for word: the member validates with the same model
    with pytest.raises(MemberConfigError, match=r"HORDE_SANDBOX_NETWORK: .*\(got 'flase'\)"):
        load_member_config({**env, "HORDE_SANDBOX_NETWORK": "flase"})


def test_a_member_reads_its_settings_with_the_model_but_never_a_config_file() -> None:
    """A member validates its part of the settings (`load_part`), so it imports the
    model; reading a config file is the supervisor's, so never the TOML reader."""
    code = (
        "import sys; import horde_tui.member.__main__; "
        "print([m for m in ('horde_tui.common.settings', 'tomllib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['horde_tui.common.settings']"


def _spellings(value: object) -> list[str]:
    """How a default's literal may be written in Python source: `600_000`, `600000`,
    `600.0`; `True`; `"auto"`. Empty and unset defaults are too common to trace."""
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, int | float):
        number = float(value)
        whole = int(number)
        if number != whole:
            return [repr(number)]
        return sorted({str(whole), f"{whole:_}", f"{whole}.0", f"{whole:_}.0"})
    if isinstance(value, str) and value:
        return [f'"{value}"', f"'{value}'"]
    return []


def restated_defaults(package: Path) -> list[str]:
    """Lines outside `settings.py` that put a setting's default literal next to its name
    (the field, its `HORDE_*` variable, or an `_ms` field's `_s` in seconds): a second
    copy of a default that can drift from the model's."""
    from horde_tui.common.settings import SETTING_FIELDS, env_name

    traces: list[re.Pattern[str]] = []
    for name, info in SETTING_FIELDS.items():
        default = info.get_default(call_default_factory=True)
        named = [(name, default), (env_name(name), default)]
        if name.endswith("_ms") and isinstance(default, int) and not isinstance(default, bool):
            named.append((name[: -len("_ms")] + "_s", default / 1000))
        for word, value in named:
            for spelling in _spellings(value):
                w, v = re.escape(word), rf"{re.escape(spelling)}(?![\w.])"
                # as a field's or parameter's default (`name: int = 8`, `name=8`), or as
                # the fallback of a lookup (`get("HORDE_X", 8)`, `x or 8`, `... else 8`)
                traces.append(re.compile(rf"\b{w}\b(\s*:[^=\n]*)?\s*=\s*{v}"))
                traces.append(re.compile(rf"\b{w}\b.*(,|\bor|\belse)\s*{v}"))
    anywhere = re.compile("|".join(f"(?:{trace.pattern})" for trace in traces))
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "settings.py" and path.parent.name == "common":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if anywhere.search(line):
                found.append(f"{path.relative_to(package.parent)}:{number}: {line.strip()}")
    return found


def test_each_default_is_written_once() -> None:
    """A default lives in the settings model alone: the gateway, the member and the
    supervisor read it from there, never from a literal of their own."""
    package = REPO / "horde_tui"
    found = restated_defaults(package)
    assert not found, "defaults restated outside settings.py:\n" + "\n".join(found)


def test_a_restated_default_is_found(tmp_path: Path) -> None:
    """The scan above can fail: a copy of `remind_ms`'s default, in any spelling, is found."""
    package = tmp_path / "horde_tui"
    package.mkdir()
    (package / "config.py").write_text(
        "remind_calls: int = 3\n"  # not the default: fine
        "remind_ms: int = 600_000\n"
        'x = env.get("HORDE_MAX_TURNS", 200)\n'
        "retry_after_max_s: float = 60.0\n"
        'mode = env.get("HORDE_SANDBOX") or "auto"\n'
    )
    found = restated_defaults(package)
    assert [line.split(":")[1] for line in found] == ["2", "3", "4", "5"], found


MEMBER_ENV = {
    "HORDE_MEMBER": "member-1",
    "HORDE_DIR": "/tmp/.horde",
    "HORDE_RUN": "r1",
    "HORDE_GATEWAY_URL": "http://127.0.0.1:9",
    "HORDE_GATEWAY_TOKEN": "t",
}


@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("HORDE_MAX_TURNS", "0", "greater than or equal to 1"),
        ("HORDE_INBOX_TURNS", "-3", "greater than or equal to 0"),
        ("HORDE_REQUEST_TIMEOUT_S", "soon", "valid integer"),
    ],
)
def test_a_member_refuses_what_the_supervisor_refuses(variable: str, value: str, rule: str) -> None:
    """The member validates its part with the supervisor's model: a value the settings
    refuse is refused in the member too, in the same line, never clamped or defaulted."""
    from horde_tui.member.config import MemberConfigError, load_member_config

    with pytest.raises(SettingsError) as supervisor:
        load_settings(environ={variable: value})
    with pytest.raises(MemberConfigError) as member:
        load_member_config({**MEMBER_ENV, variable: value})
    assert str(member.value) == str(supervisor.value)
    assert str(member.value).startswith(f"{variable}: ") and rule in str(member.value)


def test_the_gateway_validates_its_own_part_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway reads the gateway's settings: a bad supervisor variable is not its
    concern, a bad gateway one stops it with the settings' line."""
    from horde_tui.gateway.__main__ import build_config, parse_args

    for name in [n for n in os.environ if n.startswith("HORDE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HORDE_MODEL", "openai/x")
    monkeypatch.setenv("HORDE_RESET_CAP", "many")
    monkeypatch.setenv("HORDE_MAX_IN_FLIGHT", "3")
    config = build_config(parse_args([]), "token")
    assert (config.model, config.settings.max_in_flight) == ("openai/x", 3)
    monkeypatch.setenv("HORDE_MAX_IN_FLIGHT", "0")
    with pytest.raises(SettingsError, match=r"^HORDE_MAX_IN_FLIGHT: max_in_flight: .*\(got '0'\)"):
        build_config(parse_args([]), "token")
