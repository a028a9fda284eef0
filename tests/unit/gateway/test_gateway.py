"""The gateway process on its native path: real HTTP, real litellm, the scripted stub behind.

Every test goes member -> gateway process -> litellm -> stub over 127.0.0.1 and checks
both ends: what the member got back and what the stub (the "provider") received. They
share the session gateway, so each uses its own member names (the stub's request log and
the gateway's usage totals are per member).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from conftest import GatewayProcess, start_gateway
from support.cli import cli_argv
from support.gateway import BASH, HELLO, error_of, post, sdk_client, usage, usage_lines

from horde_tui.common.httpserve import Request, Response
from horde_tui.common.settings import GatewaySettings
from horde_tui.gateway.accounting import Accounting
from horde_tui.gateway.app import Gateway, GatewayConfig
from horde_tui.stubmodel import StubThread, start_stub

# -- a native round trip ----------------------------------------------------------------------


def test_native_tool_call_round_trip_is_accounted_with_unknown_cost(
    gateway: GatewayProcess,
) -> None:
    member = "gw-native"
    gateway.stub.stub.set_scripts(
        {
            member: [
                {
                    "tool_calls": [{"name": "bash", "arguments": {"command": "ls -la"}}],
                    "prompt_tokens": 120,
                    "completion_tokens": 7,
                },
                {"content": "Two files.", "prompt_tokens": 150, "completion_tokens": 3},
            ]
        }
    )
    first = post(gateway, member)
    assert first.status_code == 200, first.text
    reply = first.json()
    message = reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "ls -la"}
    # The stub has no price: the cost is unknown (null), never $0.
    assert reply["usage"]["prompt_tokens"] == 120
    assert "horde_cost_usd" in reply["usage"] and reply["usage"]["horde_cost_usd"] is None

    history = [
        *HELLO,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "a.py\nb.py"},
    ]
    second = post(gateway, member, {"model": "horde", "messages": history, "tools": [BASH]})
    assert second.status_code == 200, second.text
    assert second.json()["choices"][0]["message"]["content"] == "Two files."

    # What the provider received: the tools, the member's name, the tool result by id.
    sent = gateway.stub.stub.requests_for(member)
    assert len(sent) == 2
    assert sent[0].body["tools"][0]["function"]["name"] == "bash"
    assert sent[0].headers["x-horde-member"] == member
    assert sent[0].headers["authorization"] == "Bearer stub-key"
    tool_message = sent[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == call["id"]

    lines = usage_lines(gateway, member)
    assert [(x["prompt_tokens"], x["completion_tokens"]) for x in lines] == [(120, 7), (150, 3)]
    assert all(x["cost_usd"] is None and x["model"] == "openai/stub" for x in lines)
    totals = usage(gateway)["members"][member]
    assert totals["calls"] == 2 and totals["cost_unknown_calls"] == 2
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (270, 10)
    assert totals["cost_usd"] is None
    # Every call of the session gateway is unpriced, so the run's total is unknown too.
    report = usage(gateway)
    assert report["total_cost_usd"] is None and report["cost_unknown_calls"] > 0


def test_accounting_never_reports_an_unknown_cost_as_zero(tmp_path: Path) -> None:
    accounting = Accounting(tmp_path / "usage.jsonl", max_cost_usd=0.5)
    accounting.record("m1", "openai/stub", 10, 2, None, 5.0)
    assert accounting.summary()["total_cost_usd"] is None
    accounting.record("m2", "openai/gpt-4o-mini", 1000, 100, 0.25, 5.0)
    summary = accounting.summary()
    # A priced call makes the total a known lower bound; the unknown count says so.
    assert summary["total_cost_usd"] == 0.25 and summary["cost_unknown_calls"] == 1
    assert summary["members"]["m1"]["cost_usd"] is None
    assert summary["members"]["m2"]["cost_usd"] == 0.25
    assert not summary["budget_reached"]
    accounting.record("m2", "openai/gpt-4o-mini", 1000, 100, 0.25, 5.0)
    assert accounting.budget_reached and "$0.5000 of $0.5000" in accounting.budget_message()
    lines = [json.loads(x) for x in (tmp_path / "usage.jsonl").read_text().splitlines()]
    assert [x["cost_usd"] for x in lines] == [None, 0.25, 0.25]


def test_models_lists_the_run_model(gateway: GatewayProcess) -> None:
    resp = httpx.get(
        gateway.url + "/v1/models", headers={"Authorization": f"Bearer {gateway.token}"}
    )
    assert resp.status_code == 200
    assert [m["id"] for m in resp.json()["data"]] == ["openai/stub"]


# -- streaming ------------------------------------------------------------------------------------


def test_streaming_through_the_openai_sdk_delivers_deltas_and_accounts_usage(
    gateway: GatewayProcess,
) -> None:
    member = "gw-stream"
    arguments = {"command": "grep -rn TODO src/"}
    gateway.stub.stub.set_scripts(
        {
            member: [
                {
                    "content": "Searching for the markers first.",
                    "tool_calls": [{"name": "bash", "arguments": arguments}],
                    "prompt_tokens": 40,
                    "completion_tokens": 12,
                }
            ]
        }
    )
    client = sdk_client(gateway, member)
    chunks = list(
        client.chat.completions.create(
            model="horde",
            messages=HELLO,
            tools=[BASH],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    with_choices = [c for c in chunks if c.choices]
    contents = [c.choices[0].delta.content for c in with_choices if c.choices[0].delta.content]
    assert len(contents) > 1, "content should arrive as several deltas"
    assert "".join(contents) == "Searching for the markers first."
    calls = [tc for c in with_choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].function is not None and calls[0].function.name == "bash"
    joined = "".join(tc.function.arguments or "" for tc in calls if tc.function)
    assert json.loads(joined) == arguments
    assert with_choices[-1].choices[0].finish_reason == "tool_calls"
    last = chunks[-1]
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (40, 12)
    # The same cost field as a non-streamed reply: the member never sees which path ran.
    assert last.usage.model_extra == {"horde_cost_usd": None}

    (sent,) = gateway.stub.stub.requests_for(member)
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    (line,) = usage_lines(gateway, member)
    assert (line["prompt_tokens"], line["completion_tokens"], line["cost_usd"]) == (40, 12, None)
    assert usage(gateway)["members"][member]["calls"] == 1


def test_streaming_retries_a_429_before_the_first_chunk(gateway: GatewayProcess) -> None:
    member = "gw-stream-429"
    gateway.stub.stub.set_scripts({member: [{"status": 429}, {"content": "after the wait"}]})
    client = sdk_client(gateway, member)
    chunks = list(client.chat.completions.create(model="horde", messages=HELLO, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "after the wait"
    assert len(gateway.stub.stub.requests_for(member)) == 2


def test_streaming_error_before_any_chunk_is_an_http_error(gateway: GatewayProcess) -> None:
    member = "gw-stream-400"
    gateway.stub.stub.set_scripts({member: [{"status": 400, "error_message": "bad field x"}]})
    client = sdk_client(gateway, member)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="horde", messages=HELLO, stream=True)
    assert "bad field x" in str(caught.value)


# -- retries --------------------------------------------------------------------------------------


def test_a_429_is_retried_and_then_succeeds(gateway: GatewayProcess) -> None:
    member = "gw-429"
    gateway.stub.stub.set_scripts(
        {member: [{"status": 429, "error_message": "slow down"}, {"content": "ok"}]}
    )
    resp = post(gateway, member)
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == "ok"
    assert len(gateway.stub.stub.requests_for(member)) == 2
    # One member-facing call, one accounted call: failed attempts cost no tokens.
    assert len(usage_lines(gateway, member)) == 1


def test_5xx_beyond_the_attempt_cap_returns_the_providers_error(gateway: GatewayProcess) -> None:
    member = "gw-500"
    gateway.stub.stub.set_scripts(
        {member: [{"status": 500, "error_message": "upstream exploded", "repeat": 10}]}
    )
    resp = post(gateway, member)
    assert resp.status_code == 500
    # The provider's own words, without litellm's exception-class prefixes.
    assert error_of(resp) == "upstream exploded"
    assert len(gateway.stub.stub.requests_for(member)) == 4
    assert usage_lines(gateway, member) == []


def test_503_then_success_is_retried(gateway: GatewayProcess) -> None:
    member = "gw-503"
    gateway.stub.stub.set_scripts({member: [{"status": 503, "repeat": 2}, {"content": "up"}]})
    resp = post(gateway, member)
    assert resp.status_code == 200, resp.text
    assert len(gateway.stub.stub.requests_for(member)) == 3


def test_a_400_is_not_retried(gateway: GatewayProcess) -> None:
    member = "gw-400"
    gateway.stub.stub.set_scripts(
        {member: [{"status": 400, "error_message": "max_tokens is too large"}, {"content": "x"}]}
    )
    resp = post(gateway, member)
    assert resp.status_code == 400
    assert error_of(resp) == "max_tokens is too large"
    assert len(gateway.stub.stub.requests_for(member)) == 1


async def test_a_timeout_is_retried_in_process() -> None:
    """The call timeout is 10 minutes in a run, so this one is checked in-process."""
    steps = [{"delay_ms": 5000, "content": "too late"}, {"content": "on time"}]
    async with start_stub({"gw-timeout": steps}) as stub:
        config = GatewayConfig(
            "t",
            GatewaySettings(
                model=stub.model, api_base=stub.api_base, api_key="stub-key", gateway_backoff_ms=10
            ),
            timeout_s=0.5,
        )
        gw = Gateway(config)
        gw.litellm.start_import()
        body = json.dumps({"model": "horde", "messages": HELLO}).encode()
        headers = {"authorization": "Bearer t", "x-horde-member": "gw-timeout"}
        resp = await gw.handle(Request("POST", "/v1/chat/completions", {}, headers, body))
        assert isinstance(resp, Response) and resp.status == 200, resp.body
        assert isinstance(resp.body, dict)
        assert resp.body["choices"][0]["message"]["content"] == "on time"
        assert len(stub.stub.requests_for("gw-timeout")) == 2


# -- auth and bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}],
    ids=["no-token", "wrong-token", "wrong-scheme"],
)
def test_calls_without_the_run_token_are_refused(
    gateway: GatewayProcess, headers: dict[str, str]
) -> None:
    member = "gw-auth"
    gateway.stub.stub.set_scripts({member: [{"content": "should not be reached"}]})
    resp = post(gateway, member, headers={**headers, "X-Horde-Member": member})
    assert resp.status_code == 401
    assert resp.json()["error"]["type"] == "auth_error"
    for path in ("/v1/usage", "/v1/models"):
        assert httpx.get(gateway.url + path, headers=headers).status_code == 401
    assert gateway.stub.stub.requests_for(member) == []


def test_health_needs_no_token_and_leaks_nothing(gateway: GatewayProcess) -> None:
    resp = httpx.get(gateway.url + "/health")
    assert resp.status_code == 200
    body = resp.json()
    assert set(body) == {"ok", "litellm_ready"} and body["ok"] is True
    assert gateway.token not in resp.text and "stub" not in resp.text


def test_a_body_that_is_not_json_is_one_clear_400(gateway: GatewayProcess) -> None:
    resp = post(gateway, "gw-bad", content=b"{not json")
    assert resp.status_code == 400
    assert error_of(resp) == "request body is not valid JSON"


@pytest.mark.parametrize(
    "body",
    [
        {"model": "horde"},
        {"model": "horde", "messages": "hello"},
        [{"role": "user", "content": "hi"}],
        {"model": "horde", "messages": ["hello"]},
        {"model": "horde", "messages": HELLO, "tools": "bash"},
        {"model": "horde", "messages": HELLO, "tools": ["bash"]},
    ],
    ids=[
        "no-messages",
        "messages-not-list",
        "body-not-object",
        "message-not-object",
        "tools-not-list",
        "tool-not-object",
    ],
)
def test_malformed_requests_are_400_and_reach_no_provider(
    gateway: GatewayProcess, body: Any
) -> None:
    member = "gw-malformed"
    resp = post(gateway, member, body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["type"] == "invalid_request_error"
    assert gateway.stub.stub.requests_for(member) == []


def test_unknown_routes_are_404(gateway: GatewayProcess) -> None:
    resp = httpx.get(
        gateway.url + "/v1/nothing", headers={"Authorization": f"Bearer {gateway.token}"}
    )
    assert resp.status_code == 404


# -- the process: a budget it cannot enforce, a prompt exit ----------------------------------------


@pytest.mark.parametrize(
    ("args", "unpriced"),
    [
        (["--max-cost-usd", "2"], "openai/stub"),
        (
            ["--model", "openai/gpt-4o-mini", "--member-model", "member-2=openai/stub"],
            "openai/stub",
        ),
    ],
    ids=["run-model", "member-model"],
)
def test_a_budget_on_a_model_without_a_price_refuses_to_start(
    stub_model: StubThread, tmp_path: Path, args: list[str], unpriced: str
) -> None:
    """Unknown cost never adds up to the budget, so the gateway refuses the run outright."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_MODEL=stub_model.model,
        HORDE_API_BASE=stub_model.api_base,
        HORDE_API_KEY="stub-key",
        HORDE_MAX_COST_USD="2",
        HORDE_PARENT_PID=str(os.getpid()),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "horde_tui.gateway", "--run-dir", str(tmp_path), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == "", "it never said it was listening"
    (line,) = proc.stderr.splitlines()
    assert line == (
        "horde-tui gateway: refused --max-cost-usd 2 (HORDE_MAX_COST_USD): litellm has no "
        f"price for {unpriced}, so the cost of its calls is unknown and the budget could "
        "never be reached; unset the budget, or use a model litellm prices"
    )
    assert not (tmp_path / "gateway.json").exists()
    assert not (tmp_path / "gateway.token").exists()


