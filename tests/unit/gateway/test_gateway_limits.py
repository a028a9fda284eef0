"""The gateway's shared adaptive limit and its switch to the JSON protocol, seen from the stub.

A gateway of its own (a fresh limiter, and a switched model must not leak into the
session gateway) in front of a stub of its own, whose policy notes when each request
arrives and answers like a provider whose `stub-notools` models refuse `tools`.

In-flight calls are measured on the provider's side: a request that reached the stub at
`t` with a scripted delay `d` is in flight during `[t, t + d)`; the gateway only sends the
next one once a slot is free, which is after a response came back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.gateway import sdk_client

from horde_tui.common.settings import load_settings
from horde_tui.gateway.backend import retry_after_s
from horde_tui.stubmodel import Step, StubThread

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
HELLO = [{"role": "user", "content": "List the files."}]
REFUSAL = "this model does not support tools"
DELAY_MS = 300


class Recorder:
    """The stub's policy: record arrivals; refuse `tools` for `*-notools` models."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrivals: list[tuple[str, float]] = []

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        with self.lock:
            self.arrivals.append((member, time.monotonic()))
        if str(body.get("model", "")).endswith("-notools") and body.get("tools"):
            return Step(status=400, error_message=REFUSAL)
        return None

    def times(self, prefix: str) -> list[float]:
        with self.lock:
            return sorted(t for member, t in self.arrivals if member.startswith(prefix))


