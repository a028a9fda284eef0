"""Benchmark: a member's call beside hostile local sockets, and refused bodies' memory.

    python tests/benchmarks/bench_gateway_http.py              # 3 rounds of 20 calls
    python tests/benchmarks/bench_gateway_http.py --rounds 5 --calls 40
    python tests/benchmarks/bench_gateway_http.py --against ../main   # main's gateway

A stub model process and a gateway process in front of it (as in bench_members.py), all
on 127.0.0.1. Measures (issue 12, item 7; target in brackets):
- a member's call (its own client, `GatewayClient`, one kept-alive connection as members
  use it, and a fresh connection per call) alone, then with 200 idle connections and 50
  that drip a request head a byte every 0.2 s held open [crowded median within 50 ms of
  the median alone]; rounds alternate alone and crowded, so a drift of the machine's
  load falls on both;
- how many of the 250 crowd connections the gateway still holds after its head timeout
  (10 s) [0];
- the gateway's RSS and peak RSS before and after 20 unauthenticated 31 MB bodies sent
  at once [no growth: the hand-written server grew from 206 to 783 MB].
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench_members import _stub_and_gateway, gateway_from  # this script's dir is on sys.path

from horde_tui.common.gatewayclient import GatewayClient

TOKEN = "bench-token"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """The process's resident set now (VmRSS) or at its peak so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Crowd:
    """`idle` silent connections and `dripping` ones sending a head a byte per 0.2 s."""

    def __init__(self, port: int, idle: int, dripping: int) -> None:
        self.socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(idle)]
        self.drips = [socket.create_connection(("127.0.0.1", port)) for _ in range(dripping)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, daemon=True)
        self._thread.start()

    def _drip(self) -> None:
        head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
        for byte in head:  # bounded by the head's length
            if self._stop.wait(0.2):
                return
            for sock in self.drips:
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self.socks + self.drips:
            sock.close()


def timed_calls(call: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def member_calls(url: str, n: int) -> dict[str, list[float]]:
    """n calls on one kept-alive connection, n calls on a fresh connection each."""
    messages = [{"role": "user", "content": "hi"}]
    kept = GatewayClient(url, TOKEN, "member-1", timeout_s=30)
    try:
        kept_ms = timed_calls(lambda: kept.chat(messages, []), n)
    finally:
        kept.close()

    def fresh_call() -> None:
        client = GatewayClient(url, TOKEN, "member-2", timeout_s=30)
        try:
            client.chat(messages, [])
        finally:
            client.close()

    return {"kept-alive": kept_ms, "fresh": timed_calls(fresh_call, n)}


def refused_bodies(port: int, count: int = 20, mb: int = 31) -> list[int]:
    """Send `count` unauthenticated `mb` MB bodies at once; the statuses answered."""
    statuses: list[int] = []
    block = b"x" * (1024 * 1024)

    def send_one() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            head = (
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                f"Content-Length: {mb * 1024 * 1024}\r\n\r\n"
            )
            sock.sendall(head.encode())
            raw = b""
            try:
                for _ in range(mb):
                    sock.sendall(block)
            except OSError:
                pass  # refused and closed before the body was all sent
            try:
                while chunk := sock.recv(65536):
                    raw += chunk
            except OSError:
                pass
            if raw:
                statuses.append(int(raw.split(b" ", 2)[1]))

    senders = [threading.Thread(target=send_one) for _ in range(count)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(120)
    return statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20, help="calls per round and kind")
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--dripping", type=int, default=50)
    parser.add_argument("--against", type=Path, help="another checkout's gateway (say main)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        steps = [{"content": "ok"}] * (args.rounds * args.calls * 4 + 10)
        if args.against:
            command = gateway_from(args.against)
            stub, _, gateway, url = _stub_and_gateway(Path(tmp), steps, gateway_cmd=command)
        else:
            stub, _, gateway, url = _stub_and_gateway(Path(tmp), steps)
        port = int(url.rsplit(":", 1)[1])
        try:
            member_calls(url, 3)  # warm: litellm's import, first connections
            alone: dict[str, list[float]] = {"kept-alive": [], "fresh": []}
            crowded: dict[str, list[float]] = {"kept-alive": [], "fresh": []}
            fds = 0
            for _ in range(args.rounds):
                for kind, ms in member_calls(url, args.calls).items():
                    alone[kind] += ms
                crowd = Crowd(port, args.idle, args.dripping)
                time.sleep(0.5)
                fds = max(fds, open_fds(gateway.pid))
                for kind, ms in member_calls(url, args.calls).items():
                    crowded[kind] += ms
                crowd.close()
            print(f"load average {os.getloadavg()[0]:.2f}; gateway fds with the crowd: {fds}")
            for kind in alone:
                a, c = statistics.median(alone[kind]), statistics.median(crowded[kind])
                print(
                    f"{kind:>10} call: alone median {a:.1f} ms, with {args.idle} idle + "
                    f"{args.dripping} dripping sockets {c:.1f} ms (difference {c - a:+.1f} ms; "
                    f"target +50 ms); p90 {statistics.quantiles(crowded[kind], n=10)[-1]:.1f} ms"
                )
            crowd = Crowd(port, args.idle, args.dripping)
            time.sleep(0.5)
            held = open_fds(gateway.pid)
            time.sleep(11.0)
            print(
                f"gateway fds: {held} with the crowd, {open_fds(gateway.pid)} after the 10 s "
                "head timeout (the crowd's sockets still open on this side)"
            )
            crowd.close()
            before, peak_before = rss_mb(gateway.pid), rss_mb(gateway.pid, "VmHWM")
            statuses = refused_bodies(port)
            after, peak_after = rss_mb(gateway.pid), rss_mb(gateway.pid, "VmHWM")
            print(
                f"20 unauthenticated 31 MB bodies at once: statuses {sorted(set(statuses))}, "
                f"gateway RSS {before:.0f} -> {after:.0f} MB, peak RSS {peak_before:.0f} -> "
                f"{peak_after:.0f} MB"
            )
        finally:
            for proc in (gateway, stub):
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
