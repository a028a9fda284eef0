"""The gateway process against hostile and sloppy local clients (issue 12, item 7).

Any local process can connect to the gateway's port; only members hold its token. These
probes are the ones that broke the hand-written server: an unauthenticated huge body
buffered in full, odd `Content-Length` values and deep JSON answered with tracebacks, a
body on HEAD replies, `//v1/models` routed as `/models`, and idle or slow sockets that
starved a member. Raw sockets send what a polite client never would.
"""

from __future__ import annotations

import json
import resource
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import GatewayProcess, start_gateway

from horde_tui.common.gatewayclient import GatewayClient
from horde_tui.stubmodel import StubThread


def peak_rss_kb(pid: int) -> int:
    """The process's peak resident set so far (VmHWM): a body held even briefly shows."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def port_of(gw: GatewayProcess) -> int:
    return int(gw.url.rsplit(":", 1)[1])


def exchange(gw: GatewayProcess, data: bytes, timeout: float = 10.0) -> bytes:
    """Send raw bytes, then read until the gateway closes the connection."""
    with socket.create_connection(("127.0.0.1", port_of(gw)), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def status_and_body(raw: bytes) -> tuple[int, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_an_unauthenticated_huge_body_is_refused_before_it_is_read(gateway: GatewayProcess) -> None:
    """Twenty 31 MB bodies without the token took the old server from 206 to 783 MB."""
    assert httpx.get(gateway.url + "/v1/models", headers=auth(gateway)).status_code == 200
    before = peak_rss_kb(gateway.proc.pid)
    size = 31 * 1024 * 1024
    payload = b"x" * (1024 * 1024)
    statuses = []
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", port_of(gateway)), timeout=10) as sock:
            head = (
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
            )
            sock.sendall(head.encode())
            try:
                for _ in range(31):
                    sock.sendall(payload)
            except OSError:
                pass  # the gateway answered and closed without reading: as it should
            raw = b""
            try:
                while chunk := sock.recv(65536):
                    raw += chunk
            except OSError:
                pass
            if raw:
                statuses.append(status_and_body(raw)[0])
    grown_mb = (peak_rss_kb(gateway.proc.pid) - before) / 1024
    assert statuses and set(statuses) == {401}, statuses
    assert grown_mb < 60, f"the gateway's peak RSS grew {grown_mb:.0f} MB on refused bodies"


def auth(gw: GatewayProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw.token}"}


def test_odd_content_lengths_are_one_line_400s(gateway: GatewayProcess) -> None:
    for length in ("²", "9" * 5000, "-1", "1, 2"):
        raw = exchange(
            gateway,
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + length.encode()
            + b"\r\n\r\n{}",
        )
        status, body = status_and_body(raw)
        assert status == 400, (length[:10], raw[:300])
        error = json.loads(body)["error"]
        assert error["type"] == "invalid_request_error"
        assert "\n" not in error["message"] and "Traceback" not in error["message"]
    assert httpx.get(gateway.url + "/health").status_code == 200


def test_deeply_nested_json_is_a_one_line_400(gateway: GatewayProcess) -> None:
    body = b"[" * 50_000 + b"]" * 50_000
    resp = httpx.post(
        gateway.url + "/v1/chat/completions",
        content=body,
        headers={**auth(gateway), "Content-Type": "application/json"},
        timeout=30,
    )
    assert resp.status_code == 400, resp.text[:300]
    assert resp.json()["error"]["message"] == "request body is not valid JSON"


def test_head_replies_carry_no_body(gateway: GatewayProcess) -> None:
    raw = exchange(gateway, b"HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 ")
    assert raw.endswith(b"\r\n\r\n"), "a HEAD reply must end with its head"


def test_a_double_slash_path_is_not_routed_to_another_route(gateway: GatewayProcess) -> None:
    """`//v1/models` is no route of the gateway: 404, never `/models` or `/v1/models`."""
    raw = exchange(
        gateway,
        b"GET //v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + gateway.token.encode()
        + b"\r\nConnection: close\r\n\r\n",
    )
    status, body = status_and_body(raw)
    assert status == 404
    assert json.loads(body)["error"]["message"] == "no route GET //v1/models"


@contextmanager
def hostile_sockets(gw: GatewayProcess, idle: int, dripping: int) -> Iterator[None]:
    """`idle` connections that send nothing and `dripping` ones that send a request head
    one byte every 0.2 s, held open for the block."""
    stop = threading.Event()
    with ExitStack() as stack:
        for _ in range(idle):
            stack.enter_context(socket.create_connection(("127.0.0.1", port_of(gw)), timeout=5))
        drips = [
            stack.enter_context(socket.create_connection(("127.0.0.1", port_of(gw)), timeout=5))
            for _ in range(dripping)
        ]

        def drip() -> None:
            head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000
            for byte in head:  # bounded: the head is finite
                if stop.wait(0.2):
                    return
                for sock in drips:
                    try:
                        sock.send(bytes([byte]))
                    except OSError:
                        pass

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        try:
            yield
        finally:
            stop.set()
            dripper.join(5)


def member_call_ms(gw: GatewayProcess, member: str) -> float:
    """One call through the member's own client on a fresh connection, in ms."""
    client = GatewayClient(gw.url, gw.token, member, timeout_s=30)
    started = time.perf_counter()
    try:
        client.chat([{"role": "user", "content": "hi"}], [])
    finally:
        client.close()
    return (time.perf_counter() - started) * 1000


def test_a_member_is_answered_promptly_beside_idle_and_dripping_sockets(
    gateway: GatewayProcess,
) -> None:
    """The loose form of tests/benchmarks/bench_gateway_http.py (50 ms there)."""
    member = "gw-crowd"
    gateway.stub.stub.set_scripts({member: [{"content": "ok", "repeat": 20}]})
    normal = statistics.median(member_call_ms(gateway, member) for _ in range(5))
    with hostile_sockets(gateway, idle=200, dripping=50):
        crowded = statistics.median(member_call_ms(gateway, member) for _ in range(5))
    assert crowded < normal + 1000, f"{crowded:.0f} ms beside the crowd, {normal:.0f} ms alone"


def lower_descriptor_soft_limit() -> None:
    """In the gateway's child before exec: the common 256-1,024 soft limit, hard kept."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))


def test_idle_sockets_past_a_low_descriptor_limit_do_not_starve_a_member(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """300 idle sockets under a 256-descriptor soft limit: the gateway raises its soft
    limit at start (and caps connections), so a member's call is still answered."""
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1024:
        pytest.skip("the hard descriptor limit is too low to show the raise")
    gw = start_gateway(stub_model, tmp_path, preexec_fn=lower_descriptor_soft_limit)
    try:
        limits = Path(f"/proc/{gw.proc.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        soft, hard = line.split()[3:5]
        assert soft == hard, line
        member = "gw-fd"
        stub_model.stub.set_scripts({member: [{"content": "ok"}]})
        with hostile_sockets(gw, idle=300, dripping=0):
            member_call_ms(gw, member)
    finally:
        gw.proc.kill()
        gw.proc.wait(10)
