"""The `mcp` and `join` subcommands; the SDK is imported only when `mcp` runs."""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType

from horde_tui.mcp.seat import AUTO, Seat, SeatRefused, leave, take_seat
from horde_tui.store.paths import default_horde_dir

MCP_EPILOG = """\
The agent acts as the member the server was started for: --member NAME (a live run's
`parent` and member names belong to their owners and are refused), or --member auto for
the next free external name (ext-1, ext-2, ...), registered with the run so the app and
the report show it as an external member. The run is --run, else $HORDE_RUN, else the
newest live run, else `manual`. The horde directory is $HORDE_DIR, else ./.horde.
"""


def add_mcp_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve the `horde` tool to any MCP agent (stdio, or streamable HTTP)",
        description="Serve the `horde` tool, the ledgers and the member protocol over MCP.",
        epilog=MCP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mcp.add_argument("--member", default=AUTO, help="the member to act as, or auto (default)")
    mcp.add_argument("--run", help="the run to join (default: the newest live run)")
    mcp.add_argument(
        "--http", action="store_true", help="serve streamable HTTP instead of stdio (token needed)"
    )
    mcp.add_argument("--port", type=int, default=8765, help="HTTP port (0: any free one)")
    mcp.add_argument(
        "--bind",
        default="127.0.0.1",
        help="HTTP address to listen on (default 127.0.0.1; elsewhere only with the token)",
    )
    mcp.set_defaults(func=cmd_mcp)

    from horde_tui.mcp.join import AGENTS

    join = sub.add_parser(
        "join",
        help="print the config that mounts the horde MCP server in an agent, and its brief",
        description="Print (or --write) the configuration snippet that mounts `horde-tui mcp` "
        "for RUN in an agent (Claude Code, Codex, OpenCode, Goose), and the brief to paste.",
    )
    join.add_argument("run", metavar="RUN", help="the run to join (a run id under .horde/runs)")
    join.add_argument("--agent", choices=AGENTS, required=True)
    join.add_argument("--member", default=AUTO, help="the member to act as (default auto: ext-N)")
    join.add_argument(
        "--url", help="mount a remote `horde-tui mcp --http` server (http://host:port/mcp)"
    )
    join.add_argument(
        "--write", action="store_true", help="merge the snippet into the agent's config file"
    )
    join.set_defaults(func=cmd_join)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the server as Ctrl-C does, so its `member-leave` is still written."""
    raise KeyboardInterrupt


def cmd_mcp(args: argparse.Namespace) -> int:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        seat = take_seat(default_horde_dir(), args.run, args.member)
    except SeatRefused as exc:
        print(f"horde-tui mcp: {exc}", file=sys.stderr)
        return 1
    try:
        serve = _http(seat, args) if args.http else _stdio(seat)
    except SeatRefused as exc:
        leave(seat)
        print(f"horde-tui mcp: {exc}", file=sys.stderr)
        return 1
    import anyio

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass
    finally:
        leave(seat)
    return 0


def _stdio(seat: Seat) -> Callable[[], Awaitable[None]]:
    from horde_tui.mcp.server import serve_stdio

    print(
        f"horde-tui mcp: serving the horde tool as {seat.name} in run {seat.run} "
        f"({seat.horde_dir}) over stdio",
        file=sys.stderr,
    )
    return functools.partial(serve_stdio, seat)


def _http(seat: Seat, args: argparse.Namespace) -> Callable[[], Awaitable[None]]:
    """The HTTP server's socket and token, or `SeatRefused` with the one line."""
    from horde_tui.mcp import remote

    try:
        token, path = remote.bearer_token(seat)
    except remote.TokenRefused as exc:
        raise SeatRefused(str(exc)) from None
    except OSError as exc:
        raise SeatRefused(f"cannot keep the token: {exc}") from None
    from horde_tui.common.httpserve import listen_failure, raise_descriptor_limit

    try:
        sock = remote.listen(args.bind, args.port)
    except OSError as exc:
        raise SeatRefused(
            f"refused: {listen_failure(exc, args.bind, args.port)}; pick another with "
            "--port N (0 takes a free one) or --bind"
        ) from None
    raise_descriptor_limit()  # idle sockets must not use up an agent's descriptor
    remote.announce(seat, sock, path)
    return functools.partial(remote.serve_http, seat, sock, token)


def cmd_join(args: argparse.Namespace) -> int:
    from horde_tui.mcp import join
    from horde_tui.store.runs import resolve_run

    found = resolve_run(default_horde_dir().resolve(), args.run)  # UnknownRun: exit 2
    if args.url and not args.url.startswith(("http://", "https://")):
        print(f"horde-tui join: --url {args.url!r} is not an http(s) URL", file=sys.stderr)
        return 2
    mount = join.Mount(found.name, found.parent.parent, args.member, args.url)
    if args.write:
        try:
            path = join.write(args.agent, mount)
        except (ValueError, OSError) as exc:
            print(f"horde-tui join: cannot write the config: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
        print(join.snippet(args.agent, mount).how)
        print()
        print(join.BRIEF.format(run=mount.run, server=join.SERVER), end="")
        return 0
    print(join.render(args.agent, mount), end="")
    return 0
