"""A member's configuration, read from the environment its parent set.

The supervisor sets these on every child; a person can set them by hand to run one
member against a gateway (see `python -m horde_tui.member --help`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from horde_tui.common.inputs import whole_number
from horde_tui.common.settings import MemberSettings, SandboxSettings, SettingsError, load_part
from horde_tui.sandbox.policy import SandboxPolicy
from horde_tui.store.activity import heartbeat_path
from horde_tui.store.paths import ACTOR_NAME_RULE, HordePaths, shown, valid_actor_name
from horde_tui.store.siblings import parse_siblings

M = TypeVar("M", bound=BaseModel)


class MemberConfigError(ValueError):
    """A required variable is missing or malformed; the message names it."""


@dataclass(frozen=True)
class MemberConfig:
    name: str
    horde_dir: Path
    run: str
    role: str
    attempt: int
    parent_pid: int | None
    gateway_url: str
    gateway_token: str
    settings: MemberSettings = field(default_factory=MemberSettings)
    """The member's part of the run's settings (turn cap, reminders, request timeout,
    confirm mode), validated from its `HORDE_*` variables with the supervisor's model."""
    max_tokens: int = 0
    """The session's token share (`HORDE_MAX_TOKENS`, 0: none): a repair attempt's, kept
    before each call so a fast model cannot run past it between the supervisor's polls."""
    layer: str | None = None
    readonly: bool = False
    """Helpers (deliverable, post-mortem, the ask analyst) read only: `read`, `grep` and
    the horde tool's reads."""
    brief: str = ""
    """Extra instruction appended to the first message (what a helper must produce)."""
    stream: bool = False
    """Stream each answer and tell its text as it arrives (`delta` status lines,
    `HORDE_STREAM=1`): the ask analyst, whose answer a person watches being written."""
    resume_session: Path | None = None
    """A transcript to carry on instead of starting a session (`HORDE_RESUME_SESSION`):
    set by `horde-tui resume` for members whose supervisor stopped while they worked."""

    siblings: dict[str, Path] = field(default_factory=dict)
    """A swarm's other hordes (`h2` -> their horde directories), read but never written
    (`HORDE_SIBLINGS`, a JSON object)."""
    sessions_dir: Path | None = None
    """Where session transcripts go (`HORDE_SESSIONS`); default the run's `sessions/`.
    A swarm's planner and merge helpers keep theirs in the swarm directory."""
    task_file: Path | None = None
    """The task document (`HORDE_TASK_FILE`); default the run's TASK.md."""
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """How the member's commands are confined (`HORDE_SANDBOX`, `HORDE_SANDBOX_NETWORK`,
    `HORDE_SANDBOX_ENV`), as the supervisor resolved it for the run."""

    @property
    def workdir(self) -> Path:
        return HordePaths(self.horde_dir).workdir

    @property
    def run_dir(self) -> Path:
        return HordePaths(self.horde_dir).run_dir(self.run)

    @property
    def heartbeat(self) -> Path:
        """Touched on every ledger write: the supervisor's stall detector reads its mtime."""
        return heartbeat_path(self.run_dir, self.name)


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise MemberConfigError(f"{key}={raw!r} is not a whole number") from None


def _required(env: Mapping[str, str], key: str) -> str:
    value = env.get(key, "").strip()
    if not value:
        raise MemberConfigError(f"{key} is not set; the supervisor sets it for each member")
    return value


def load_member_config(env: Mapping[str, str] | None = None) -> MemberConfig:
    e = os.environ if env is None else env
    key = "HORDE_NAME" if e.get("HORDE_NAME", "").strip() else "HORDE_MEMBER"
    name = e.get("HORDE_NAME", "").strip() or _required(e, "HORDE_MEMBER")
    if not valid_actor_name(name):
        # The name is every record's actor and a directory name (sessions/<name>/).
        raise MemberConfigError(
            f"{key}={shown(name)} is not a member name (names rule: {ACTOR_NAME_RULE})"
        )
    parent = e.get("HORDE_PARENT_PID", "").strip()
    return MemberConfig(
        name=name,
        horde_dir=Path(_required(e, "HORDE_DIR")),
        run=_required(e, "HORDE_RUN"),
        role=e.get("HORDE_ROLE", "").strip() or "member",
        attempt=_int(e, "HORDE_ATTEMPT", 1),
        parent_pid=whole_number(parent),
        gateway_url=_required(e, "HORDE_GATEWAY_URL").rstrip("/"),
        gateway_token=_required(e, "HORDE_GATEWAY_TOKEN"),
        settings=_part(MemberSettings, e),
        max_tokens=max(0, _int(e, "HORDE_MAX_TOKENS", 0)),
        layer=e.get("HORDE_LAYER") or None,
        readonly=e.get("HORDE_TOOLS", "").strip() == "readonly",
        brief=e.get("HORDE_BRIEF", ""),
        stream=e.get("HORDE_STREAM", "").strip() == "1",
        resume_session=_resume_session(e),
        siblings=_siblings(e),
        sessions_dir=_path(e, "HORDE_SESSIONS"),
        task_file=_path(e, "HORDE_TASK_FILE"),
        sandbox=sandbox_policy(e),
    )


def _part(model: type[M], env: Mapping[str, str]) -> M:
    try:
        return load_part(model, env)
    except SettingsError as exc:
        raise MemberConfigError(str(exc)) from None


def sandbox_policy(env: Mapping[str, str]) -> SandboxPolicy:
    """The policy the supervisor set for a member (`HORDE_SANDBOX*`, validated as the
    settings' sandboxing part). `HORDE_SANDBOX` may also be `namespace`: what the
    supervisor resolves `auto` to where bwrap cannot run, a mode but never a setting."""
    resolved = env.get("HORDE_SANDBOX", "").strip() == "namespace"
    part = _part(SandboxSettings, {**env, "HORDE_SANDBOX": ""} if resolved else env)
    return SandboxPolicy(
        mode="namespace" if resolved else part.sandbox,
        network=part.sandbox_network,
        env_names=tuple(part.sandbox_env),
        git_write=part.sandbox_git_write,
    )


def _path(env: Mapping[str, str], key: str) -> Path | None:
    raw = env.get(key, "").strip()
    return Path(raw) if raw else None


def _siblings(env: Mapping[str, str]) -> dict[str, Path]:
    try:
        return parse_siblings(env.get("HORDE_SIBLINGS", ""))
    except ValueError as exc:
        raise MemberConfigError(f"HORDE_SIBLINGS: {exc}") from None


def _resume_session(env: Mapping[str, str]) -> Path | None:
    raw = env.get("HORDE_RESUME_SESSION", "").strip()
    if not raw:
        return None
    path = Path(raw)
    if not path.is_file() or path.suffix != ".jsonl":
        raise MemberConfigError(
            f"HORDE_RESUME_SESSION={raw!r} is not a transcript file (sessions/<name>/*.jsonl)"
        )
    return path
