"""The run commands: `run`, `plan`, `status`, `stop-hard`, `stop-clean`, `pause`,
`resume`, `reset`, `finalize`. Imported lazily by `cli.py`.

`run`/`plan` host a supervisor in this process (headless: one line per event on stdout),
or with `--detach` start a headless one as its own process and return; `attach` opens
the app on a run another process hosts.
The control commands reach a live supervisor from any other shell through its run's
`control/` folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from horde_tui.settings import SettingsError, load_settings
from horde_tui.supervisor import controls
from horde_tui.supervisor.targets import TargetError, parse_count, parse_targets

QUIET_STATUS = frozenset({"turn-start", "usage", "tool-end"})


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--headless", action="store_true", help="print one line per event (no app)")
    p.add_argument("--model", help="any litellm model string (default: $HORDE_MODEL / config)")
    p.add_argument("--thinking", choices=("off", "low", "medium", "high"))
    p.add_argument("--no-verifier", action="store_true", help="no verifier role in 3+ member runs")
    p.add_argument("--until-stop", action="store_true", help="keep working until stopped")
    p.add_argument("--max-minutes", type=float, help="clean stop at this wall-clock deadline")
    p.add_argument("--max-cost-usd", type=float, help="clean stop when the run has spent this")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for the model")
    p.add_argument("--api-key", help="provider key (prefer the provider's own env variable)")
    p.add_argument("--tool-protocol", choices=("native", "json"), help="json for text-only models")
    p.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")


def _settings(args: argparse.Namespace, horde_dir: Path) -> Any:
    return load_settings(
        horde_dir / "config.toml",
        overrides={
            "model": args.model,
            "thinking": args.thinking,
            "max_minutes": args.max_minutes,
            "max_cost_usd": args.max_cost_usd,
            "api_base": args.api_base,
            "api_key": args.api_key,
            "tool_protocol": args.tool_protocol,
        },
    )


def _err(message: str, code: int = 2) -> int:
    print(f"horde-tui: {message}", file=sys.stderr)
    return code


def print_event(event: Any) -> None:
    """Headless mode: one line per event, no colour unless stdout is a terminal."""
    if event.kind == "member-status":
        data = event.data
        kind = data.get("type")
        if kind in QUIET_STATUS:
            return
        if kind == "tool-start":
            text = f"{data.get('summary') or data.get('tool')}"
        elif kind == "message":
            text = "says: " + " ".join(str(data.get("text", "")).split())[:160]
        elif kind == "exit":
            text = f"exit {data.get('cause')} after {data.get('turns')} turns"
        else:
            text = kind or "?"
        line = f"{time.strftime('%H:%M:%S')} {event.member}: {text}"
    else:
        extras = " ".join(f"{k}={v}" for k, v in event.data.items() if v not in (None, "", []))
        who = f" {event.member}" if event.member else ""
        line = f"{time.strftime('%H:%M:%S')} [{event.kind}]{who} {extras}".rstrip()
    print(line, flush=True)


def cmd_run(args: argparse.Namespace, layers_text: str | None = None) -> int:
    from horde_tui.supervisor.run import Supervisor
    from horde_tui.supervisor.setup import RunRequest, parse_layers

    if os.environ.get("HORDE_GATEWAY_URL") and os.environ.get("HORDE_RUN"):
        return _err(
            "refused: a member may not start a nested horde; work inside the run you are in"
        )
    try:
        count = parse_count(args.count)
    except TargetError as exc:
        return _err(str(exc))
    if count.hordes > 1:
        return _err(
            "refused: swarms (H/M) are not available yet; run a single horde of 1-12 members"
        )
    workdir = Path.cwd()
    try:
        settings = _settings(args, workdir / ".horde")
    except SettingsError as exc:
        return _err(str(exc))
    if not settings.model:
        return _err("no model: pass --model or set HORDE_MODEL (any litellm model string)")
    states = controls.runs_by_state(workdir / ".horde")
    if states.get("active"):
        live = states["active"][-1]
        return _err(
            f"refused: run {live} is live in this directory (one run at a time); "
            "stop it with `horde-tui stop-clean` or wait for it",
            1,
        )
    for run in states.get("interrupted", []):
        print(
            f"note: run {run} was interrupted (its supervisor died); write its report with "
            f"`horde-tui finalize {run}`",
            file=sys.stderr,
        )
    layers = parse_layers(layers_text) if layers_text is not None else []
    if layers_text is not None and not layers:
        return _err('plan needs layers separated by ";", e.g. "parser; type checker"')
    if getattr(args, "detach", False):
        return _detach(args, workdir / ".horde", layers_text)
    prompt = args.prompt if layers_text is None else f"Analyse each layer: {'; '.join(layers)}"
    request = RunRequest(
        prompt,
        count.members,
        layers,
        not args.no_verifier,
        args.until_stop,
        demo=getattr(args, "demo", False),
    )
    if not args.headless and sys.stdout.isatty():
        from horde_tui.app import HordeApp

        sup = Supervisor(workdir, request, settings)
        app = HordeApp(sup)
        code = app.run_hosted(mouse=not getattr(args, "no_mouse", False))
        if app.summary is not None:
            print(f"outcome: {app.summary.outcome}: {app.summary.diagnosis}")
        print(f"report: {sup.run_dir / 'REPORT.md'}")
        return code
    sup = Supervisor(workdir, request, settings, sink=print_event)
    print(f"run {sup.run_id}: {count.members} members, model {settings.model}", flush=True)
    return asyncio.run(_host(sup))


DETACH_OPTIONS = (
    "model",
    "thinking",
    "max_minutes",
    "max_cost_usd",
    "api_base",
    "api_key",
    "tool_protocol",
)
DETACH_FLAGS = ("no_verifier", "until_stop")
DETACH_WAIT_S = 60.0
"""How long `--detach` waits for the new run's `.live` before giving up."""


