"""What a new run needs before it may start: one check shared by `run`/`plan` and the
app's launch form, and the detached start both of them offer.

The CLI stops at the first refusal it prints; the form shows each refusal under its
field. Both read the same `Refusal` lines, so a rule cannot differ between the two, and
each line says what was refused, by which rule, and what to do instead. Settings are
validated by `load_settings` (the pydantic model), one override at a time when one is
refused, so every bad field is named at once rather than one per attempt.

Textual-free: the CLI imports it without the app.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common.settings import Settings, SettingsError, flag_name, load_settings
from horde_tui.presets import PresetError, find_preset, role_models
from horde_tui.protocol.targets import Count, TargetError, parse_count
from horde_tui.sandbox.policy import bwrap_problem
from horde_tui.store.paths import HordePaths, unwritable
from horde_tui.store.runs import (
    DETACHED_LOG_ENV,
    existing_swarm,
    host_pid,
    is_swarm_dir,
    live_file,
    live_swarm,
    read_swarm,
    run_ids,
    runs_by_state,
    swarm_ids,
    swarm_json_path,
    swarms_by_state,
)
from horde_tui.supervisor import lessons
from horde_tui.supervisor.observe import Sink
from horde_tui.supervisor.setup import RunRequest, assign_roles, parse_layers
from horde_tui.supervisor.swarm_plan import SwarmError, deal_layers

SETTING_OPTIONS = (
    "model",
    "thinking",
    "max_minutes",
    "max_cost_usd",
    "api_base",
    "api_key",
    "tool_protocol",
    "compact_tokens",
    "member_models",
    "sandbox",
    "preset",
)
"""`RunOptions` fields that override `Settings` of the same name (flags: `FLAGS`)."""
SECRET_OPTIONS = frozenset({"api_key"})
"""Settings a detached process gets through its environment (`detached_env`), not argv."""
DETACH_FLAGS = ("no_verifier", "until_stop")
DETACH_WAIT_S = 60.0
"""How long a detached start waits for the new run's `.live` before giving up."""
NO_MODEL = (
    "refused: no model; a run needs a litellm model string (e.g. openai/gpt-4o): "
    "give --model (the form's model field), HORDE_MODEL or `model` in .horde/config.toml"
)


@dataclass(frozen=True)
class RunOptions:
    """A run as asked for, before any check; names match the `run` command's options.

    Setting values stay as typed (strings from the form, numbers from argparse):
    `load_settings` converts and validates them."""

    count: str
    prompt: str = ""
    model: str | None = None
    thinking: str | None = None
    max_minutes: str | float | None = None
    max_cost_usd: str | float | None = None
    api_base: str | None = None
    api_key: str | None = None
    tool_protocol: str | None = None
    compact_tokens: str | int | None = None
    member_models: tuple[str, ...] | list[str] | None = None
    """`MEMBER=MODEL` pairs, as `--member-model` gives them."""
    sandbox: str | None = None
    preset: str | None = None
    """A role preset's name (`presets.find_preset`): personas and per-role models."""
    confirm: bool | None = None
    """`--confirm` (None: the config's `confirm`); not passed to a detached run, which
    has no terminal to ask on."""
    lessons: bool | None = None
    """`--lessons` (None: the config's `lessons`): the top lessons of .horde/LESSONS.md in
    the members' brief (`supervisor.lessons`)."""
    no_verifier: bool = False
    until_stop: bool = False
    demo: bool = False
    baseline: str | None = None
    """`--baseline RUN|last` (`supervisor.baseline`)."""
    forked_from: str | None = None
    """`RUN@E#`, set by `horde-tui fork` (`fork.py`)."""

    @classmethod
    def from_args(cls, args: Any) -> RunOptions:
        """From the `run`/`plan` argparse namespace."""
        names = (
            "count",
            "prompt",
            *SETTING_OPTIONS,
            "confirm",
            "lessons",
            *DETACH_FLAGS,
            "demo",
            "baseline",
            "forked_from",
        )
        return cls(**{n: getattr(args, n) for n in names if getattr(args, n, None) is not None})