def max_overlap(arrivals: list[float], duration_s: float) -> int:
    """The most requests in flight at once at the stub, given each one's fixed duration."""
    return max(sum(1 for t in arrivals if start <= t < start + duration_s) for start in arrivals)


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def gw(recorder: Recorder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with StubThread(policy=recorder) as stub:
        gateway = start_gateway(
            stub,
            tmp_path_factory.mktemp("gateway-limits"),
            "--member-model",
            "gw-switch=openai/stub-notools",
            "--member-model",
            "gw-switch-stream=openai/other-notools",
        )
        try:
            yield gateway
        finally:
            gateway.proc.terminate()
            gateway.proc.wait(10)


def post(gw: GatewayProcess, member: str, body: dict[str, Any] | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member}
    body = body or {"model": "horde", "messages": HELLO, "tools": [BASH]}
    return httpx.post(gw.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def usage(gw: GatewayProcess) -> dict[str, Any]:
    resp = httpx.get(gw.url + "/v1/usage", headers={"Authorization": f"Bearer {gw.token}"})
    assert resp.status_code == 200
    return resp.json()


def only_limiter(gw: GatewayProcess) -> dict[str, Any]:
    """The one provider limit: every member and model of this run goes to one api_base."""
    limiters = usage(gw)["limiters"]
    assert list(limiters) == [f"openai@{gw.stub.api_base}"]
    return limiters[f"openai@{gw.stub.api_base}"]


def burst(gw: GatewayProcess, members: list[str]) -> list[httpx.Response]:
    with ThreadPoolExecutor(len(members)) as pool:
        return list(pool.map(lambda m: post(gw, m, {"model": "horde", "messages": HELLO}), members))


def test_concurrent_members_share_one_limit_then_a_429_lowers_it(
    gw: GatewayProcess, recorder: Recorder
) -> None:
    """The module's first test: its exact numbers assume the provider's limit is fresh."""
    gw.stub.stub.set_scripts(
        {
            "*": [{"content": "ok", "delay_ms": DELAY_MS}],
            "gw-rl": [{"status": 429, "repeat": 3}, {"content": "ok"}],
        }
    )
    post(gw, "gw-warm", {"model": "horde", "messages": HELLO})  # waits out litellm's import
    before = only_limiter(gw)
    assert before["in_flight"] == 0
    capacity = int(before["limit"])
    assert capacity == 4, "a fresh provider starts at 4 concurrent calls"

    members = [f"gw-c{i:02d}" for i in range(12)]
    started = time.monotonic()
    responses = burst(gw, members)
    elapsed = time.monotonic() - started
    assert [r.status_code for r in responses] == [200] * 12
    arrivals = recorder.times("gw-c")
    assert len(arrivals) == 12, "one provider request per member"
    # The first window admits at most the limit; the rest queue for freed slots. (Exactly
    # the limit when the twelve reach the gateway within one window, which a loaded
    # machine does not promise: the bound is the rule, the count is timing.)
    first_window = [t for t in arrivals if t < arrivals[0] + DELAY_MS / 1000]
    assert 1 <= len(first_window) <= capacity
    seen = max_overlap(arrivals, DELAY_MS / 1000)
    after_burst = only_limiter(gw)
    # Each success adds 1/limit (about one per window of calls): 4.25 after the warm-up
    # call, 6.5 after 12 more, so the last wave may run up to 6 at once, never 12.
    assert after_burst["limit"] == pytest.approx(6.519, abs=0.001)
    assert seen <= after_burst["peak_in_flight"] <= 6
    assert after_burst["in_flight"] == 0 and after_burst["waiting"] == 0
    assert elapsed >= 2 * DELAY_MS / 1000, "12 calls at <= 6 at a time take several windows"

    # Three 429s in a row (each retried at once: the stub says retry-after: 0). Each retry
    # is sent after the previous cut, so each is a window of its own: three halvings, to
    # the floor of 1; the final success adds 1/limit.
    resp = post(gw, "gw-rl", {"model": "horde", "messages": HELLO})
    assert resp.status_code == 200
    assert len(gw.stub.stub.requests_for("gw-rl")) == 4
    lowered = only_limiter(gw)
    assert lowered["limit"] == pytest.approx(2.0)
    assert lowered["decreases"] == 3

    # The next burst is held to the lowered limit (rising by about one per window).
    later = [f"gw-d{i:02d}" for i in range(6)]
    assert [r.status_code for r in burst(gw, later)] == [200] * 6
    again = recorder.times("gw-d")
    first_window = [t for t in again if t < again[0] + DELAY_MS / 1000]
    assert len(first_window) == 2
    assert max_overlap(again, DELAY_MS / 1000) <= 3 < seen


def test_a_model_refusing_tools_switches_to_the_json_protocol_once(gw: GatewayProcess) -> None:
    member = "gw-switch"
    reply = json.dumps({"tool": "bash", "args": {"command": "ls"}})
    gw.stub.stub.set_scripts({member: [{"content": reply, "prompt_tokens": 50}] * 2})
    assert "openai/stub-notools" not in usage(gw)["json_protocol_models"]

    resp = post(gw, member)
    assert resp.status_code == 200, resp.text
    (call,) = resp.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "ls"}
    sent = gw.stub.stub.requests_for(member)
    assert len(sent) == 2
    assert sent[0].body["model"] == "stub-notools" and sent[0].body["tools"]
    assert "tools" not in sent[1].body
    assert "# Tool protocol" in sent[1].body["messages"][0]["content"]
    assert "openai/stub-notools" in usage(gw)["json_protocol_models"]

    # Later requests go straight to the JSON protocol: no second refusal.
    resp = post(gw, member)
    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "bash"
    sent = gw.stub.stub.requests_for(member)
    assert len(sent) == 3 and "tools" not in sent[2].body
    # The switch is per model: the run's default model keeps native tool calls.
    assert "openai/stub" not in usage(gw)["json_protocol_models"]
    lines = (gw.run_dir / "usage.jsonl").read_text().splitlines()
    mine = [json.loads(x) for x in lines if json.loads(x)["member"] == member]
    assert [(x["model"], x["prompt_tokens"]) for x in mine] == [("openai/stub-notools", 50)] * 2


def test_a_streamed_request_refused_for_tools_switches_too(gw: GatewayProcess) -> None:
    member = "gw-switch-stream"
    reply = json.dumps({"tool": "bash", "args": {"command": "pwd"}})
    gw.stub.stub.set_scripts({member: [{"content": reply}]})
    client = sdk_client(gw, member)
    stream = client.chat.completions.create(
        model="horde",
        messages=HELLO,
        tools=[BASH],
        stream=True,
    )
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].function is not None and calls[0].function.name == "bash"
    assert json.loads("".join(tc.function.arguments or "" for tc in calls if tc.function)) == {
        "command": "pwd"
    }
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "tool_calls"
    sent = gw.stub.stub.requests_for(member)
    assert [bool(r.body.get("tools")) for r in sent] == [True, False]
    assert "openai/other-notools" in usage(gw)["json_protocol_models"]


