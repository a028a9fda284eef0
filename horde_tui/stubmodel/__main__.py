"""Run the stub model as its own process: `python -m horde_tui.stubmodel`.

For tests that treat the stub like a real provider in another process, and for the
demo. It prints `listening on URL` on stdout once it accepts connections (and writes
the port to `--port-file`, atomically, for callers that poll a file), and exits 0 on
SIGTERM or SIGINT after closing its connections.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from pydantic import ValidationError

from horde_tui.common.httpserve import raise_descriptor_limit, serve
from horde_tui.stubmodel.script import Scripts, load_scripts
from horde_tui.stubmodel.server import StubModel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m horde_tui.stubmodel",
        description="Serve a scripted OpenAI-compatible model on 127.0.0.1.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON object: member -> list of steps")
    parser.add_argument("--token", help="require `Authorization: Bearer TOKEN` on /v1/*")
    parser.add_argument("--port-file", type=Path, help="write the bound port here")
    args = parser.parse_args(argv)
    scripts: Scripts = {}
    if args.script is not None:
        try:
            scripts = load_scripts(args.script)
        except (OSError, ValidationError) as exc:
            print(f"stubmodel: cannot load {args.script}: {exc}", file=sys.stderr)
            return 2
    stub = StubModel(scripts, token=args.token)
    asyncio.run(_serve_until_signal(stub, args.host, args.port, args.port_file))
    return 0


async def _serve_until_signal(
    stub: StubModel, host: str, port: int, port_file: Path | None
) -> None:
    raise_descriptor_limit()
    server = await serve(stub.handle, host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        if port_file is not None:
            partial = port_file.with_name(port_file.name + ".tmp")
            partial.write_text(f"{server.port}\n")
            os.replace(partial, port_file)
        print(f"listening on {server.url}", flush=True)
        await stop.wait()
    finally:
        await server.close()


if __name__ == "__main__":
    sys.exit(main())