@dataclass(frozen=True)
class Refusal:
    """One reason a run may not start: the field it concerns and one line to show.

    `field` is a `RunOptions` field, `layers`, `settings` (the config file or a
    `HORDE_*` variable) or `run` (this directory or process cannot start a run now)."""

    field: str
    message: str
    exit_code: int = 2


@dataclass
class LaunchCheck:
    """The outcome of `check_launch`: refusals, or everything a `Supervisor` needs."""

    refusals: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Worth saying but no reason to refuse (an interrupted run to finalize)."""
    request: RunRequest | None = None
    settings: Settings | None = None
    count: Count | None = None

    @property
    def ok(self) -> bool:
        return not self.refusals

    def refused(self, name: str) -> Refusal | None:
        return next((r for r in self.refusals if r.field == name), None)


def checked_settings(
    options: RunOptions, horde_dir: Path, environ: Mapping[str, str] | None
) -> tuple[Settings | None, list[Refusal]]:
    """Settings with the options' overrides; a refused override is dropped and the rest
    re-checked, so each bad field gets its own line."""
    overrides: dict[str, Any] = {n: getattr(options, n) for n in SETTING_OPTIONS}
    overrides["confirm"] = options.confirm
    overrides["lessons"] = options.lessons
    refusals: list[Refusal] = []
    while True:
        try:
            settings = load_settings(horde_dir / "config.toml", environ, overrides)
        except SettingsError as exc:
            key = exc.key
            if key is not None and overrides.get(key) is not None:
                refusals.append(Refusal(key, f"refused: {exc}"))
                overrides[key] = None
                continue
            refusals.append(Refusal("settings", f"refused: {exc}; fix it there"))
            return None, refusals
        return (None if refusals else settings), refusals


def check_launch(
    options: RunOptions,
    horde_dir: Path,
    layers_text: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LaunchCheck:
    """Every rule a new run must pass in `horde_dir`; `layers_text` is `plan`'s "a; b; c"
    (None: an open run, which needs a prompt)."""
    env = os.environ if environ is None else environ
    check = LaunchCheck()
    refuse = check.refusals.append
    place = unwritable(horde_dir)
    if place is not None:  # nothing else can be judged (or kept) there: the one line
        refuse(Refusal("run", f"refused: {place[0]}; {place[1]}", 1))
        return check
    if env.get("HORDE_GATEWAY_URL") and env.get("HORDE_RUN"):
        refuse(
            Refusal(
                "run",
                "refused: a member may not start a nested horde; work inside the run you are in",
            )
        )
    try:
        check.count = parse_count(options.count)
    except TargetError as exc:
        refuse(Refusal("count", f"refused: {exc}"))
    layers = parse_layers(layers_text) if layers_text is not None else []
    if layers_text is not None and not layers:
        refuse(
            Refusal(
                "layers", 'refused: plan needs layers separated by ";", e.g. "parser; type checker"'
            )
        )
    elif layers and check.count is not None and check.count.hordes > 1:
        try:
            deal_layers(layers, check.count.hordes)
        except SwarmError as exc:
            refuse(Refusal("layers", f"refused: {exc}"))
    prompt = options.prompt.strip()
    if not prompt and layers_text is None:
        refuse(
            Refusal(
                "prompt",
                "refused: the prompt is empty; a run needs a task: say what the members should do",
            )
        )
    settings, refused = checked_settings(options, horde_dir, environ)
    check.refusals += refused
    preset = None
    if settings is not None and settings.supervisor.preset:
        try:
            preset = find_preset(settings.supervisor.preset, horde_dir)
        except PresetError as exc:
            refuse(Refusal("preset", str(exc)))
    if settings is not None and settings.supervisor.lessons:
        refused_lessons = lessons_refusal(horde_dir)
        if refused_lessons is not None:
            refuse(refused_lessons)
    if preset is not None and settings is not None and check.count is not None:
        # A role's model is that member's, unless the run names one for it itself.
        slots = assign_roles(RunRequest("", check.count.members, layers, not options.no_verifier))
        settings.gateway.member_models = role_models(preset, slots, settings.gateway.member_models)
    if settings is not None and settings.gateway.compact_tokens:
        budget = prompt_budget(prompt, settings.gateway.compact_tokens)
        if isinstance(budget, Refusal):
            refuse(budget)
        elif budget:
            check.notes.append(budget)
    if settings is not None and not settings.gateway.model:
        refuse(Refusal("model", NO_MODEL))
    elif settings is not None and (clash := aihorde_clash(settings)):
        refuse(Refusal("api_key", f"refused: {clash}"))
    if (
        settings is not None
        and settings.sandboxing.sandbox == "bwrap"
        and (problem := bwrap_problem())
    ):
        refuse(
            Refusal(
                "sandbox",
                f"refused: the run asks for the bwrap sandbox (--sandbox bwrap) and "
                f"{problem}, or run with --sandbox auto",
            )
        )
    states = runs_by_state(horde_dir)
    if states.get("active"):
        live = states["active"][-1]
        refuse(
            Refusal(
                "run",
                f"refused: run {live} is live in this directory (one run at a time); "
                "stop it with `horde-tui stop-clean` or wait for it",
                1,
            )
        )
    swarm = live_swarm(horde_dir)
    if swarm is not None:
        refuse(
            Refusal(
                "run",
                f"refused: swarm {swarm.name} is live in this directory (one run or swarm at a "
                "time); stop it with `horde-tui stop-clean` or wait for it",
                1,
            )
        )
    check.notes += [
        f"note: run {run} was interrupted (its supervisor died); carry it on with "
        f"`horde-tui resume {run}` or write its report with `horde-tui finalize {run}`"
        for run in states.get("interrupted", [])
    ] + [
        f"note: swarm {swarm} was interrupted (its supervisor died); write a horde's report "
        f"with `horde-tui finalize {swarm}-hN`"
        for swarm in swarms_by_state(horde_dir).get("interrupted", [])
    ]
    if check.refusals or settings is None or check.count is None:
        return check
    if not prompt:
        prompt = f"Analyse each layer: {'; '.join(layers)}"
    check.settings = settings
    check.request = RunRequest(
        prompt,
        check.count.members,
        layers,
        not options.no_verifier,
        options.until_stop,
        demo=options.demo,
        preset=preset,
        baseline=options.baseline or "",
        forked_from=options.forked_from or "",
    )
    return check


def lessons_refusal(horde_dir: Path) -> Refusal | None:
    """`--lessons` (or `lessons = true`) with no lesson to give: refused, not run without."""
    missing = lessons.missing(horde_dir)
    if missing is None:
        return None
    flag = flag_name("lessons")
    return Refusal(
        "lessons",
        f"refused: {flag} (lessons = true) gives members the top lessons of {missing}; "
        f"write it with `horde-tui lessons`, or run without {flag}",
    )


def prompt_budget(prompt: str, budget: int) -> Refusal | str | None:
    """A prompt that alone fills a member's context budget (`compact_tokens`) is refused:
    every turn must carry it, so a member could never see it whole; one that takes more
    than half is worth a note (the line). None when it fits. Tokens are estimated as the
    gateway's JSON protocol counts them (`chars_for_tokens`: about 4 characters a token)."""
    from horde_tui.gateway.jsonproto import CHARS_PER_TOKEN

    tokens = -(-len(prompt) // CHARS_PER_TOKEN)
    flag = f"{flag_name('compact_tokens')} {budget}"
    if tokens >= budget:
        return Refusal(
            "prompt",
            f"refused: the prompt is about {tokens:,} tokens ({len(prompt):,} characters) and "
            f"a member's context budget is {budget:,} tokens ({flag}); shorten it (put the "
            f"material in a file of the project and name the file), or raise "
            f"{flag_name('compact_tokens')}",
        )
    if tokens * 2 > budget:
        return (
            f"note: the prompt is about {tokens:,} tokens, more than half of a member's "
            f"context budget of {budget:,} ({flag}): little room is left for the work"
        )
    return None


def aihorde_clash(settings: Settings) -> str | None:
    """horde.py's environment read here: a bare AI Horde id in HORDE_MODEL (or a member's
    model) becomes `aihorde/<id>` in `settings`; a key that would reach the wrong
    provider is the one line returned (see `gateway.aihorde.key_clash`)."""
    from horde_tui.gateway import aihorde  # light: no litellm, no aiohttp at import

    assert settings.gateway.model is not None
    settings.gateway.model = aihorde.aihorde_model(settings.gateway.model)
    settings.gateway.member_models = {
        k: aihorde.aihorde_model(v) for k, v in settings.gateway.member_models.items()
    }
    return aihorde.key_clash(
        [settings.gateway.model, *settings.gateway.member_models.values()], settings.gateway.api_key
    )


def aihorde_warnings(settings: Settings, timeout_s: float = 5.0) -> list[str]:
    """One line per AI Horde model of the run that no live worker serves (its jobs would
    queue forever: horde.py's warning about a wrong id); none when the list cannot be
    read in `timeout_s` (the run's first call then says what is wrong)."""
    import asyncio

    from horde_tui.gateway import aihorde

    models = sorted(
        {m for m in [settings.gateway.model, *settings.gateway.member_models.values()] if m}
    )
    chosen = [m for m in models if aihorde.is_aihorde(m)]
    if not chosen:
        return []
    try:
        live = asyncio.run(aihorde.fetch_models(settings.gateway.api_base, timeout_s=timeout_s))
    except aihorde.HordeError:
        return []
    return [w for m in chosen if (w := aihorde.no_worker_warning(m, live))]


def build_host(check: LaunchCheck, workdir: Path, sink: Sink | None = None) -> Any:
    """The supervisor a passed check asks for: a `Supervisor` for `M` (and `1/M`), a
    `SwarmSupervisor` for `H/M`. Both have `run()` and the same controls, so a host
    (the CLI, the app) treats them alike."""
    assert check.ok and check.request is not None and check.settings is not None
    assert check.count is not None
    if check.count.hordes > 1:
        from horde_tui.supervisor.swarm import SwarmSupervisor

        return SwarmSupervisor(workdir, check.request, check.settings, check.count.hordes, sink)
    from horde_tui.supervisor.run import Supervisor

    return Supervisor(workdir, check.request, check.settings, sink)


def detached_argv(options: RunOptions | Any, layers_text: str | None) -> list[str]:
    """The headless command line that repeats this run in its own process (`options`:
    `RunOptions` or the argparse namespace, which has the same names)."""
    if layers_text is None:
        command = ["run", options.count, options.prompt]
    else:
        command = ["plan", options.count, layers_text]
        if options.prompt:
            command += ["--prompt", options.prompt]
    for name in SETTING_OPTIONS:
        value = getattr(options, name, None)
        if value is None or name in SECRET_OPTIONS:
            continue
        for one in value if isinstance(value, list | tuple) else [value]:
            command += [flag_name(name), str(one)]
    command += [f"--{name.replace('_', '-')}" for name in DETACH_FLAGS if getattr(options, name)]
    if getattr(options, "lessons", None):
        command.append(flag_name("lessons"))
    for name in ("baseline", "forked_from"):
        if getattr(options, name, None):
            command += [f"--{name.replace('_', '-')}", str(getattr(options, name))]
    return [sys.executable, "-m", "horde_tui", *command[:1], "--headless", *command[1:]]


def detached_env(options: RunOptions | Any) -> dict[str, str] | None:
    """The detached process's environment: this one's, plus `HORDE_API_KEY` when a key was
    given as an option (None: inherit as is).

    Never on its command line, which any local user reads in `ps` for the whole run; the
    environment is readable by this user only. The supervisor gives the key to the
    gateway alone (`gateway_env`): members get a scrubbed environment.
    """
    key = getattr(options, "api_key", None)
    if not key:
        return None
    return {**os.environ, "HORDE_API_KEY": str(key)}


@dataclass(frozen=True)
class DetachedStart:
    """A detached run's start: the run (or swarm) that went live, or why none did."""

    pid: int
    log: Path
    run_dir: Path | None = None
    error: str = ""


def start_detached(
    argv: list[str], horde_dir: Path, run_dir: Path | None = None, env: dict[str, str] | None = None
) -> DetachedStart:
    """Start the supervisor as its own session (it outlives this process and its
    terminal), output to a log in `.horde/`; wait until its run is live: a new run, or
    `run_dir` (a resume) once the new process has marked it.

    Blocks up to `DETACH_WAIT_S`: the app calls it from a thread worker."""
    paths = HordePaths(horde_dir)
    runs, swarms = paths.runs, paths.swarms
    before, swarms_before = set(run_ids(horde_dir)), set(swarm_ids(horde_dir))
    horde_dir.mkdir(parents=True, exist_ok=True)
    log = horde_dir / f"detached-{time.strftime('%Y%m%d-%H%M%S')}.log"
    env = {**(os.environ if env is None else env), DETACHED_LOG_ENV: str(log.resolve())}
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=horde_dir.parent,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    deadline = time.monotonic() + DETACH_WAIT_S
    while time.monotonic() < deadline:
        if run_dir is not None:
            live = [run_dir] if host_pid(run_dir) == proc.pid else []
        else:
            fresh = (
                sorted(p for p in runs.glob("*") if p.name not in before) if runs.is_dir() else []
            )
            live = [p for p in fresh if live_file(p).is_file()]
            if swarms.is_dir():  # a swarm is under way once its SWARM.json is written
                live += sorted(
                    p
                    for p in swarms.glob("*")
                    if p.name not in swarms_before and swarm_json_path(p).is_file()
                )
        if live:
            return DetachedStart(proc.pid, log, live[-1])
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            return DetachedStart(
                proc.pid,
                log,
                error=f"the detached run exited ({proc.returncode}) before starting:\n{tail}",
            )
        time.sleep(0.1)
    return DetachedStart(
        proc.pid,
        log,
        error=f"the detached run did not go live within {DETACH_WAIT_S:g} s; see {log}",
    )


def in_background(started: DetachedStart, how: str) -> str:
    """What a person reads once a run or swarm goes on in its own process (`how`:
    "started", "resumed", "goes on"): which, its pid and log, and how to watch and stop
    it. The one text for `run --detach`, `resume --detach` and the app's handoff."""
    assert started.run_dir is not None, "only a start that went live goes on"
    run = started.run_dir.name
    if is_swarm_dir(started.run_dir):
        info = read_swarm(started.run_dir)
        count = info.hordes if info is not None and info.hordes else 1
        attach = "   ".join(f"horde-tui attach {run}-h{n}" for n in range(1, count + 1))
        what = "swarm"
        watch = f"watch it: horde-tui status   (one block per horde)\na horde:  {attach}"
    else:
        what, watch = "run", f"watch it: horde-tui attach {run}   (or horde-tui status)"
    return (
        f"{what} {run} {how} in the background (pid {started.pid}); log: {started.log}\n"
        f"{watch}\nstop it:  horde-tui stop-clean   (or horde-tui stop-hard)"
    )


def resume_detached(
    horde_dir: Path, run: str, env: dict[str, str] | None = None, member: str | None = None
) -> DetachedStart:
    """Start `horde-tui resume RUN --headless` (a run or a swarm; with `member`, that
    member's one-member continuation) as its own session (as `run --detach` starts a
    run) and wait until it has taken it."""
    argv = [sys.executable, "-m", "horde_tui", "resume", run, "--headless"]
    if member is not None:
        argv += ["--member", member]
    taken = existing_swarm(horde_dir, run) or HordePaths(horde_dir).run_dir(run)
    return start_detached(argv, horde_dir, taken, env)


def hand_off(horde_dir: Path, what: str, run: str, api_key: str | None) -> str:
    """After the app's supervisor let go of a run or swarm (`what`), start the detached
    resume that carries it on and return what to tell the shell; `HandoffFailed` says
    why none took it. Blocks until the new process has it: the app calls it in a thread."""
    env = dict(os.environ)
    if api_key:  # given on this command line: never written down, so passed along
        env["HORDE_API_KEY"] = api_key
    started = resume_detached(horde_dir, run, env)
    if started.run_dir is None:
        raise HandoffFailed(
            f"the {what} could not be handed off ({started.error.strip()}); it is "
            f"interrupted: carry it on with `horde-tui resume {run}`"
        )
    return in_background(started, "goes on")


class HandoffFailed(Exception):
    """The detached resume of a handed-off run did not take it (the message says why)."""