# -- a second gateway: simultaneous 429s and a provider's long retry-after -----------------------

RETRY_AFTER_CAP_MS = 500


@pytest.fixture(scope="module")
def fresh_recorder() -> Recorder:
    return Recorder()


@pytest.fixture(scope="module")
def fresh(
    fresh_recorder: Recorder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    """A gateway whose provider limit nothing else has touched, with a short retry-after cap."""
    with StubThread(policy=fresh_recorder) as stub:
        gateway = start_gateway(
            stub,
            tmp_path_factory.mktemp("gateway-window"),
            HORDE_RETRY_AFTER_MAX_MS=str(RETRY_AFTER_CAP_MS),
        )
        try:
            yield gateway
        finally:
            gateway.proc.terminate()
            gateway.proc.wait(10)


def test_429s_from_calls_in_flight_together_halve_the_limit_once(
    fresh: GatewayProcess, fresh_recorder: Recorder
) -> None:
    """The module's first test on `fresh`: its numbers assume the limit is untouched."""
    refusal_ms = 1000
    post(fresh, "gw-warm", {"model": "horde", "messages": HELLO})  # waits out litellm's import
    assert only_limiter(fresh)["limit"] == pytest.approx(4.25)
    members = [f"gw-s{i}" for i in range(4)]
    fresh.stub.stub.set_scripts(
        {m: [{"status": 429, "delay_ms": refusal_ms}, {"content": "ok"}] for m in members}
    )
    assert [r.status_code for r in burst(fresh, members)] == [200] * 4
    first_tries = [fresh_recorder.times(m)[0] for m in members]
    # The premise: every first try was sent before the first 429 came back.
    assert max(first_tries) - min(first_tries) < refusal_ms / 1000
    after = only_limiter(fresh)
    # One cut for the four 429s (4.25 -> 2.125), then four successful retries add 1/limit
    # each. Halving per 429 would have ended at 3.245 (floor 1, then four successes).
    assert after["decreases"] == 1
    assert after["limit"] == pytest.approx(3.618, abs=0.001)
    assert [len(fresh.stub.stub.requests_for(m)) for m in members] == [2] * 4


def test_a_long_retry_after_is_capped(fresh: GatewayProcess, fresh_recorder: Recorder) -> None:
    member = "gw-quota"
    fresh.stub.stub.set_scripts(
        {member: [{"status": 429, "retry_after": "3600"}, {"content": "after the cap"}]}
    )
    resp = post(fresh, member, {"model": "horde", "messages": HELLO})
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == "after the cap"
    first, second = fresh_recorder.times(member)
    # Waited the cap (HORDE_RETRY_AFTER_MAX_MS), not the provider's hour.
    assert second - first >= RETRY_AFTER_CAP_MS / 1000
    assert second - first < 30


class Refused(Exception):
    """A provider error as litellm raises it: the HTTP response hangs off the exception."""

    def __init__(self, retry_after: str) -> None:
        super().__init__("rate limited")
        self.response = httpx.Response(429, headers={"retry-after": retry_after})


@pytest.mark.parametrize(
    ("header", "expected"),
    [("3600", 60.0), ("2.5", 2.5), ("-4", 0.0), ("inf", 60.0), ("nan", None), ("soon", None)],
)
def test_retry_after_is_read_and_capped_at_60_s_by_default(
    header: str, expected: float | None
) -> None:
    default_ms = load_settings(environ={}).gateway.retry_after_max_ms
    assert default_ms == 60_000
    assert retry_after_s(Refused(header), default_ms / 1000) == expected
