"""The gateway tells whose call it backs off: while it waits out a provider's 429 for a
member, `.backoff-<member>` in the run folder says since when, until when and why (the
supervisor and the member table read it through `store.activity`); the note is gone
once the call ends. A real gateway process in front of the stub model."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
from conftest import GatewayProcess
from support.processes import wait_until

from horde_tui.store.activity import backoff_path, read_backoff

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
        body = {"model": "any", "messages": HELLO}
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
