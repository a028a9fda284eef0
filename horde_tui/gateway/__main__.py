"""`python -m horde_tui.gateway`: the one process of a run that imports litellm.

It listens on 127.0.0.1 (random port by default), writes `gateway.json` (url, pid, the settings it runs with) and
`gateway.token` (mode 0600; the token is never printed or logged) to the run directory,
prints one `listening on URL` line, and serves until SIGTERM or until its parent is gone
(then it ends what that parent started for the run first: see `orphaned`).

`--shared` (what `horde-tui eval` starts, once for all its runs): runs join it with
their own tokens (`app.Gateway._runs`); its own token, which joins them, is never
written to a file (the eval hands it to its runs in their environment).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from horde_tui.common import keypipe
from horde_tui.common.httpserve import listen_failure, raise_descriptor_limit, serve
from horde_tui.common.reaper import end_run
from horde_tui.common.settings import (
    THINKING_LEVELS,
    TOOL_PROTOCOLS,
    GatewaySettings,
    SettingsError,
    load_part,
    settings_record,
)
from horde_tui.common.watchdog import exit_group, parent_pid_from_env, start_watchdog
from horde_tui.gateway import aihorde, backend
from horde_tui.gateway.app import Gateway, GatewayConfig, budget_refusal
from horde_tui.gateway.limiter import SHARED_LIMIT_ENV


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    """The gateway's command line (also what `horde-tui gateway --<Tab>` completes)."""
    p = argparse.ArgumentParser(prog="horde-tui gateway", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: pick a free one)")
    p.add_argument("--run-dir", type=Path, help="the run directory (token, usage.jsonl)")
    p.add_argument("--model", help="litellm model string (default: $HORDE_MODEL)")
    p.add_argument("--thinking", choices=THINKING_LEVELS)
    p.add_argument("--api-base")
    p.add_argument("--tool-protocol", choices=TOOL_PROTOCOLS)
    p.add_argument("--max-cost-usd", type=float)
    p.add_argument(
        "--compact-tokens",
        type=int,
        help="JSON protocol: fit prompts in N tokens, 0 off ($HORDE_COMPACT_TOKENS)",
    )
    p.add_argument(
        "--member-model",
        action="append",
        default=[],
        metavar="MEMBER=MODEL",
        help="a model for one member (repeatable; $HORDE_MEMBER_MODELS: comma-separated)",
    )
    p.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    p.add_argument(
        "--shared",
        action="store_true",
        help="take runs that join with their own token, usage file and budget (eval)",
    )
    return p


def write_private(path: Path, text: str) -> None:
    """Create `path` readable by this user only, before any byte of the secret is written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def build_config(args: argparse.Namespace, token: str) -> GatewayConfig:
    """The gateway's configuration: its flags over its `HORDE_*` variables (the
    supervisor passes every gateway setting as one, whichever way it was set), validated
    as the gateway's part of the settings."""
    settings = load_part(
        GatewaySettings,
        overrides={
            "model": args.model,
            "thinking": args.thinking,
            "api_base": args.api_base,
            "tool_protocol": args.tool_protocol,
            "max_cost_usd": args.max_cost_usd,
            "compact_tokens": args.compact_tokens,
            "member_models": args.member_model or None,
        },
    )
    if not settings.model:
        raise SettingsError("no model: pass --model or set HORDE_MODEL (any litellm model string)")
    model = aihorde.aihorde_model(settings.model)
    member_models = {k: aihorde.aihorde_model(v) for k, v in settings.member_models.items()}
    if clash := aihorde.key_clash([model, *member_models.values()], settings.api_key):
        raise SettingsError(clash, "api_key")
    run_dir = args.run_dir
    resolved = {
        "model": model,
        "member_models": member_models,
        "compact_tokens": settings.compact_tokens or None,
    }
    return GatewayConfig(
        token=token,
        settings=settings.model_copy(update=resolved),
        usage_path=run_dir / "usage.jsonl" if run_dir else None,
        budget_flag=run_dir / ".budget-reached" if run_dir else None,
        shared_limit_dir=Path(shared) if (shared := os.environ.get(SHARED_LIMIT_ENV)) else None,
        shared=args.shared,
        run_dir=run_dir,
    )


def orphaned(run_dir: Path | None, parent_pid: int | None) -> Callable[[], None]:
    """What to do once the supervisor is gone: end the members it started for this run,
    each with its commands, then exit. The members' own watchdogs do the same for
    themselves, but a paused member cannot, and the gateway is never paused."""

    def end() -> None:
        if run_dir is not None and parent_pid:
            end_run(run_dir.name, parent_pid)
        exit_group()

    return end


async def run(args: argparse.Namespace) -> int:
    keypipe.take_over()  # the provider key and token, from the supervisor's pipe
    token = os.environ.get("HORDE_GATEWAY_TOKEN") or secrets.token_urlsafe(32)
    try:
        config = build_config(args, token)
    except SettingsError as exc:
        print(f"horde-tui gateway: {exc}", file=sys.stderr)
        return 2
    gateway = Gateway(config)
    gateway.litellm.start_import()
    if config.settings.max_cost_usd is not None:
        # Decided before listening, so a run is refused before any member spends a token.
        try:
            refusal = budget_refusal(config, await gateway.litellm.module())
        except backend.ProviderError as exc:
            refusal = exc.message
        if refusal:
            print(f"horde-tui gateway: {refusal}", file=sys.stderr)
            return 2
    raise_descriptor_limit()  # idle local sockets must not use up a member's descriptor
    try:
        server = await serve(gateway.handle, "127.0.0.1", args.port, authorize=gateway.authorize)
    except OSError as exc:
        print(
            f"horde-tui gateway: refused: {listen_failure(exc, '127.0.0.1', args.port)}; "
            "pick another with --port N (0 takes a free one)",
            file=sys.stderr,
        )
        return 1
    if args.run_dir:
        args.run_dir.mkdir(parents=True, exist_ok=True)
        if not config.shared:
            write_private(args.run_dir / "gateway.token", token + "\n")
        info = {
            "url": server.url,
            "port": server.port,
            "pid": os.getpid(),
            "model": config.model,
            # what a person (or a test) reads to see that a setting arrived; never the key
            "settings": settings_record(config.settings),
            "shared_limit_dir": str(config.shared_limit_dir) if config.shared_limit_dir else None,
            "shared": config.shared,
        }
        (args.run_dir / "gateway.json").write_text(json.dumps(info) + "\n")
    print(f"listening on {server.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = args.parent_pid or parent_pid_from_env()
    start_watchdog(parent, on_gone=orphaned(args.run_dir, parent))
    await stop.wait()
    # AI Horde jobs still queued would spend a worker's time and the user's kudos on
    # answers nobody reads: cancelled before the process ends.
    await aihorde.CLIENT.cancel_all()
    await server.close()
    return 0


def main(argv: list[str] | None = None) -> NoReturn:
    """Serve until stopped, then end the process at once.

    Interpreter teardown after litellm took 1-3 s here (module and thread cleanup), long
    enough for a supervisor's SIGTERM to look like a hang. Everything that must outlive
    the process is already on disk by then: every `usage.jsonl` line is written with
    `os.write` as its call ends (no buffer to flush), and the server has closed its
    connections; so the process skips the teardown with `os._exit`.
    """
    code = asyncio.run(run(parse_args(argv)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
