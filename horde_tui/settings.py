"""Run settings: defaults < `.horde/config.toml` < `HORDE_*` environment < CLI flags.

One pydantic model holds every knob of the reference's configuration table, so the
supervisor, the gateway and the member read the same names. A config file key or an
environment value that does not fit is an error that names the key: a typo in a budget
must never silently fall back to "unlimited".
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from horde_tui.inputs import BOOL_WORDS


class SettingsError(ValueError):
    """A setting could not be read; the message names the key and where it came from.

    `key` is the refused setting (None when the file itself is unreadable), so the launch
    form can put the line under its field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class Settings(BaseModel):
    """Everything a run can be configured with. Field `x_y` is env `HORDE_X_Y`."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model: str | None = Field(default=None, description="any litellm model string")
    thinking: Literal["off", "low", "medium", "high"] = "off"
    api_base: str | None = None
    api_key: str | None = None
    tool_protocol: Literal["auto", "native", "json"] = "auto"
    max_cost_usd: float | None = Field(default=None, gt=0)
    retry_after_max_ms: int = Field(
        default=60_000, ge=0, description="gateway: longest provider retry-after honoured"
    )
    max_minutes: float | None = Field(default=None, gt=0)
    canary_ms: int = Field(default=60_000, ge=1)
    stall_ms: int = Field(default=1_800_000, ge=0, description="0 disables stall resets")
    reset_cap: int = Field(default=2, ge=0)
    swarm_stagger_ms: int = Field(default=5_000, ge=0)
    planner_ms: int = Field(default=300_000, ge=1)
    active_grace_ms: int = Field(default=15_000, ge=0)
    solved_confirm_ms: int = Field(default=120_000, ge=0)
    solved_stop_ms: int = Field(default=30_000, ge=0)
    allow_unverified: bool = False
    repair_rounds: int = Field(default=4, ge=0, le=6)
    repair_ms: int | None = Field(default=None, ge=0, description="unset: demand-sized")
    repair_tokens: int | None = Field(default=None, ge=0, description="unset: demand-sized")
    repair_min_tokens: int = Field(default=40_000, ge=0)
    repair_min_ms: int = Field(default=60_000, ge=0)
    repair_turns: int = Field(default=40, ge=1)
    deliverable: bool = True
    postmortem: bool = True
    postmortem_ms: int = Field(default=300_000, ge=1)
    cleanup: bool = True
    remind_calls: int = Field(default=8, ge=0, description="0 disables")
    remind_ms: int = Field(default=600_000, ge=0, description="0 disables")
    inbox_turns: int = Field(default=12, ge=0)
    continue_cooldown_ms: int = Field(default=60_000, ge=0)
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        default="auto", description="member commands in bubblewrap: auto uses it when present"
    )
    sandbox_network: bool = Field(default=True, description="off: commands get loopback only")
    sandbox_env: list[str] = Field(
        default_factory=list,
        description="extra environment variables member commands may see (HORDE_SANDBOX_ENV: A,B)",
    )


THINKING_LEVELS: tuple[str, ...] = get_args(Settings.model_fields["thinking"].annotation)
"""The thinking levels `Settings` accepts: what `run`, the gateway and the launch form
offer, so none of them can drift from the model."""


ENV_PREFIX = "HORDE_"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        raw = environ.get(env_name(name))
        if raw is None or raw == "":
            continue
        # Booleans go to pydantic as text: it reads on/off (the reference's spelling,
        # HORDE_DELIVERABLE=off), yes/no, true/false and 1/0, and refuses the rest, so
        # HORDE_CLEANUP=flase is an error naming the variable, not a silent "on".
        if info.annotation == list[str]:
            values[name] = raw.replace(",", " ").split()
        else:
            values[name] = raw.strip()
    return values


def read_config_file(path: Path) -> dict[str, Any]:
    """The `[horde]` table (or the top level) of a TOML config; unknown keys are errors."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot parse: {exc}") from None
    table = data.get("horde", data)
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [horde] must be a table")
    known = set(Settings.model_fields)
    for key in table:
        if key not in known and key != "horde":
            raise SettingsError(
                f"{path}: unknown key {key!r}; known keys: {', '.join(sorted(known))}"
            )
    return {k: v for k, v in table.items() if k in known}


def _validate(values: dict[str, Any], sources: dict[str, str]) -> Settings:
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err.get("loc") else "?"
        where = sources.get(key, "settings")
        hint = f"; use {BOOL_WORDS}" if err["type"] == "bool_parsing" else ""
        raise SettingsError(
            f"{where}: {key}: {err['msg']} (got {err.get('input')!r}){hint}", key
        ) from None


def load_settings(
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge defaults, the config file, `HORDE_*` variables and CLI overrides, in that order."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if config_path is not None:
        for key, value in read_config_file(config_path).items():
            values[key], sources[key] = value, str(config_path)
    for key, value in _from_env(env).items():
        values[key], sources[key] = value, env_name(key)
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key], sources[key] = value, f"--{key.replace('_', '-')}"
    return _validate(values, sources)
