"""Benchmark: a `horde` call through a running MCP server vs `horde-tui tool` per call.

    python tests/benchmarks/bench_mcp.py [--calls 200] [--processes 15]

In a fresh `.horde/` with a few ideas, as member ext-1:

- mcp: one `horde` call through a running `horde-tui mcp` server, from the `mcp` SDK's own
  stdio client (JSON-RPC over pipes, the server's worker thread, `run_action`), per call;
- tool: the same call as `horde-tui tool` in a new process (interpreter start, imports,
  the checkpoint load), per call;
- direct: `run_action` in this process, the floor both pay.

Each for a read (`list`) and a write (`post`: the lock and an fsync'd append). Medians;
the issue's targets are mcp < 5 ms and tool about 400 ms on the 2-core machine. Run it
on a quiet machine: the load average is printed at start and end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore

RUN = "bench"


def env_for(horde_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_DIR=str(horde_dir), HORDE_RUN=RUN, HORDE_MEMBER="ext-1")
    return env


def seed(horde_dir: Path) -> None:
    store = HordeStore(horde_dir, "member-1")
    for i in range(20):
        assert run_action(store, {"action": "idea", "text": f"Audit module {i}"}, run=RUN).ok


async def through_mcp(workdir: Path, calls: int) -> dict[str, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "horde_tui", "mcp", "--member", "ext-1", "--run", RUN],
        env=env_for(workdir / ".horde"),
        cwd=str(workdir),
    )
    out: dict[str, float] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for action in ("list", "post"):
            times = []
            for i in range(calls + 5):
                args = (
                    {"action": action} if action == "list" else {"action": "post", "text": f"m{i}"}
                )
                t0 = time.perf_counter()
                result = await session.call_tool("horde", args)
                took = time.perf_counter() - t0
                assert not result.is_error, result
                if i >= 5:  # warm-up: the first calls unpack the checkpoint
                    times.append(took)
            out[action] = statistics.median(times)
    return out


def through_tool(workdir: Path, processes: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for action in ("list", "post"):
        times = []
        for i in range(processes):
            args = [action] if action == "list" else ["post", f"text=t{i}"]
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "horde_tui", "tool", *args],
                cwd=workdir,
                env=env_for(workdir / ".horde"),
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t0)
        out[action] = statistics.median(times)
    return out


def direct(workdir: Path, calls: int) -> dict[str, float]:
    store = HordeStore(workdir / ".horde", "ext-1")
    out: dict[str, float] = {}
    for action in ("list", "post"):
        times = []
        for i in range(calls):
            args = {"action": action} if action == "list" else {"action": "post", "text": f"d{i}"}
            t0 = time.perf_counter()
            assert run_action(store, args, run=RUN).ok
            times.append(time.perf_counter() - t0)
        out[action] = statistics.median(times)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--processes", type=int, default=15)
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        seed(workdir / ".horde")
        mcp = asyncio.run(through_mcp(workdir, args.calls))
        tool = through_tool(workdir, args.processes)
        floor = direct(workdir, args.calls)
    print(f"{'median per call':<16}{'list (read)':>14}{'post (write)':>14}")
    for name, got in (("mcp server", mcp), ("horde-tui tool", tool), ("run_action", floor)):
        print(f"{name:<16}{got['list'] * 1000:>11.2f} ms{got['post'] * 1000:>11.2f} ms")
    for action in ("list", "post"):
        print(f"{action}: tool / mcp = {tool[action] / mcp[action]:.0f}x")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