def detached_argv(args: argparse.Namespace, layers_text: str | None) -> list[str]:
    """The headless command line that repeats this `run`/`plan` in its own process."""
    command = ["run", args.count, args.prompt] if layers_text is None else ["plan", args.count]
    if layers_text is not None:
        command.append(layers_text)
    for name in DETACH_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            command += [f"--{name.replace('_', '-')}", str(value)]
    command += [f"--{name.replace('_', '-')}" for name in DETACH_FLAGS if getattr(args, name)]
    return [sys.executable, "-m", "horde_tui", *command[:1], "--headless", *command[1:]]


def _detach(args: argparse.Namespace, horde_dir: Path, layers_text: str | None) -> int:
    """Start the supervisor as its own session (it outlives this shell), wait until its
    run is live, and say how to watch and stop it."""
    import subprocess

    runs = horde_dir / "runs"
    before = {p.name for p in runs.iterdir()} if runs.is_dir() else set()
    horde_dir.mkdir(parents=True, exist_ok=True)
    log = horde_dir / f"detached-{time.strftime('%Y%m%d-%H%M%S')}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            detached_argv(args, layers_text),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + DETACH_WAIT_S
    while time.monotonic() < deadline:
        fresh = sorted(p for p in runs.glob("*") if p.name not in before) if runs.is_dir() else []
        live = [p for p in fresh if controls.live_file(p).is_file()]
        if live:
            run = live[-1].name
            print(f"run {run} started in the background (pid {proc.pid}); log: {log}")
            print(f"watch it: horde-tui attach {run}   (or horde-tui status)")
            print("stop it:  horde-tui stop-clean   (or horde-tui stop-hard)")
            return 0
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            return _err(f"the detached run exited ({proc.returncode}) before starting:\n{tail}", 1)
        time.sleep(0.1)
    return _err(f"the detached run did not go live within {DETACH_WAIT_S:g} s; see {log}", 1)


def cmd_attach(args: argparse.Namespace) -> int:
    """Open the app on a run hosted by another process (default: the live one)."""
    from horde_tui.app import attach_app

    horde_dir = Path(os.environ.get("HORDE_DIR") or Path.cwd() / ".horde")
    run_dir = find_run(horde_dir, args.run)
    if run_dir is None:
        what = f"no run named {args.run}" if args.run else "no run is live"
        return _err(f"{what} in {horde_dir}; `horde-tui app` lists the runs", 1)
    return attach_app(run_dir, no_mouse=args.no_mouse)


async def _host(sup: Any) -> int:
    """Run the supervisor; Ctrl-C asks for a clean stop, a second Ctrl-C stops hard."""
    loop = asyncio.get_running_loop()
    interrupts = 0
    pending: set[asyncio.Task[Any]] = set()

    def hard() -> None:
        task = asyncio.ensure_future(sup.stop_hard())
        pending.add(task)
        task.add_done_callback(pending.discard)

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            sup.stop_clean(reason="stopped by user")
        else:
            hard()

    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    loop.add_signal_handler(signal.SIGTERM, hard)
    summary = await sup.run()
    report = sup.run_dir / "REPORT.md"
    print(f"\noutcome: {summary.outcome}: {summary.diagnosis}")
    print(f"report: {report}")
    return summary.exit_code


def find_run(
    horde_dir: Path, run: str | None, states: tuple[str, ...] = ("active",)
) -> Path | None:
    if run:
        path = horde_dir / "runs" / run
        return path if path.is_dir() else None
    by_state = controls.runs_by_state(horde_dir)
    candidates = [r for s in states for r in by_state.get(s, [])]
    return horde_dir / "runs" / candidates[-1] if candidates else None


