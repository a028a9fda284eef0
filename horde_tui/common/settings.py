"""Run settings: defaults < `.horde/config.toml` < `HORDE_*` environment < CLI flags.

One pydantic model holds every knob of the reference's configuration table, in one part
per process (gateway, supervisor, repair, swarm, member, sandboxing, serve), so each
default is written once: the supervisor reads the whole, and a child process validates
its own part from its `HORDE_*` variables (`load_part`) with the same model. A config file key or an
environment value that does not fit is an error that names the key: a typo in a budget
must never silently fall back to "unlimited".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from horde_tui.common.inputs import BOOL_WORDS


class SettingsError(ValueError):
    """A setting could not be read; the message names the key and where it came from.

    `key` is the refused setting (None when the file itself is unreadable), so the launch
    form can put the line under its field."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


M = TypeVar("M", bound=BaseModel)
_STRICT = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)
"""Every part refuses unknown keys; each builds its validator on first use, so a member
(which validates two parts) never pays for the rest."""


class GatewaySettings(BaseModel):
    """The gateway's settings: `python -m horde_tui.gateway` validates them from its
    `HORDE_*` variables (the supervisor passes each as one) and its flags."""

    model_config = _STRICT

    model: str | None = Field(
        default=None,
        description="gateway: the members' model, any litellm model string (or aihorde/<name>).",
    )
    thinking: Literal["off", "low", "medium", "high"] = Field(
        default="off", description="gateway: reasoning effort, where the model supports it."
    )
    api_base: str | None = Field(
        default=None,
        description="gateway: an OpenAI-compatible endpoint to send the model calls to.",
    )
    api_key: str | None = Field(
        default=None,
        description="gateway only: the provider key (prefer the provider's own variable; never written down).",
    )
    tool_protocol: Literal["auto", "native", "json"] = Field(
        default="auto",
        description="gateway: native tool calls, json for text-only models, or auto to pick.",
    )
    member_models: dict[str, str] = Field(
        default_factory=dict,
        description="gateway: a model for one member, MEMBER=MODEL (variable: comma-separated; a preset's role models come after these).",
    )
    compact_tokens: int | None = Field(
        default=None,
        ge=0,
        description="gateway, json protocol: fit each prompt in N tokens for small-context models.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="gateway and supervisor: a clean stop once the run has spent this many dollars.",
    )
    aihorde_deadline_s: int = Field(
        default=360,
        ge=1,
        description="gateway: the longest wait for one AI Horde job, then it is cancelled.",
    )
    allow_downgrade: bool = Field(
        default=False,
        description=(
            "gateway: AI Horde lowers a request's max_length to its kudos-upfront cap "
            "instead of refusing it (sent as allow_downgrade)."
        ),
    )
    retry_after_max_ms: int = Field(
        default=60_000, ge=0, description="gateway: the longest provider retry-after it honours."
    )
    gateway_backoff_ms: int = Field(
        default=500,
        ge=0,
        description="gateway: the first wait before retrying a failed model call.",
    )
    max_in_flight: int = Field(
        default=32,
        ge=1,
        description="gateway: the most model calls in flight to one provider (an eval's parallel runs share it).",
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


class SupervisorSettings(BaseModel):
    """The supervisor's settings: deadlines, stalls, resets, the answer's confirmation and
    what the end of a run writes."""

    model_config = _STRICT

    max_minutes: float | None = Field(
        default=None, gt=0, description="a clean stop at this wall-clock deadline, in minutes."
    )
    canary_ms: int = Field(
        default=60_000,
        ge=1,
        description="the time member-1 has to answer before its start is retried.",
    )
    stall_ms: int = Field(
        default=1_800_000,
        ge=0,
        description=(
            "a member with no ledger write for this long is reset as `no-ledger-progress` "
            "(time held back by a provider's rate limit or a person's approval not counted; "
            "0 disables)."
        ),
    )
    reset_cap: int = Field(default=2, ge=0, description="how many times one member may be reset.")
    active_grace_ms: int = Field(
        default=15_000,
        ge=0,
        description="how much longer a clean stop waits for a member still working.",
    )
    solved_confirm_ms: int = Field(
        default=120_000,
        ge=0,
        description="how long a proposed answer waits for a second member to validate it.",
    )
    solved_stop_ms: int = Field(
        default=30_000,
        ge=0,
        description="the wind-down window for an answer that lands during a stop.",
    )
    allow_unverified: bool = Field(
        default=False, description="accept a validated answer even with unverified findings."
    )
    deliverable: bool = Field(
        default=True,
        description="write DELIVERABLE.md with a synthesis helper at the end (off: none).",
    )
    postmortem: bool = Field(
        default=True,
        description="write POSTMORTEM.md with a post-mortem helper at the end (off: none).",
    )
    postmortem_ms: int = Field(
        default=300_000, ge=1, description="the post-mortem helper's timeout."
    )
    cleanup: bool = Field(
        default=True, description="run the resource cleanup commands at the end (off: none)."
    )
    continue_cooldown_ms: int = Field(
        default=60_000,
        ge=0,
        description="with --until-stop, the least time between one member's sessions.",
    )
    preset: str | None = Field(
        default=None,
        description="role presets: give the members personas (`horde-tui presets` lists them).",
    )
    lessons: bool = Field(
        default=False,
        description=(
            "give the members the top lessons of .horde/LESSONS.md (written by "
            "`horde-tui lessons` from earlier runs' post-mortems) in their brief."
        ),
    )


class RepairSettings(BaseModel):
    """The repair rounds after discovery: how many, and each attempt's share."""

    model_config = _STRICT

    repair_rounds: int = Field(
        default=4, ge=0, le=6, description="repair rounds after discovery (0 disables repair)."
    )
    repair_ms: int | None = Field(
        default=None, ge=0, description="the total repair time (unset: sized by the work left)."
    )
    repair_tokens: int | None = Field(
        default=None, ge=0, description="the total repair tokens (unset: sized by the work left)."
    )
    repair_min_tokens: int = Field(
        default=40_000, ge=0, description="the token floor of one repair attempt."
    )
    repair_min_ms: int = Field(
        default=60_000, ge=0, description="the time floor of one repair attempt."
    )
    repair_turns: int = Field(default=40, ge=1, description="the turn cap of one repair attempt.")


class SwarmSettings(BaseModel):
    """A swarm's settings: the stagger between hordes and its planner's timeout."""

    model_config = _STRICT

    swarm_stagger_ms: int = Field(
        default=5_000,
        ge=0,
        description="the pause between one horde's start and the next in a swarm.",
    )
    planner_ms: int = Field(
        default=300_000, ge=1, description="the swarm planner helper's timeout."
    )


class MemberSettings(BaseModel):
    """A member's settings: the member process validates them from its `HORDE_*`
    variables (`member/config.py`), so its defaults are these."""

    model_config = _STRICT

    remind_calls: int = Field(
        default=8, ge=0, description="member: tool calls between goal reminders (0 disables)."
    )
    remind_ms: int = Field(
        default=600_000, ge=0, description="member: time between goal reminders (0 disables)."
    )
    inbox_turns: int = Field(
        default=12,
        ge=0,
        description="member: extra turns a session may take to read messages that arrived late.",
    )
    max_turns: int = Field(
        default=200,
        ge=1,
        description="member: the turn cap of a session (repair attempts use repair_turns).",
    )
    request_timeout_s: int = Field(
        default=900, ge=1, description="member: the longest wait for one model call, in seconds."
    )
    confirm: bool = Field(
        default=False,
        description="member: every bash command waits for a person (the app, the terminal, or horde-tui approve/refuse).",
    )


class SandboxSettings(BaseModel):
    """How members' commands are confined: the supervisor resolves it for the run, and a
    member reads it back from its `HORDE_SANDBOX*` variables."""

    model_config = _STRICT

    sandbox: Literal["auto", "bwrap", "off"] = Field(
        default="auto",
        description="member: run commands in bubblewrap (auto: when it works, bwrap: required, off: never).",
    )
    sandbox_network: bool = Field(
        default=True, description="member: off gives commands loopback networking only."
    )
    sandbox_git_write: bool = Field(
        default=False,
        description="member: let sandboxed commands write .git/ (commits); off keeps it read-only, since a hook or core.fsmonitor written there runs outside the sandbox at your next git command.",
    )
    sandbox_env: list[str] = Field(
        default_factory=list,
        description="member: extra variables that commands may see (variable: A,B).",
    )


class ServeSettings(BaseModel):
    """`horde-tui serve`'s settings (no process of a run reads them)."""

    model_config = _STRICT

    serve_port: int = Field(
        default=7433,
        ge=0,
        le=65535,
        description="serve: the port `horde-tui serve` listens on when --port names none (0: any free port).",
    )


class Settings(BaseModel):
    """Everything a run can be configured with, one part per process that reads it. Field
    `x_y` of a part is env `HORDE_X_Y` and key `x_y` in `.horde/config.toml` (the keys stay
    flat: a part's name is never spelled by a user); each description says which process
    uses it (no prefix: the supervisor), and is the help text `horde-tui run --help` lists."""

    model_config = _STRICT

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    supervisor: SupervisorSettings = Field(default_factory=SupervisorSettings)
    repair: RepairSettings = Field(default_factory=RepairSettings)
    swarm: SwarmSettings = Field(default_factory=SwarmSettings)
    member: MemberSettings = Field(default_factory=MemberSettings)
    sandboxing: SandboxSettings = Field(default_factory=SandboxSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @model_validator(mode="before")
    @classmethod
    def _into_parts(cls, data: Any) -> Any:
        """Flat keys (the config file's, a run manifest's, `Settings(model=...)`) go into
        their part, so users and records never spell a part; unknown keys stay where
        they are, for `extra="forbid"` to refuse."""
        if not isinstance(data, dict):
            return data
        nested = {k: v for k, v in data.items() if k not in PART_OF}
        for key, value in data.items():
            if key in PART_OF:
                part = nested.get(PART_OF[key], {})
                if isinstance(part, BaseModel):
                    part = part.model_dump()
                nested[PART_OF[key]] = {**part, key: value}
        return nested


PARTS: dict[str, type[BaseModel]] = {
    part: cast(type[BaseModel], info.annotation) for part, info in Settings.model_fields.items()
}
"""Each part of `Settings` by its name (`settings.gateway`, ...)."""
SETTING_FIELDS: dict[str, FieldInfo] = {
    name: info for model in PARTS.values() for name, info in model.model_fields.items()
}
"""Every setting by its flat name: the config key, and `HORDE_<NAME>` (names are unique
across the parts, so users never spell a part)."""
PART_OF: dict[str, str] = {
    name: part for part, model in PARTS.items() for name in model.model_fields
}
"""The part that holds each setting."""


def setting_value(settings: Settings, name: str) -> Any:
    """Setting `name`'s value in `settings`, found by its flat name."""
    return getattr(getattr(settings, PART_OF[name]), name)


def settings_record(settings: BaseModel) -> dict[str, Any]:
    """Every setting of `settings` (the whole or a part) but the secret ones, under its
    flat name: what a run's manifest keeps (`resume`, `fork` and the views read it back,
    and `Settings` validates it again) and the gateway's `gateway.json`."""
    record: dict[str, Any] = {}
    for name, value in settings:
        if isinstance(value, BaseModel):
            record.update(settings_record(value))
        elif name not in SECRET_SETTINGS:
            record[name] = value
    return record


def literal_choices(name: str) -> tuple[str, ...] | None:
    """The values setting `name` accepts when it is one of a fixed few (a `Literal`),
    else None: what every flag, the config check and completion offer, so none of them
    can drift from the model."""
    annotation = SETTING_FIELDS[name].annotation
    return get_args(annotation) if get_origin(annotation) is Literal else None


THINKING_LEVELS: tuple[str, ...] = literal_choices("thinking") or ()
"""The thinking levels `Settings` accepts: what `run`, the gateway and the launch form offer."""
TOOL_PROTOCOLS: tuple[str, ...] = literal_choices("tool_protocol") or ()
"""The tool protocols `Settings` accepts (`auto`, its default, among them)."""


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
    "preset": "--preset",
    "lessons": "--lessons",
}
"""The settings `run` and `plan` take as flags, and their spelling: the parser, the
detached command line and the error lines all read it."""
SWITCHES = frozenset({"confirm", "lessons"})
"""Settings whose flag takes no value: given, it turns the setting on."""
SECRET_SETTINGS = frozenset({"api_key"})
"""Settings never printed (`horde-tui config --effective` says only that one is set)."""


@dataclass(frozen=True)
class ProcessVariable:
    """A `HORDE_*` variable that is not a setting: who a process is and where it works
    (set by the supervisor for its children, or by a person for `horde-tui tool`), or a
    debugging aid. Listed so the reference covers every variable the code reads;
    `read_in` names the modules that read or set it (a test checks they still do)."""

    name: str
    default: str
    description: str
    read_in: tuple[str, ...]
    set_by: Literal["you", "supervisor", "eval"] = "supervisor"


ENVIRONMENT: tuple[ProcessVariable, ...] = (
    ProcessVariable(
        "HORDE_DIR",
        "./.horde",
        "The .horde directory that `horde-tui tool` and a member write to.",
        ("horde_tui/store/paths.py", "horde_tui/member/config.py"),
        "you",
    ),
    ProcessVariable(
        "HORDE_RUN",
        "manual",
        "The run a `horde-tui tool` call writes to (created on demand).",
        ("horde_tui/commands/cli.py", "horde_tui/member/config.py"),
        "you",
    ),
    ProcessVariable(
        "HORDE_MEMBER",
        "user",
        "The actor a `horde-tui tool` call writes as (a lower-case name such as member-1).",
        ("horde_tui/commands/cli.py", "horde_tui/member/config.py"),
        "you",
    ),
    ProcessVariable(
        "HORDE_ROLE",
        "member",
        "The role of a `horde-tui tool` call's actor (member or verifier).",
        ("horde_tui/commands/cli.py", "horde_tui/member/config.py"),
        "you",
    ),
    ProcessVariable(
        "HORDE_DETACHED_LOG",
        "",
        "The log of a supervisor started in the background (`d`, a hang-up, --detach): its"
        " run records where to re-attach; kept out of the members' environment.",
        ("horde_tui/store/runs.py",),
    ),
    ProcessVariable(
        "HORDE_LOCK_TIMEOUT_S",
        "10",
        "Seconds a writer waits for the .horde/.lock before it gives up with the holder named.",
        ("horde_tui/store/lock.py",),
        "you",
    ),
    ProcessVariable(
        "HORDE_BWRAP",
        "bwrap",
        "The bubblewrap to run member commands in (a name on PATH or a path); a missing one runs as without bubblewrap.",
        ("horde_tui/sandbox/policy.py",),
        "you",
    ),
    ProcessVariable(
        "HORDE_SLIRP4NETNS",
        "slirp4netns",
        "The slirp4netns that gives a sandboxed command with the network on a network of its own (a name on PATH or a path); a missing one shares this machine's network, and the run says so.",
        ("horde_tui/sandbox/netns.py",),
        "you",
    ),
    ProcessVariable(
        "HORDE_SECRETS_FD",
        "unset",
        "The pipe on which the gateway receives the provider key and its token at start (never in its environment).",
        ("horde_tui/common/keypipe.py",),
    ),
    ProcessVariable(
        "HORDE_LOCK_TRACE",
        "unset",
        "A file that gets one line per lock release (pid, actor, wait, hold): a debugging aid.",
        ("horde_tui/store/lock.py",),
        "you",
    ),
    ProcessVariable(
        "HORDE_SHARED_LIMIT_DIR",
        "unset",
        "A folder through which the gateways of runs started apart keep one in-flight limit per provider.",
        ("horde_tui/gateway/limiter.py",),
        "you",
    ),
    ProcessVariable(
        "HORDE_SHARED_GATEWAY_URL",
        "unset",
        "A shared gateway (`horde-tui eval` starts one) that a run joins instead of starting its own.",
        ("horde_tui/supervisor/processes.py",),
        "eval",
    ),
    ProcessVariable(
        "HORDE_SHARED_GATEWAY_TOKEN",
        "unset",
        "The shared gateway's own token, with which a run joins and leaves it (never given to members).",
        ("horde_tui/supervisor/processes.py",),
        "eval",
    ),
    ProcessVariable(
        "HORDE_NAME",
        "HORDE_MEMBER",
        "The member's name (member-N), read before HORDE_MEMBER.",
        ("horde_tui/member/config.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_ATTEMPT",
        "1",
        "The number of the member's session (a reset or repair starts the next).",
        ("horde_tui/member/config.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_LAYER",
        "unset",
        "Plan mode: the member's layers, separated by semicolons.",
        ("horde_tui/member/config.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_BRIEF",
        "unset",
        "Extra instruction appended to a session's first message (what a helper must produce).",
        ("horde_tui/member/config.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_TOOLS",
        "all",
        "readonly makes a read-only helper session (synthesis, post-mortem, planner, merge, "
        "the ask analyst): read, grep and the horde tool's reads.",
        ("horde_tui/member/config.py", "horde_tui/supervisor/finalize.py"),
    ),
    ProcessVariable(
        "HORDE_STREAM",
        "unset",
        "1 streams each answer and tells its text as it arrives (the ask analyst).",
        ("horde_tui/member/config.py", "horde_tui/launch/ask.py"),
    ),
    ProcessVariable(
        "HORDE_PARENT_PID",
        "unset",
        "The supervisor's pid: a member or gateway whose parent is gone stops itself.",
        ("horde_tui/member/config.py", "horde_tui/common/watchdog.py"),
    ),
    ProcessVariable(
        "HORDE_MCP_TOKEN",
        "generated into runs/<id>/mcp-token",
        "The bearer token of `horde-tui mcp --http` (16 characters or more).",
        ("horde_tui/mcp/join.py", "horde_tui/mcp/remote.py"),
    ),
    ProcessVariable(
        "HORDE_MAX_TOKENS",
        "0 (none)",
        "A repair attempt's token share, kept by the member before each model call.",
        ("horde_tui/member/config.py", "horde_tui/supervisor/repair.py"),
    ),
    ProcessVariable(
        "HORDE_RESUME_SESSION",
        "unset",
        "A transcript a member carries on instead of starting a session (horde-tui resume).",
        ("horde_tui/member/config.py",),
    ),
    ProcessVariable(
        "HORDE_SESSIONS",
        "the run's sessions/",
        "Where a session's transcript goes (a swarm's helpers keep theirs in the swarm).",
        ("horde_tui/member/config.py", "horde_tui/supervisor/swarm.py"),
    ),
    ProcessVariable(
        "HORDE_TASK_FILE",
        "the run's TASK.md",
        "The task document a session reads (a swarm's helpers read SWARM.md).",
        ("horde_tui/member/config.py", "horde_tui/supervisor/swarm.py"),
    ),
    ProcessVariable(
        "HORDE_GATEWAY_URL",
        "unset",
        "The run's model gateway on 127.0.0.1, the only way a member reaches a model.",
        ("horde_tui/member/config.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_GATEWAY_TOKEN",
        "unset",
        "The gateway's per-run bearer token (never passed to member commands).",
        ("horde_tui/member/config.py", "horde_tui/gateway/__main__.py"),
    ),
    ProcessVariable(
        "HORDE_HORDE",
        "unset",
        "In a swarm: which horde (hN) a member's commands belong to.",
        ("horde_tui/sandbox/shell.py", "horde_tui/supervisor/run.py"),
    ),
    ProcessVariable(
        "HORDE_SIBLINGS",
        "unset",
        "In a swarm: the other hordes' directories as a JSON object, read but never written.",
        ("horde_tui/member/config.py", "horde_tui/commands/cli.py"),
    ),
)
"""Every `HORDE_*` variable that is not a `Settings` field (those are `env_name(field)`)."""


ENV_NAMES = {"serve_port": "HORDE_DASHBOARD_PORT"}
"""Settings whose variable keeps the reference's name rather than the field's."""


def env_name(field: str) -> str:
    return ENV_NAMES.get(field) or ENV_PREFIX + field.upper()


def flag_name(field: str) -> str:
    return FLAGS.get(field) or f"--{field.replace('_', '-')}"


def setting_text(value: object) -> str:
    """A setting's value as its `HORDE_*` variable spells it (`load_settings` reads it
    back): lists comma-separated, member models as MEMBER=MODEL pairs, booleans on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def default_value(name: str) -> Any:
    """Setting `name`'s default, as the model has it (the one place it is written)."""
    return SETTING_FIELDS[name].get_default(call_default_factory=True)


def default_text(name: str) -> str:
    """A setting's default as the reference shows it: unset, on/off, or the value."""
    default = default_value(name)
    return "unset" if default in (None, [], {}) else setting_text(default)


def settings_help() -> str:
    """Every setting as `horde-tui run --help` lists it: config key, variable, flag,
    default, and what it does (the model's own descriptions, so the list cannot drift)."""
    lines = [
        "settings: flag > HORDE_* variable > .horde/config.toml key ([horde] table) > default "
        "(`horde-tui config --effective`: each value here and where it came from)",
        "  key / variable / flag: default; what it does",
    ]
    for name, info in SETTING_FIELDS.items():
        flag = f" / {FLAGS[name]}" if name in FLAGS else ""
        lines.append(f"  {name} / {env_name(name)}{flag}: {default_text(name)}; {info.description}")
    return "\n".join(lines)


def _from_env(environ: Mapping[str, str], names: Iterable[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in names:
        info = SETTING_FIELDS[name]
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
    import tomllib  # here: a member imports this module and never reads a config file

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot parse: {exc}") from None
    table = data.get("horde", data)
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [horde] must be a table")
    known = set(SETTING_FIELDS)
    for key in table:
        if key not in known and key != "horde":
            raise SettingsError(
                f"{path}: unknown key {key!r}; known keys: {', '.join(sorted(known))}"
            )
    return {k: v for k, v in table.items() if k in known}


@dataclass(frozen=True)
class Source:
    """Where a setting's value came from: `horde-tui config --effective` shows it and an
    error line names it (`where`: the flag, the variable or the file)."""

    kind: Literal["flag", "variable", "file", "default"]
    where: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.where}" if self.where else self.kind


DEFAULT_SOURCE = Source("default")


def _validate(model: type[M], values: dict[str, Any], sources: Mapping[str, Source]) -> M:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        # a part's error is at (part, key); the setting is the key users know
        key = next((str(loc) for loc in err.get("loc", ()) if loc in SETTING_FIELDS), "?")
        source = sources.get(key)
        where = source.where if source is not None else "settings"
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
    return load_settings_with_sources(config_path, environ, overrides)[0]


def load_settings_with_sources(
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Settings, dict[str, Source]]:
    """`load_settings`, and for every field where its value came from (the last of
    default < file < variable < flag that set it)."""
    file = read_config_file(config_path) if config_path is not None else {}
    values, sources = _gather(SETTING_FIELDS, file, str(config_path), environ, overrides)
    settings = _validate(Settings, values, sources)
    return settings, {name: sources.get(name, DEFAULT_SOURCE) for name in SETTING_FIELDS}


def load_part(
    model: type[M],
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> M:
    """One part of the settings (`GatewaySettings`, `MemberSettings`, ...) from the
    `HORDE_*` variables (and a process's own flags): how a child process reads what the
    supervisor passed it, with the same model, so the same defaults and the same refusals."""
    values, sources = _gather(model.model_fields, {}, "", environ, overrides)
    return _validate(model, values, sources)


def _gather(
    names: Iterable[str],
    file: Mapping[str, Any],
    file_name: str,
    environ: Mapping[str, str] | None,
    overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Source]]:
    """The values of `names` that are set, the last of file < variable < flag winning,
    and where each came from."""
    env = os.environ if environ is None else environ
    names = list(names)
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key, value in file.items():
        values[key], sources[key] = value, Source("file", file_name)
    for key, value in _from_env(env, names).items():
        values[key], sources[key] = value, Source("variable", env_name(key))
    for key, value in (overrides or {}).items():
        if value is not None and key in names:
            values[key], sources[key] = value, Source("flag", flag_name(key))
    return values, sources
