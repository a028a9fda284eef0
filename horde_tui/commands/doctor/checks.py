"""`horde-tui doctor [--probe] [--json]`: can a run work here, before twelve members start?

Each check is one line, `ok`, `warn` or `FAIL`, with the fix. Exit 0 when a run can work,
1 when something would stop one (a FAIL), 2 on bad usage. Unlike agent-swarm's doctor,
which passes with no working harness at all, no model that could work is a FAIL.

Where the answers come from: the settings through `settings.load_settings` (the same
merge and the same unknown-key refusal a run gets); litellm's view of each model string
from `python -m horde_tui.gateway.resolve`, a subprocess started first so its import
(seconds) overlaps the other checks, because only the gateway side imports litellm; AI
Horde models from the live model list `horde-tui models` reads; `--probe` starts a real
gateway exactly as the supervisor does (`spawn_gateway` with `gateway_env`) in a
temporary folder and makes one tiny call through it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from horde_tui.common.gatewayclient import GatewayClient, error_message
from horde_tui.common.settings import (
    Settings,
    SettingsError,
    env_name,
    load_settings,
    read_config_file,
)
from horde_tui.common.watchdog import pid_alive
from horde_tui.store.paths import unwritable
from horde_tui.store.runs import live_file, run_ids, run_state, supervisor_pid, swarms_by_state

Status = Literal["ok", "warn", "FAIL"]

MIN_SIZE = (80, 24)
"""The smallest terminal the app is laid out for (columns, lines)."""
DISK_FAIL_BYTES = 100 * 1024**2
"""Below this much free space a run's ledgers and transcripts may not fit: FAIL."""
DISK_WARN_BYTES = 1024**3
RESOLVE_TIMEOUT_S = 120.0
"""The litellm helper's import takes seconds on a loaded machine; past this it is hung."""
PROBE_TIMEOUT_S = 30.0
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answer the health check.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
}
PROBE_MESSAGES = [
    {"role": "system", "content": "You are a health check. Always answer with a tool call."},
    {"role": "user", "content": "Call the ping tool with text 'pong'."},
]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it stands, and what to do about it."""

    name: str
    status: Status
    text: str
    fix: str = ""

    def line(self) -> str:
        fix = f"; fix: {self.fix}" if self.fix and self.status != "ok" else ""
        return f"{self.status:<4} {self.name}: {self.text}{fix}"


def exit_code(checks: list[Check]) -> int:
    """1 when a FAIL would stop a run, else 0."""
    return 1 if any(c.status == "FAIL" for c in checks) else 0


# -- settings ---------------------------------------------------------------------------------


def check_config(horde_dir: Path) -> list[Check]:
    """`.horde/config.toml` parses and names only known keys (settings.py's own reader);
    preset files parse as TOML."""
    path = horde_dir / "config.toml"
    checks: list[Check] = []
    if not path.exists():
        checks.append(
            Check("config", "ok", f"no {path} (defaults); `horde-tui init` writes a commented one")
        )
    else:
        try:
            keys = read_config_file(path)
        except SettingsError as exc:
            checks.append(Check("config", "FAIL", str(exc), f"edit {path}"))
        else:
            checks.append(Check("config", "ok", f"{path} parses ({len(keys)} settings set)"))
    for preset in sorted((horde_dir / "presets").glob("*.toml")):
        try:
            tomllib.loads(preset.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            checks.append(
                Check(
                    "preset",
                    "warn",
                    f"{preset}: cannot parse: {exc}",
                    "fix the file, or remove it (a run with this preset would be refused)",
                )
            )
    return checks


def check_settings(
    horde_dir: Path, environ: Mapping[str, str], model: str | None = None
) -> tuple[Settings | None, list[Check]]:
    """The merged settings a run would get (config, `HORDE_*`, `--model`), or the line
    that refuses them."""
    path = horde_dir / "config.toml"
    try:
        settings = load_settings(path, environ, {"model": model})
    except SettingsError as exc:
        return None, [
            Check(
                "settings",
                "FAIL",
                str(exc),
                "correct that value (`horde-tui run --help` lists every setting)",
            )
        ]
    return settings, [Check("settings", "ok", "flags, HORDE_* variables and config.toml load")]


def run_models(settings: Settings) -> list[str]:
    """Every model the run would call, the run's own first (aihorde ids normalised)."""
    from horde_tui.gateway import aihorde

    models = [settings.gateway.model, *settings.gateway.member_models.values()]
    return list(dict.fromkeys(aihorde.aihorde_model(m) for m in models if m))


# -- litellm, through the gateway-side helper -------------------------------------------------


def start_resolve(models: list[str], settings: Settings) -> subprocess.Popen[str] | None:
    """Start `python -m horde_tui.gateway.resolve` for the non-AI-Horde models (None
    when there are none); `finish_resolve` reads its answer."""
    from horde_tui.gateway import aihorde

    wanted = [m for m in models if not aihorde.is_aihorde(m)]
    if not wanted:
        return None
    request = {
        "models": wanted,
        "api_base": settings.gateway.api_base,
        "key_given": bool(settings.gateway.api_key),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "horde_tui.gateway.resolve", json.dumps(request)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_resolve(
    proc: subprocess.Popen[str] | None, timeout_s: float = RESOLVE_TIMEOUT_S
) -> dict[str, Any]:
    """The helper's answer (`{"models": [...], "import_s": N}`), or `{"error": line}`."""
    if proc is None:
        return {"models": []}
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"litellm did not answer in {timeout_s:g} s"}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        said = (err.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the litellm helper failed: {said}"}
    return answer if isinstance(answer, dict) else {"error": "the litellm helper said nothing"}


def check_models(settings: Settings | None, resolution: dict[str, Any]) -> list[Check]:
    """The model is set, litellm knows its provider and finds its key (never printed),
    and what its price and tool calls will mean for the run."""
    from horde_tui.gateway import aihorde

    if settings is None:
        return [Check("model", "FAIL", "cannot tell: the settings do not load", "see above")]
    if not settings.gateway.model:
        return [
            Check(
                "model",
                "FAIL",
                "no model is set, so no member can work",
                'give --model, HORDE_MODEL or model = "provider/name" in .horde/config.toml '
                "(e.g. openai/gpt-4o, or aihorde/<id> from `horde-tui models`)",
            )
        ]
    models = run_models(settings)
    checks: list[Check] = []
    if clash := aihorde.key_clash(models, settings.gateway.api_key):
        checks.append(Check("key", "FAIL", clash, "use one provider per run"))
    if "error" in resolution:
        checks.append(
            Check(
                "litellm",
                "warn",
                f"could not ask litellm: {resolution['error']}",
                "`horde-tui doctor --probe` tries a real call instead",
            )
        )
    found = {r["model"]: r for r in resolution.get("models", []) if isinstance(r, dict)}
    for model in models:
        if aihorde.is_aihorde(model):
            key = (
                "anonymous key (small jobs only)"
                if aihorde.is_anonymous(settings.gateway.api_key)
                else ("key from api_key")
            )
            checks.append(Check("model", "ok", f"{model}: provider aihorde, {key}"))
            continue
        info = found.get(model)
        if info is None:
            continue
        checks += _model_lines(model, info, settings)
    return checks


def _model_lines(model: str, info: dict[str, Any], settings: Settings) -> list[Check]:
    provider = info.get("provider")
    if not provider:
        return [
            Check(
                "model",
                "FAIL",
                f"litellm knows no provider for {model!r}: {info.get('error')}",
                "write it as provider/name (openai/..., anthropic/..., ollama/...; litellm's "
                "provider list), or aihorde/<id>",
            )
        ]
    checks = [Check("model", "ok", f"{model}: provider {provider}")]
    missing = [str(k) for k in info.get("missing") or []]
    if missing:
        names = ", ".join(missing)
        if settings.gateway.api_base:
            checks.append(
                Check(
                    "key",
                    "warn",
                    f"{model}: {names} not set (api_base {settings.gateway.api_base} may need none)",
                    f"export {missing[0]}=... if the endpoint asks for a key",
                )
            )
        else:
            checks.append(
                Check(
                    "key",
                    "FAIL",
                    f"{model}: {names} not set, so every call would be refused",
                    f"export {missing[0]}=... (or set {env_name('api_key')})",
                )
            )
    else:
        via = (
            f"from {env_name('api_key')}/api_key"
            if settings.gateway.api_key
            else "in the environment"
        )
        checks.append(Check("key", "ok", f"{model}: key {via} (not shown)"))
    if not info.get("priced"):
        status: Status = "FAIL" if settings.gateway.max_cost_usd else "warn"
        checks.append(
            Check(
                "price",
                status,
                f"litellm has no price for {model}: costs show as unknown"
                + (
                    " and the gateway refuses max_cost_usd" if settings.gateway.max_cost_usd else ""
                ),
                "unset max_cost_usd, or use a model litellm prices; stop runs by "
                "max_minutes instead",
            )
        )
    else:
        checks.append(Check("price", "ok", f"{model}: priced (max_cost_usd can be enforced)"))
    if info.get("no_tools") and settings.gateway.tool_protocol != "native":
        checks.append(
            Check(
                "tools",
                "ok",
                f"{model}: litellm says it has no native tool calls; the JSON protocol is used",
            )
        )
    elif info.get("no_tools"):
        checks.append(
            Check(
                "tools",
                "FAIL",
                f"{model}: litellm says it has no tool calls but tool_protocol is native",
                "set tool_protocol = auto (or json)",
            )
        )
    return checks


def check_aihorde(settings: Settings | None, timeout_s: float = 15.0) -> list[Check]:
    """For AI Horde models: the live model list (as `horde-tui models` reads it) has a
    worker for each, else its jobs would queue forever."""
    from horde_tui.gateway import aihorde

    if settings is None or not settings.gateway.model:
        return []
    chosen = [m for m in run_models(settings) if aihorde.is_aihorde(m)]
    if not chosen:
        return []
    try:
        live = asyncio.run(aihorde.fetch_models(settings.gateway.api_base, timeout_s=timeout_s))
    except aihorde.HordeError as exc:
        return [
            Check(
                "workers",
                "warn",
                f"could not read the AI Horde model list: {exc.message}",
                "check the network, then `horde-tui models`",
            )
        ]
    checks = []
    for model in chosen:
        warning = aihorde.no_worker_warning(model, live)
        if warning:
            text = warning.removeprefix("warning: ")
            checks.append(
                Check(
                    "workers", "warn", text.split("; pick")[0], "pick" + text.split("; pick", 1)[-1]
                )
            )
        else:
            found = next(m for m in live if m.name == aihorde.horde_id(model))
            checks.append(Check("workers", "ok", f"{model}: {found.threads} live thread(s)"))
    return checks


# -- the machine ------------------------------------------------------------------------------


def check_brief(workdir: Path) -> list[Check]:
    """AGENTS.md, which every member reads first: absent is fine, init's untouched
    template is not (members would study placeholders), past the cap it is cut."""
    from horde_tui.commands.init import BRIEF
    from horde_tui.common.prompts import AGENTS_MD_CAP

    path = workdir / "AGENTS.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [Check("brief", "ok", "no AGENTS.md: members get the task alone")]
    if text == BRIEF:
        return [
            Check(
                "brief",
                "warn",
                f"{path} is still init's template: members would read its placeholders",
                "describe the material under study in it, or delete it",
            )
        ]
    if len(text) > AGENTS_MD_CAP:
        return [
            Check(
                "brief",
                "warn",
                f"{path} has {len(text)} characters; members are given the first {AGENTS_MD_CAP}",
                "put what matters first, or shorten it",
            )
        ]
    return [Check("brief", "ok", f"{path} ({len(text)} characters)")]


def check_programs(environ: Mapping[str, str]) -> list[Check]:
    """`rg` and `git` on PATH: members search and diff with them."""
    path = environ.get("PATH", os.defpath)
    checks = []
    for name, why, fix in (
        ("rg", "members search code with it (grep is far slower on a big tree)", "install ripgrep"),
        ("git", "members read history and diffs with it", "install git"),
    ):
        found = shutil.which(name, path=path)
        if found:
            checks.append(Check(name, "ok", found))
        else:
            checks.append(Check(name, "warn", f"{name} is not on PATH; {why}", fix))
    return checks


def check_sandbox(settings: Settings | None) -> list[Check]:
    """Member commands in bubblewrap: required (FAIL without it), auto (warn) or off.
    Resource cleanup runs only in bubblewrap, whatever the mode: without it, none runs.
    With bubblewrap and the network on, whether commands get a network of their own."""
    from horde_tui.sandbox.policy import bwrap_problem

    sandboxing = (settings or Settings()).sandboxing
    mode = sandboxing.sandbox
    problem = bwrap_problem()
    no_cleanup = "; resource cleanup commands do not run" if problem else ""
    if mode == "off":
        text = f"off: member commands run unsandboxed{no_cleanup}"
        return [Check("sandbox", "warn", text, "sandbox = auto")]
    if problem is None:
        ok = Check("sandbox", "ok", "bubblewrap works: member commands run in it")
        return [ok, *_check_sandbox_network(sandboxing.sandbox_network)]
    if mode == "bwrap":
        return [Check("sandbox", "FAIL", f"sandbox = bwrap but {problem}", "or set sandbox = auto")]
    return [
        Check("sandbox", "warn", f"{problem}: member commands run unsandboxed{no_cleanup}", problem)
    ]


def _check_sandbox_network(network: bool) -> list[Check]:
    """With the network on: a network namespace of the command's own (slirp4netns), or
    the host's shared (warn: its 127.0.0.1 and unix sockets are in reach)."""
    from horde_tui.sandbox.netns import INSTALL_HINT
    from horde_tui.sandbox.policy import network_problem

    if not network:
        return [Check("sandbox network", "ok", "off: commands have only a loopback of their own")]
    problem = network_problem()
    if problem is None:
        text = "slirp4netns works: commands reach the internet, not this machine's 127.0.0.1"
        return [Check("sandbox network", "ok", text)]
    text = (
        "with sandbox_network on, member commands share this machine's network (its "
        f"127.0.0.1, the run's gateway, its unix sockets): {problem}"
    )
    return [Check("sandbox network", "warn", text, INSTALL_HINT)]


def check_terminal(environ: Mapping[str, str], size: tuple[int, int] | None) -> list[Check]:
    """The app's needs: at least `MIN_SIZE`, and colours (256 is what SSH usually gets,
    and the theme is made to read in it). `size` None: not a terminal."""
    if size is None:
        return [
            Check(
                "terminal",
                "ok",
                "not a terminal: headless and detached runs work; the app needs one",
            )
        ]
    cols, rows = size
    checks = []
    if cols < MIN_SIZE[0] or rows < MIN_SIZE[1]:
        checks.append(
            Check(
                "terminal",
                "warn",
                f"{cols}x{rows} is smaller than the app's {MIN_SIZE[0]}x{MIN_SIZE[1]}",
                "enlarge the window, or run --headless",
            )
        )
    else:
        checks.append(Check("terminal", "ok", f"{cols}x{rows}"))
    term = environ.get("TERM", "")
    colorterm = environ.get("COLORTERM", "").lower()
    ssh = bool(environ.get("SSH_CONNECTION") or environ.get("SSH_TTY"))
    if environ.get("NO_COLOR"):
        checks.append(Check("colours", "ok", "NO_COLOR is set: the app draws without colour"))
    elif colorterm in ("truecolor", "24bit"):
        checks.append(Check("colours", "ok", "truecolor"))
    elif "256color" in term:
        where = (
            "what an SSH session usually gets (COLORTERM is rarely forwarded)"
            if ssh
            else "COLORTERM does not say truecolor"
        )
        checks.append(Check("colours", "ok", f"256 colours, {where}; the app's theme reads in 256"))
    elif term in ("", "dumb"):
        checks.append(
            Check(
                "colours",
                "warn",
                f"TERM={term or '(unset)'}: the app cannot draw here",
                "set TERM=xterm-256color, or run --headless",
            )
        )
    else:
        checks.append(
            Check(
                "colours",
                "warn",
                f"TERM={term}: 8 or 16 colours, the app's panels blur together",
                "set TERM=xterm-256color (SSH sessions usually get 256 colours)",
            )
        )
    return checks


def terminal_size() -> tuple[int, int] | None:
    if not sys.stdout.isatty():
        return None
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return None
    return size.columns, size.lines


def check_horde_dir(horde_dir: Path, fail_bytes: int = DISK_FAIL_BYTES) -> list[Check]:
    """`.horde/` (or where it would be made) is writable, with room for a run."""
    existing = horde_dir if horde_dir.is_dir() else horde_dir.parent
    place = unwritable(horde_dir)  # the check `run` and the launch form refuse by
    if place is not None:
        checks = [Check("writable", "FAIL", *place)]
    else:
        what = (
            str(horde_dir) if horde_dir.exists() else f"{existing} ({horde_dir.name}/ will be made)"
        )
        checks = [Check("writable", "ok", what)]
    try:
        free = shutil.disk_usage(existing).free
    except OSError as exc:
        return [*checks, Check("disk", "warn", f"cannot read free space: {exc}")]
    shown = f"{free / 1024**3:.1f} GiB free"
    if free < fail_bytes:
        checks.append(
            Check(
                "disk",
                "FAIL",
                f"{shown}; a run needs room for ledgers and transcripts",
                "free some disk",
            )
        )
    elif free < max(fail_bytes, DISK_WARN_BYTES):
        checks.append(Check("disk", "warn", f"{shown}; a long run may fill it", "free some disk"))
    else:
        checks.append(Check("disk", "ok", shown))
    return checks


def check_runs(horde_dir: Path) -> list[Check]:
    """A live run refuses a new one (FAIL); a `.live` marker whose supervisor is gone is
    a run left interrupted (warn, with its fix)."""
    runs = horde_dir / "runs"
    checks = []
    for run in run_ids(horde_dir):
        folder = runs / run
        if not live_file(folder).exists():
            continue
        pid = supervisor_pid(folder)
        if pid is not None and pid_alive(pid):
            if run_state(folder) == "active":
                checks.append(
                    Check(
                        "runs",
                        "FAIL",
                        f"run {run} is live (supervisor pid {pid}); a new run is refused, "
                        "one at a time",
                        "`horde-tui stop-clean`, or wait for it",
                    )
                )
            continue  # a run still being set up: not stale
        gone = f"supervisor pid {pid} is gone" if pid is not None else "it names no pid"
        checks.append(
            Check(
                "runs",
                "warn",
                f"run {run} has a stale live marker ({gone})",
                f"`horde-tui resume {run}` to carry it on, or `horde-tui finalize {run}`",
            )
        )
    swarms = swarms_by_state(horde_dir)
    for state in ("pending", "active", "finalizing"):
        for swarm in swarms.get(state, []):
            checks.append(
                Check("runs", "FAIL", f"swarm {swarm} is live", "`horde-tui stop-clean`, or wait")
            )
    for swarm in swarms.get("interrupted", []):
        checks.append(
            Check(
                "runs",
                "warn",
                f"swarm {swarm} was interrupted (its supervisor is gone)",
                f"`horde-tui resume {swarm}`, or `horde-tui finalize {swarm}-hN`",
            )
        )
    if not checks:
        checks.append(Check("runs", "ok", "no live run, no stale live marker"))
    return checks


# -- the probe --------------------------------------------------------------------------------


async def start_probe_gateway(settings: Settings, environ: Mapping[str, str], folder: Path) -> Any:
    """The run's gateway as the supervisor starts it (`spawn_gateway`, `gateway_env`),
    in `folder`; a `Check` FAIL when it does not start (its own line says why)."""
    from horde_tui.supervisor.processes import GatewayStartError, spawn_gateway
    from horde_tui.supervisor.run import gateway_env

    env = dict(environ)
    env.update(gateway_env(settings))
    try:
        return await spawn_gateway(folder, env, settings.gateway.max_cost_usd or None)
    except GatewayStartError as exc:
        return Check("probe", "FAIL", " ".join(str(exc).split())[:500], "fix the line above")


def probe_targets(settings: Settings) -> list[tuple[str, str]]:
    """(member, model) pairs that reach each distinct model of the run once: the run's
    own model as `doctor`, each other model as a member that `member_models` gives it."""
    from horde_tui.gateway import aihorde

    targets = [("doctor", aihorde.aihorde_model(str(settings.gateway.model)))]
    for member, model in settings.gateway.member_models.items():
        model = aihorde.aihorde_model(model)
        if model not in {m for _, m in targets}:
            targets.append((member, model))
    return targets


def _probe_calls(
    url: str, token: str, settings: Settings, timeout_s: float, resolution: dict[str, Any]
) -> list[Check]:
    """Wait for the gateway's litellm (not counted), then one timed call per model."""
    deadline = time.monotonic() + RESOLVE_TIMEOUT_S
    client = GatewayClient(url, token, "doctor")
    try:
        while time.monotonic() < deadline:
            try:
                _, health = client.request("GET", "/health", timeout_s=5)
            except OSError:
                health = {}
            if isinstance(health, dict) and health.get("litellm_ready"):
                break
            time.sleep(0.2)
    finally:
        client.close()
    checks: list[Check] = []
    for member, model in probe_targets(settings):
        checks += _probe_one(url, token, member, model, settings, timeout_s, resolution)
    return checks


def _probe_one(
    url: str,
    token: str,
    member: str,
    model: str,
    settings: Settings,
    timeout_s: float,
    resolution: dict[str, Any],
) -> list[Check]:
    """One tiny call with one tool as `member`: latency, tool calls, price."""
    body = {"model": model, "messages": PROBE_MESSAGES, "tools": [PROBE_TOOL], "max_tokens": 200}
    client = GatewayClient(url, token, member)
    try:
        return _probe_call(client, model, body, settings, timeout_s, resolution)
    finally:
        client.close()


def _probe_call(
    client: GatewayClient,
    model: str,
    body: dict[str, Any],
    settings: Settings,
    timeout_s: float,
    resolution: dict[str, Any],
) -> list[Check]:
    started = time.perf_counter()
    try:
        status, answer = client.post("/v1/chat/completions", body, timeout_s)
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            return [
                Check(
                    "probe",
                    "FAIL",
                    f"{model}: no answer in {timeout_s:g} s",
                    "check api_base and the network, or raise --timeout for a slow model",
                )
            ]
        return [Check("probe", "FAIL", f"{model}: the gateway call failed: {exc}")]
    latency = time.perf_counter() - started
    if status != 200:
        return [
            Check(
                "probe",
                "FAIL",
                f"{model}: the call failed (HTTP {status}): {error_message(answer, 400)}",
                "check the model string, the key and api_base",
            )
        ]
    checks = [Check("probe", "ok", f"{model}: answered in {latency:.2f} s")]
    try:
        _, usage = client.request("GET", "/v1/usage", timeout_s=5)
    except OSError:
        usage = {}
    checks.append(_tools_line(model, answer, usage, settings, resolution))
    cost = (answer.get("usage") or {}).get("horde_cost_usd")
    if cost is None:
        status_: Status = "FAIL" if settings.gateway.max_cost_usd else "warn"
        checks.append(
            Check(
                "priced",
                status_,
                f"{model}: the call's cost is unknown (litellm has no price for it)",
                "a budget (max_cost_usd) needs a priced model; stop by max_minutes instead",
            )
        )
    else:
        checks.append(Check("priced", "ok", f"{model}: this call cost ${float(cost):.6f}"))
    return checks


def _tools_line(
    model: str,
    answer: dict[str, Any],
    usage: dict[str, Any],
    settings: Settings,
    resolution: dict[str, Any],
) -> Check:
    """Native tool calls, or the JSON protocol and why."""
    json_models = usage.get("json_protocol_models") or []
    known_no_tools = any(
        r.get("model") == model and r.get("no_tools") for r in resolution.get("models", [])
    )
    try:
        message = answer["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        message = {}
    called = bool(isinstance(message, dict) and message.get("tool_calls"))
    if settings.gateway.tool_protocol == "json":
        return Check("tool calls", "ok", "the JSON protocol, as tool_protocol = json asks")
    if model in json_models:
        return Check(
            "tool calls",
            "warn",
            f"{model} refused native tool calls; the gateway switched to the JSON protocol",
            'set tool_protocol = "json" to skip the refused first call of each run',
        )
    if known_no_tools and settings.gateway.tool_protocol == "auto":
        return Check("tool calls", "ok", f"{model}: the JSON protocol (litellm: no tool calls)")
    if called:
        return Check("tool calls", "ok", f"{model}: native tool calls work")
    return Check(
        "tool calls",
        "warn",
        f"{model} answered in text instead of calling the tool; members may stall",
        'try tool_protocol = "json"',
    )


# -- the command ------------------------------------------------------------------------------


def diagnose(
    workdir: Path,
    environ: Mapping[str, str],
    *,
    probe: bool = False,
    model: str | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    size: tuple[int, int] | None = None,
) -> list[Check]:
    """Every check, in the order a person fixes them."""
    with tempfile.TemporaryDirectory(prefix="horde-doctor-") as folder:
        return asyncio.run(_diagnose(workdir, environ, probe, model, timeout_s, size, Path(folder)))


async def _diagnose(
    workdir: Path,
    environ: Mapping[str, str],
    probe: bool,
    model: str | None,
    timeout_s: float,
    size: tuple[int, int] | None,
    folder: Path,
) -> list[Check]:
    horde_dir = workdir / ".horde"  # where `run` keeps it (HORDE_DIR is the tool's)
    settings, settings_checks = check_settings(horde_dir, environ, model)
    models = run_models(settings) if settings is not None and settings.gateway.model else []
    # Started first, side by side: litellm's import in the helper and in the probe's
    # gateway overlap each other and the machine checks.
    resolver = start_resolve(models, settings) if settings is not None and models else None
    starting = None
    if probe and settings is not None and models:
        starting = asyncio.create_task(start_probe_gateway(settings, environ, folder))
        await asyncio.sleep(0)  # let it start the gateway process now
    machine = [
        *check_brief(workdir),
        *check_programs(environ),
        *check_sandbox(settings),
        *check_terminal(environ, size),
        *check_horde_dir(horde_dir),
        *check_runs(horde_dir),
    ]
    resolution = await asyncio.to_thread(finish_resolve, resolver)
    model_checks = check_models(settings, resolution)
    model_checks += await asyncio.to_thread(check_aihorde, settings)
    config_checks = check_config(horde_dir)
    if settings is None and any(c.name == "config" and c.status == "FAIL" for c in config_checks):
        settings_checks = []  # the same refusal, already said by the config line
    checks = [*config_checks, *settings_checks, *model_checks, *machine]
    gateway = await starting if starting is not None else None
    try:
        if not probe:
            return checks
        if settings is None or gateway is None or exit_code(model_checks):
            checks.append(
                Check("probe", "FAIL", "not tried: no model could work", "fix the FAIL lines above")
            )
        elif isinstance(gateway, Check):
            checks.append(gateway)
        else:
            checks += await asyncio.to_thread(
                _probe_calls, gateway.url, gateway.token, settings, timeout_s, resolution
            )
        return checks
    finally:
        if gateway is not None and not isinstance(gateway, Check):
            from horde_tui.supervisor.processes import stop_gateway

            await stop_gateway(gateway)


def add_doctor_command(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check that a run can work here: settings, model and key, tools, terminal, disk",
        description="Each check is one line (ok / warn / FAIL) with its fix. Exit 0 when a "
        "run can work, 1 when something would stop one, 2 on bad usage.",
    )
    doctor.add_argument(
        "--probe",
        action="store_true",
        help="one tiny real model call through a gateway: latency, tool calls, price",
    )
    doctor.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    doctor.add_argument("--model", help="check this model instead of the configured one")
    doctor.add_argument(
        "--timeout",
        type=float,
        default=PROBE_TIMEOUT_S,
        metavar="S",
        help=f"--probe: longest wait for the model's answer (default {PROBE_TIMEOUT_S:g} s)",
    )
    doctor.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        print("horde-tui doctor: --timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    checks = diagnose(
        Path.cwd(),
        os.environ,
        probe=args.probe,
        model=args.model,
        timeout_s=args.timeout,
        size=terminal_size(),
    )
    code = exit_code(checks)
    if args.json:
        print(json.dumps({"ok": code == 0, "exit": code, "checks": [asdict(c) for c in checks]}))
    else:
        for check in checks:
            print(check.line())
        fails = sum(c.status == "FAIL" for c in checks)
        warns = sum(c.status == "warn" for c in checks)
        verdict = "a run can work here" if code == 0 else "a run would fail: fix the FAIL lines"
        print(f"{verdict} ({fails} FAIL, {warns} warn)")
    return code
