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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from horde_tui.inputs import BOOL_WORDS


class SettingsError(ValueError):
    """A setting could not be read; the message names the key and where it came from.

    `key` is the refused setting (None when the file itself is unreadable), so the launch
    form can put the line under its field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class Settings(BaseModel):
    """Everything a run can be configured with. Field `x_y` is env `HORDE_X_Y` and key
    `x_y` in `.horde/config.toml`; each description says which process uses it (no
    prefix: the supervisor), and is the help text `horde-tui run --help` lists."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model: str | None = Field(default=None, description="gateway: any litellm model string")
    thinking: Literal["off", "low", "medium", "high"] = Field(
        default="off", description="gateway: reasoning effort where the model supports it"
    )
    api_base: str | None = Field(
        default=None, description="gateway: OpenAI-compatible endpoint for the model"
    )
    api_key: str | None = Field(
        default=None, description="gateway only: provider key (never written down)"
    )
    tool_protocol: Literal["auto", "native", "json"] = Field(
        default="auto", description="gateway: native tool calls, or json for text-only models"
    )
    member_models: dict[str, str] = Field(
        default_factory=dict,
        description="gateway: a model for one member, MEMBER=MODEL (env: comma-separated)",
    )
    compact_tokens: int | None = Field(
        default=None, ge=0, description="gateway, json protocol: fit prompts in N tokens"
    )
    max_cost_usd: float | None = Field(
        default=None, gt=0, description="gateway and supervisor: clean stop at this spend"
    )
    aihorde_deadline_s: int = Field(
        default=360, ge=1, description="gateway: longest wait for one AI Horde job (then cancelled)"
    )
    retry_after_max_ms: int = Field(
        default=60_000, ge=0, description="gateway: longest provider retry-after honoured"
    )
    gateway_backoff_ms: int = Field(
        default=500, ge=0, description="gateway: first wait before retrying a failed call"
    )
    max_in_flight: int = Field(
        default=32,
        ge=1,
        description="gateway: most model calls in flight to one provider (an eval's "
        "parallel runs share it)",
    )
    max_minutes: float | None = Field(
        default=None, gt=0, description="clean stop at this wall-clock deadline"
    )
    canary_ms: int = Field(
        default=60_000, ge=1, description="time for member-1 to answer before a retry"
    )
    stall_ms: int = Field(
        default=1_800_000, ge=0, description="reset a member with no ledger write; 0 disables"
    )
    reset_cap: int = Field(default=2, ge=0, description="resets per member")
    swarm_stagger_ms: int = Field(
        default=5_000, ge=0, description="pause between one horde's start and the next"
    )
    planner_ms: int = Field(default=300_000, ge=1, description="swarm planner helper timeout")
    active_grace_ms: int = Field(
        default=15_000, ge=0, description="clean-stop extension for a member still working"
    )
    solved_confirm_ms: int = Field(
        default=120_000, ge=0, description="wait for a second member to validate a solve"
    )
    solved_stop_ms: int = Field(
        default=30_000, ge=0, description="wind-down window for a solve landing at a stop"
    )
    allow_unverified: bool = Field(
        default=False, description="accept a validated answer with unverified findings"
    )
    repair_rounds: int = Field(
        default=4, ge=0, le=6, description="repair rounds after discovery (0 disables)"
    )
    repair_ms: int | None = Field(
        default=None, ge=0, description="total repair time (unset: demand-sized)"
    )
    repair_tokens: int | None = Field(
        default=None, ge=0, description="total repair tokens (unset: demand-sized)"
    )
    repair_min_tokens: int = Field(
        default=40_000, ge=0, description="token floor per repair attempt"
    )
    repair_min_ms: int = Field(default=60_000, ge=0, description="time floor per repair attempt")
    repair_turns: int = Field(default=40, ge=1, description="turn cap per repair attempt")
    deliverable: bool = Field(default=True, description="off: no synthesis helper")
    postmortem: bool = Field(default=True, description="off: no automatic post-mortem")
    postmortem_ms: int = Field(default=300_000, ge=1, description="post-mortem helper timeout")
    cleanup: bool = Field(default=True, description="off: no resource cleanup commands")
    continue_cooldown_ms: int = Field(
        default=60_000, ge=0, description="--until-stop: least time between a member's sessions"
    )
    remind_calls: int = Field(
        default=8, ge=0, description="member: tool calls between goal reminders; 0 disables"
    )
    remind_ms: int = Field(
        default=600_000, ge=0, description="member: time between goal reminders; 0 disables"
    )
    inbox_turns: int = Field(
        default=12, ge=0, description="member: extra turns a session may take to read messages"
    )
    max_turns: int = Field(
        default=200, ge=1, description="member: turn cap of a session (repair: repair_turns)"
    )
    request_timeout_s: int = Field(
        default=900, ge=1, description="member: longest wait for one model call, in seconds"
    )
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        default="auto",
        description="member: commands in bubblewrap; auto uses it when it works",
    )
    sandbox_network: bool = Field(
        default=True, description="member: off gives commands loopback only"
    )
    confirm: bool = Field(
        default=False,
        description="member: every bash command waits for a person (the app, the terminal, "
        "horde-tui approve/refuse)",
    )
    sandbox_env: list[str] = Field(
        default_factory=list,
        description="member: extra variables commands may see (env: A,B)",
    )

    @field_validator("member_models", mode="before")
    @classmethod
    def _member_pairs(cls, value: Any) -> Any:
        """`MEMBER=MODEL` pairs (the flag's, or the variable's comma-separated text) as
        the table a config file writes, so all three ways give one shape."""
        if isinstance(value, str):
            value = value.replace(",", " ").split()
        if not isinstance(value, list | tuple):
            return value
        pairs: dict[str, str] = {}
        for pair in value:
            name, sep, model = str(pair).partition("=")
            if not sep or not name.strip() or not model.strip():
                raise ValueError(f"expects MEMBER=MODEL, got {pair!r}")
            pairs[name.strip()] = model.strip()
        return pairs