def test_sigterm_ends_the_gateway_promptly_with_usage_on_disk(
    stub_model: StubThread, tmp_path: Path
) -> None:
    gw = start_gateway(stub_model, tmp_path)
    try:
        member = "gw-sigterm"
        stub_model.stub.set_scripts({member: [{"content": "bye", "prompt_tokens": 9}]})
        assert post(gw, member, {"model": "horde", "messages": HELLO}).status_code == 200
        signalled = time.monotonic()
        gw.proc.send_signal(signal.SIGTERM)
        gw.proc.wait(30)
        elapsed = time.monotonic() - signalled
    finally:
        if gw.proc.poll() is None:
            gw.proc.kill()
    assert gw.proc.returncode == 0
    # Measured about 0.03 s (it was 1.2-2.7 s of interpreter teardown after litellm); the
    # bound leaves room for a loaded machine and still fails that teardown.
    assert elapsed < 1.0, f"took {elapsed:.2f} s to exit after SIGTERM"
    (line,) = usage_lines(gw, member)
    assert line["prompt_tokens"] == 9


def test_litellm_import_heap_is_frozen_out_of_garbage_collection() -> None:
    """After the gateway's import, a full collection no longer walks litellm's heap.

    Run in a fresh interpreter: freezing is process-wide, and pytest's own process
    must keep collecting normally.
    """
    script = (
        "import asyncio, gc, json, litellm\n"
        "from horde_tui.gateway.backend import LiteLLM\n"
        "lite = LiteLLM()\n"
        "lite.start_import()\n"
        "module = asyncio.run(lite.module())\n"
        "collectable = gc.get_objects()\n"
        "print(json.dumps({\n"
        "    'frozen': gc.get_freeze_count(),\n"
        "    'collectable': len(collectable),\n"
        "    'litellm_collectable': any(o is vars(module) for o in collectable),\n"
        "}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HORDE_", "LITELLM_"))}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    heap = json.loads(proc.stdout)
    assert heap["litellm_collectable"] is False, "litellm's module state is still scanned"
    assert heap["frozen"] > 100_000
    assert heap["collectable"] < heap["frozen"] // 10


