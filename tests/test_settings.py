"""Settings precedence and errors: a typo must name the key, never fall back silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from horde_tui.settings import SettingsError, load_settings


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