def cmd_control(args: argparse.Namespace) -> int:
    horde_dir = Path(os.environ.get("HORDE_DIR") or Path.cwd() / ".horde")
    words = list(args.words)
    postmortem = False
    if args.command == "stop-clean" and words and words[0] == "postmortem":
        postmortem, words = True, words[1:]
    target = " ".join(words) or "all"
    try:
        parse_targets(target)
    except TargetError as exc:
        return _err(str(exc))
    run_dir = find_run(horde_dir, args.run)
    if run_dir is None or controls.run_state(run_dir) != "active":
        states = controls.runs_by_state(horde_dir)
        listing = "; ".join(f"{k}: {', '.join(v[-3:])}" for k, v in states.items()) or "none"
        if args.command == "status":
            print(f"no run is live in {horde_dir} (runs: {listing})")
            return 0
        return _err(
            f"no run is live in {horde_dir} (runs: {listing}); nothing to {args.command}", 1
        )
    request = controls.new_request(args.command, target, getattr(args, "grace", None), postmortem)
    answer = controls.wait_response(controls.submit(run_dir, request))
    if answer is None:
        return _err(f"the supervisor of {run_dir.name} did not answer within 15 s", 1)
    print(answer["text"])
    return 0 if answer["ok"] else 1


def cmd_finalize(args: argparse.Namespace) -> int:
    from horde_tui.supervisor.recover import finalize_from_disk

    horde_dir = Path.cwd() / ".horde"
    run_dir = find_run(horde_dir, args.run, ("interrupted",))
    if run_dir is None:
        return _err(
            f"no interrupted run {'named ' + args.run if args.run else 'found'} in {horde_dir}", 1
        )
    state = controls.run_state(run_dir)
    if state == "active":
        return _err(f"{run_dir.name} is still live; stop it first (horde-tui stop-clean)", 1)
    summary = finalize_from_disk(horde_dir, run_dir.name)
    print(json.dumps({"run": summary.run_id, "outcome": summary.outcome}))
    print(f"report: {run_dir / 'REPORT.md'}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from horde_tui.demo.run import run_demo

    return run_demo(args.headless, args.speed, args.keep)


def add_commands(sub: Any) -> None:
    run = sub.add_parser("run", help="run a horde of N members on a prompt")
    run.add_argument("count", help="members: M (1-12)")
    run.add_argument("prompt")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)
    detach_help = "start the run as a background process and return (watch: horde-tui attach)"
    run.add_argument("--detach", action="store_true", help=detach_help)

    plan = sub.add_parser("plan", help='run a partitioned horde: plan N "layer; layer; ..."')
    plan.add_argument("count")
    plan.add_argument("layers", help="layers separated by ';'")
    add_run_arguments(plan)
    plan.add_argument("--detach", action="store_true", help=detach_help)
    plan.set_defaults(func=lambda a: cmd_run(a, a.layers), prompt="")

    attach = sub.add_parser("attach", help="open the app on a run hosted by another process")
    attach.add_argument("run", nargs="?", help="the run id (default: the live run)")
    attach.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")
    attach.set_defaults(func=cmd_attach)

    for name, text in (
        ("status", "show the live run and each member"),
        ("stop-hard", "terminate members now (SIGTERM, SIGKILL after 5 s)"),
        ("stop-clean", "members wrap up, then the run finalizes: stop-clean [postmortem] [target]"),
        ("pause", "suspend members (SIGSTOP of their process groups)"),
        ("resume", "resume paused members"),
        ("reset", "kill members' sessions and start fresh attempts: reset member-N"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument(
            "words",
            nargs="*",
            metavar="target",
            help="all, member-N, N, hN, hN:member-M, or a list",
        )
        p.add_argument("--run", help="the run id (default: the live run)")
        if name == "stop-clean":
            p.add_argument("--grace", type=float, help="seconds before escalating (default 90)")
        p.set_defaults(func=cmd_control)

    demo = sub.add_parser(
        "demo",
        help="a full run on a bundled sample with the scripted demo model (no provider key)",
    )
    demo.add_argument("--headless", action="store_true", help="print one line per event (no app)")
    demo.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="multiplier on the demo model's pauses: 1 watchable (default), 0 none, 2 slower",
    )
    demo.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the temporary project with its .horde/ ledgers and reports (default: keep)",
    )
    demo.set_defaults(func=cmd_demo)

    fin = sub.add_parser("finalize", help="finalize an interrupted run from what is on disk")
    fin.add_argument("run", nargs="?", help="the run id (default: the latest interrupted run)")
    fin.set_defaults(func=cmd_finalize)
