"""The gateway tells whose call it holds back: while it waits out a provider's 429 for a
member, or the call waits for a slot under the provider's adaptive limit,
`.backoff-<member>` in the run folder says since when, until when and why (the
supervisor and the member table read it through `store.activity`); the note is gone
once the call goes on. Real gateway processes in front of the stub model."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.processes import wait_until

from horde_tui.gateway.limiter import AdaptiveLimiter
from horde_tui.store.activity import backoff_path, read_backoff
from horde_tui.stubmodel import StubThread

HELLO = [{"role": "user", "content": "hello"}]


def test_a_backed_off_call_is_noted_for_its_member_until_it_ends(
    gateway: GatewayProcess,
) -> None:
    member = "backoff-1"
    gateway.stub.stub.set_scripts(
        {member: [{"status": 429, "retry_after": "2"}, {"content": "answered"}]}
    )
    headers = {"Authorization": f"Bearer {gateway.token}", "X-Horde-Member": member}
    answer: dict[str, Any] = {}

    def call() -> None:
        body = {"model": "horde", "messages": HELLO}
        resp = httpx.post(
            gateway.url + "/v1/chat/completions", json=body, headers=headers, timeout=60
        )
        answer["status"] = resp.status_code

    sent = time.time()
    thread = threading.Thread(target=call)
    thread.start()
    try:
        assert wait_until(lambda: read_backoff(gateway.run_dir, member) is not None, 30)
        note = read_backoff(gateway.run_dir, member)
        assert note is not None and note.status == 429
        assert sent <= note.since <= time.time()
        assert 1.5 <= note.until - note.since <= 2.5  # the provider's retry-after
        assert read_backoff(gateway.run_dir, "someone-else") is None
    finally:
        thread.join(60)
    assert answer["status"] == 200
    assert not backoff_path(gateway.run_dir, member).exists()


async def test_the_limiter_says_when_a_call_would_queue() -> None:
    limiter = AdaptiveLimiter(initial=2)
    assert not limiter.would_wait()
    async with limiter.slot():
        assert not limiter.would_wait()
        async with limiter.slot():
            assert limiter.would_wait()  # both slots taken: the next call queues
    assert not limiter.would_wait()


@pytest.mark.slow  # a gateway of its own (a fresh limit): litellm's import, then held calls
def test_a_call_queued_under_the_providers_limit_is_noted_until_it_gets_a_slot(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """A fresh gateway lets 4 calls at once reach a provider: of 6 held calls sent
    together, 2 wait for a slot, and their members' notes say so until they get one."""
    gw = start_gateway(stub_model, tmp_path / "run")
    members = [f"queued-{n}" for n in range(6)]
    try:
        scripts = {m: [{"content": "ok", "delay_ms": 1500}] for m in members}
        gw.stub.stub.set_scripts({**scripts, "queued-warm": [{"content": "warm"}]})
        post(gw, "queued-warm")  # waits out litellm's import alone
        seen: set[str] = set()
        with ThreadPoolExecutor(len(members)) as pool:
            sent = [pool.submit(post, gw, m) for m in members]
            deadline = time.monotonic() + 30
            while not all(f.done() for f in sent) and time.monotonic() < deadline:
                for m in members:
                    note = read_backoff(gw.run_dir, m)
                    if note is not None and note.queued:
                        assert (
                            note.note(time.time()) == "queued under the provider's limit of 4 calls"
                        )
                        seen.add(m)
                time.sleep(0.02)
            assert [f.result() for f in sent] == [200] * len(members)
        assert 1 <= len(seen) <= 2, seen  # 2, unless a loaded machine staggered the sends
        assert not any(backoff_path(gw.run_dir, m).exists() for m in members)
    finally:
        gw.proc.terminate()
        gw.proc.wait(10)


def post(gw: GatewayProcess, member: str) -> int:
    headers = {"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member}
    body = {"model": "horde", "messages": HELLO}
    resp = httpx.post(gw.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)
    return resp.status_code


def test_a_missing_key_is_one_line_naming_the_variable_to_set(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """litellm says a missing key in a paragraph (what may be passed, which variables
    may be set); the member, the event log and the report get one line that names the
    variable to set."""
    gateway = start_gateway(stub_model, tmp_path, HORDE_API_KEY="", OPENAI_API_KEY="")
    try:
        headers = {"Authorization": f"Bearer {gateway.token}", "X-Horde-Member": "member-1"}
        resp = httpx.post(
            gateway.url + "/v1/chat/completions",
            json={"model": "horde", "messages": HELLO},
            headers=headers,
            timeout=60,
        )
    finally:
        gateway.proc.terminate()
        gateway.proc.wait(timeout=30)
    assert resp.status_code == 401, resp.text
    assert resp.json()["error"]["message"] == (
        "no provider key: set OPENAI_API_KEY (or give --api-key, or api_key in "
        ".horde/config.toml)"
    )
