"""Settings precedence and errors: a typo must name the key, never fall back silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.common.settings import SettingsError, load_settings


def test_defaults_match_the_reference_table() -> None:
    s = load_settings(environ={})
    assert (s.canary_ms, s.stall_ms, s.reset_cap, s.remind_calls, s.inbox_turns) == (
        60_000,
        1_800_000,
        2,
        8,
        12,
    )
    assert s.deliverable and s.postmortem and not s.allow_unverified
    assert s.repair_ms is None and s.max_cost_usd is None


def test_precedence_config_then_env_then_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[horde]\nmodel = "openai/a"\nreset_cap = 5\nthinking = "low"\n')
    s = load_settings(cfg, environ={"HORDE_RESET_CAP": "3", "HORDE_THINKING": "high"})
    assert (s.model, s.reset_cap, s.thinking) == ("openai/a", 3, "high")
    s = load_settings(cfg, environ={"HORDE_RESET_CAP": "3"}, overrides={"reset_cap": 1})
    assert s.reset_cap == 1


def test_reference_on_off_booleans() -> None:
    s = load_settings(environ={"HORDE_DELIVERABLE": "off", "HORDE_ALLOW_UNVERIFIED": "1"})
    assert s.deliverable is False and s.allow_unverified is True


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
    assert s.sandbox_network is value and s.postmortem is value


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
    with pytest.raises(MemberConfigError, match="HORDE_SANDBOX_NETWORK='flase'"):
        load_member_config({**env, "HORDE_SANDBOX_NETWORK": "flase"})


def test_the_members_on_off_words_are_the_settings_words() -> None:
    """A member reads HORDE_SANDBOX_NETWORK with `inputs.parse_bool` (it must not import
    the settings model); it must accept and refuse exactly what pydantic's bool does."""
    from pydantic import TypeAdapter, ValidationError

    from horde_tui.common.inputs import parse_bool

    words = ["1", "0", "on", "OFF", "t", "F", "true", "False", "y", "NO", "yes", " on "]
    words += ["flase", "disabled", "nope", "2", "", "enable", "oui", "tru"]
    adapter = TypeAdapter(bool)
    for word in words:
        try:
            expected: bool | None = adapter.validate_python(word.strip())
        except ValidationError:
            expected = None
        assert parse_bool(word) is expected, word


def test_a_member_imports_neither_the_settings_model_nor_its_toml_reader() -> None:
    code = (
        "import sys; import horde_tui.member.__main__; "
        "print([m for m in ('horde_tui.common.settings', 'tomllib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