def test_the_readme_form_with_separated_option_values_starts_the_gateway(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """`horde-tui gateway --port P --model M`: the values are separate words, as typed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(
        HORDE_API_BASE=stub_model.api_base,
        HORDE_GATEWAY_TOKEN="readme-token",
        HORDE_PARENT_PID=str(os.getpid()),
    )
    argv = ["gateway", "--port", str(port), "--model", "openai/readme-model"]
    proc = subprocess.Popen(
        cli_argv(*argv, "--run-dir", str(tmp_path)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == f"listening on http://127.0.0.1:{port}\n", proc.stderr and proc.stderr.read()
        resp = httpx.get(
            f"http://127.0.0.1:{port}/v1/models",
            headers={"Authorization": "Bearer readme-token"},
        )
        assert [m["id"] for m in resp.json()["data"]] == ["openai/readme-model"]
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_busy_port_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    """As `serve` and `mcp` say it: what was refused, why, and what to do."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    model = ["--model", "openai/stub", "--run-dir", str(tmp_path)]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            cli_argv("gateway", "--port", str(port), *model),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )

    assert done.returncode == 1, done
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"horde-tui gateway: refused: port {port} on 127.0.0.1 is in use; pick another with "
        "--port N (0 takes a free one)"
    )
    assert not (tmp_path / "gateway.json").exists()