THINKING_LEVELS: tuple[str, ...] = get_args(Settings.model_fields["thinking"].annotation)
"""The thinking levels `Settings` accepts: what `run`, the gateway and the launch form
offer, so none of them can drift from the model."""


ENV_PREFIX = "HORDE_"

FLAGS: dict[str, str] = {
    "model": "--model",
    "thinking": "--thinking",
    "api_base": "--api-base",
    "api_key": "--api-key",
    "tool_protocol": "--tool-protocol",
    "member_models": "--member-model",
    "compact_tokens": "--compact-tokens",
    "max_cost_usd": "--max-cost-usd",
    "max_minutes": "--max-minutes",
    "sandbox": "--sandbox",
    "confirm": "--confirm",
}
"""The settings `run` and `plan` take as flags, and their spelling: the parser, the
detached command line and the error lines all read it."""


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def flag_name(field: str) -> str:
    return FLAGS.get(field) or f"--{field.replace('_', '-')}"


def settings_help() -> str:
    """Every setting as `horde-tui run --help` lists it: config key, variable, flag,
    default, and what it does (the model's own descriptions, so the list cannot drift)."""
    lines = [
        "settings: flag > HORDE_* variable > .horde/config.toml key ([horde] table) > default",
        "  key / variable / flag: default; what it does",
    ]
    for name, info in Settings.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if isinstance(default, bool):
            shown = "on" if default else "off"
        else:
            shown = "unset" if default in (None, [], {}) else str(default)
        flag = f" / {FLAGS[name]}" if name in FLAGS else ""
        lines.append(f"  {name} / {env_name(name)}{flag}: {shown}; {info.description}")
    return "\n".join(lines)


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
            values[key], sources[key] = value, flag_name(key)
    return _validate(values, sources)
