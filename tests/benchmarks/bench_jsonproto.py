"""Benchmark: what a long text-protocol reply that does not parse costs the gateway.

    python tests/benchmarks/bench_jsonproto.py [--rounds 3]

Issue 12: 28 KB of unbalanced code as a text-only model's reply held the gateway's event
loop for ~0.3 s per attempt, stalling every member's requests. Reported:

- parse CPU: `parse_reply`'s CPU time on that reply, in this process (median of 5);
- /health latency through a real gateway process (`--tool-protocol json`, the stub as
  the model) while it handles the reply three times (two corrections): max and median,
  and the same for a 28 KB reply that parses (a plain answer) as the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import start_gateway

from horde_tui.gateway.jsonproto import parse_reply
from horde_tui.stubmodel import StubThread

CODE = "function f(x) {\n  if (x) {\n    return g(x, {a: 1});\n" * 560
ANSWER = '{"answer": "' + "all clear. " * 2600 + '", "done": true}'
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}


def parse_cpu() -> float:
    times = []
    for _ in range(5):
        started = time.process_time()
        parse_reply(CODE, {"bash"})
        times.append(time.process_time() - started)
    return statistics.median(times)


def latencies(gw: Any, member: str, reply: str) -> list[float]:
    gw.stub.stub.set_scripts({member: [{"content": reply}] * 3})
    body = {
        "model": "horde",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [BASH],
    }
    headers = {"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member}
    asking = threading.Thread(
        target=lambda: httpx.post(
            gw.url + "/v1/chat/completions", json=body, headers=headers, timeout=120
        )
    )
    asking.start()
    found = []
    with httpx.Client() as client:
        while not found or asking.is_alive():
            started = time.perf_counter()
            client.get(gw.url + "/health", timeout=30)
            found.append(time.perf_counter() - started)
            time.sleep(0.002)
    asking.join()
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"reply: {len(CODE)} chars of unbalanced code")
    print(f"parse_reply CPU: {parse_cpu() * 1000:.1f} ms (median of 5)")
    with StubThread() as stub, tempfile.TemporaryDirectory() as tmp:
        gw = start_gateway(stub, Path(tmp), "--tool-protocol", "json")
        try:
            latencies(gw, "warm", ANSWER)  # litellm's import and first call
            for n in range(args.rounds):
                for name, reply in (("parses", ANSWER), ("unbalanced", CODE)):
                    found = latencies(gw, f"{name}-{n}", reply)
                    print(
                        f"round {n} {name:>10}: /health max {max(found) * 1000:6.1f} ms, "
                        f"median {statistics.median(found) * 1000:5.1f} ms "
                        f"over {len(found)} requests"
                    )
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)


if __name__ == "__main__":
    main()
