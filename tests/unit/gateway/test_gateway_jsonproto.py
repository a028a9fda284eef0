"""The JSON text protocol through the gateway process: the stub answers in text only.

The gateway runs with `--tool-protocol json` (and a second one with `--compact-tokens`),
so the stub plays a model without native tool calls: every scripted step is `content`
only. The member side must still see ordinary OpenAI tool calls, and the stub side must
see a text-only conversation with the protocol in the system message and no `tools`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.gateway import READ, sdk_client
from support.gateway import usage as gw_usage

from horde_tui.protocol.schema import tool_schema
from horde_tui.stubmodel import RecordedRequest, StubThread

BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command in the working directory.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "description": "Write a whole file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
TOOLS = [BASH, READ, WRITE, tool_schema()]
SYSTEM = "You are member-1 of a horde reviewing app.py."
TASK = "Find the hard-coded secret in app.py."
CONVERSATION = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]


@dataclass
class Gateways:
    json: GatewayProcess
    compact: GatewayProcess


@pytest.fixture(scope="module")
def gateways(
    stub_model: StubThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateways]:
    """Both gateways start together, so their litellm imports overlap."""
    started: list[GatewayProcess] = []
    try:
        for name, args in (
            ("json", ("--tool-protocol", "json")),
            ("compact", ("--tool-protocol", "json", "--compact-tokens", "300")),
        ):
            run_dir = tmp_path_factory.mktemp(f"gateway-{name}")
            started.append(start_gateway(stub_model, run_dir, *args))
        yield Gateways(*started)
    finally:
        for gw in started:
            gw.proc.terminate()
        for gw in started:
            gw.proc.wait(10)


@pytest.fixture
def gw(gateways: Gateways) -> GatewayProcess:
    return gateways.json


def play(gw: GatewayProcess, member: str, *replies: str, **step: Any) -> None:
    """Script the stub's text replies for `member` (nothing else: a text-only model)."""
    gw.stub.stub.set_scripts({member: [{"content": r, **step} for r in replies]})


def ask(
    gw: GatewayProcess, member: str, messages: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body = {
        "model": "horde",
        "messages": messages or CONVERSATION,
        "tools": TOOLS,
        "tool_choice": "auto",
    }
    headers = {"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member}
    resp = httpx.post(gw.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.json()


def tool_call(reply: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one tool call of a reply, as (name, args); the reply must be a tool call."""
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def last_user(request: RecordedRequest) -> str:
    return next(m["content"] for m in reversed(request.body["messages"]) if m["role"] == "user")


def sent(gw: GatewayProcess, member: str) -> list[RecordedRequest]:
    return gw.stub.stub.requests_for(member)


def test_a_clean_json_reply_becomes_a_native_tool_call(gw: GatewayProcess) -> None:
    member = "js-clean"
    play(gw, member, '{"tool": "bash", "args": {"command": "ls"}}')
    assert tool_call(ask(gw, member)) == ("bash", {"command": "ls"})
    (request,) = sent(gw, member)
    # A text-only conversation: no tools, the protocol in the member's system message.
    assert "tools" not in request.body and "tool_choice" not in request.body
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].startswith(SYSTEM)
    assert "# Tool protocol" in messages[0]["content"]
    assert all(f"- {name}" in messages[0]["content"] for name in ("bash", "read", "horde"))
    assert messages[1]["content"].startswith(TASK)
    assert "Reply with exactly one JSON object" in messages[1]["content"]


def test_a_fenced_reply_with_prose_around_it_is_read(gw: GatewayProcess) -> None:
    member = "js-fenced"
    play(
        gw,
        member,
        "Sure, I will look at the files first.\n```json\n"
        '{"tool": "read", "args": {"path": "app.py"}}\n```\nThen I will grep.',
    )
    assert tool_call(ask(gw, member)) == ("read", {"path": "app.py"})
    assert len(sent(gw, member)) == 1


def test_a_call_quoted_inside_a_broken_answer_is_not_run(gw: GatewayProcess) -> None:
    """Issue 12: a missing comma made the answer unparseable, and the example call nested
    in it was taken as the reply."""
    member = "js-nested"
    play(
        gw,
        member,
        '{"answer": "Cleaned up." "example": {"tool": "bash", "args": {"command": '
        '"rm -rf build"}}, "done": true}',
    )
    choice = ask(gw, member)["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "Cleaned up."}


def test_a_long_reply_that_does_not_parse_does_not_stall_the_gateway(gw: GatewayProcess) -> None:
    """28 KB of unbalanced code, three times (two corrections): reading each held the
    gateway's event loop for 0.2-0.3 s (tests/benchmarks/bench_jsonproto.py), and every
    member's requests waited. /health is asked all along, after a first request so
    litellm's import is not measured."""
    play(gw, "js-stall-warm", '{"answer": "ready"}')
    ask(gw, "js-stall-warm")
    member = "js-stall"
    code = "function f(x) {\n  if (x) {\n    return g(x, {a: 1});\n" * 560
    play(gw, member, code, code, code)
    replies: list[dict[str, Any]] = []
    asking = threading.Thread(target=lambda: replies.append(ask(gw, member)))
    asking.start()
    latencies = []
    with httpx.Client() as client:
        while asking.is_alive():
            started = time.perf_counter()
            assert client.get(gw.url + "/health", timeout=10).status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.002)
    asking.join()
    assert len(sent(gw, member)) == 3
    assert replies[0]["choices"][0]["message"]["content"] == code
    # Each of the three readings stalled at least one /health request; the third
    # slowest answer is bounded, so one or two hiccups of a loaded machine are not.
    slowest = sorted(latencies)[-3:]
    assert len(latencies) >= 3 and slowest[0] < 0.15, slowest


def test_a_truncated_horde_call_is_repaired_into_a_tool_call(gw: GatewayProcess) -> None:
    member = "js-cut-horde"
    play(gw, member, '{"tool": "horde", "args": {"action": "idea", "text": "Hard-coded passw')
    name, args = tool_call(ask(gw, member))
    assert (name, args) == ("horde", {"action": "idea", "text": "Hard-coded passw"})
    assert len(sent(gw, member)) == 1


def test_a_truncated_shell_command_is_corrected_never_run(gw: GatewayProcess) -> None:
    member = "js-cut-bash"
    cut = '{"tool": "bash", "args": {"command": "rm -rf build/cache/ol'
    play(gw, member, cut, '{"tool": "bash", "args": {"command": "ls build"}}')
    assert tool_call(ask(gw, member)) == ("bash", {"command": "ls build"})
    first, second = sent(gw, member)
    assert second.body["messages"][: len(first.body["messages"])] == first.body["messages"]
    assert second.body["messages"][-2] == {"role": "assistant", "content": cut}
    correction = last_user(second)
    assert correction.startswith("Your last reply could not be used: the reply was cut off")
    assert correction.endswith("Use a shorter command.")


def test_a_truncated_write_is_corrected_never_run(gw: GatewayProcess) -> None:
    """Running it would leave app.py cut after `def log`."""
    member = "js-cut-write"
    cut = '{"tool": "write", "args": {"path": "app.py", "content": "import os\\n\\ndef log'
    whole = '{"tool": "write", "args": {"path": "app.py", "content": "import os\\n"}}'
    play(gw, member, cut, whole)
    assert tool_call(ask(gw, member)) == ("write", {"path": "app.py", "content": "import os\n"})
    _, second = sent(gw, member)
    correction = last_user(second)
    assert correction.startswith("Your last reply could not be used: the reply was cut off")
    assert correction.endswith("split a long write or edit.")


def test_two_malformed_replies_then_a_valid_one_is_a_tool_call(gw: GatewayProcess) -> None:
    member = "js-malformed-2"
    play(
        gw,
        member,
        "Let me check the files.",
        '{"command": "ls"}',
        '{"tool": "bash", "args": {"command": "ls"}}',
        prompt_tokens=100,
        completion_tokens=10,
    )
    reply = ask(gw, member)
    assert tool_call(reply) == ("bash", {"command": "ls"})
    requests = sent(gw, member)
    assert len(requests) == 3
    assert "no JSON object found" in last_user(requests[1])
    assert 'neither "tool" nor "answer"' in last_user(requests[2])
    assert [m["role"] for m in requests[2].body["messages"][-4:]] == [
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    # One member-facing call, accounted once with the tokens of all three attempts.
    assert (reply["usage"]["prompt_tokens"], reply["usage"]["completion_tokens"]) == (300, 30)
    assert reply["usage"]["horde_cost_usd"] is None
    lines = [json.loads(x) for x in (gw.run_dir / "usage.jsonl").read_text().splitlines()]
    mine = [x for x in lines if x["member"] == member]
    assert [(x["prompt_tokens"], x["completion_tokens"], x["cost_usd"]) for x in mine] == [
        (300, 30, None)
    ]


def test_three_malformed_replies_return_the_models_text(gw: GatewayProcess) -> None:
    member = "js-malformed-3"
    play(gw, member, "I think", "the secret is", "in app.py line 1")
    reply = ask(gw, member)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "in app.py line 1"}
    assert len(sent(gw, member)) == 3


def test_an_exact_repeat_of_a_command_already_run_gets_a_repeat_message(
    gw: GatewayProcess,
) -> None:
    member = "js-repeat"
    earlier = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": "grep -n PASS app.py"})},
    }
    history = [
        *CONVERSATION,
        {"role": "assistant", "content": None, "tool_calls": [earlier]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1:PASSWORD = 'hunter2'"},
    ]
    play(
        gw,
        member,
        '{"tool": "bash", "args": {"command": "grep  -n PASS   app.py"}}',
        '{"tool": "read", "args": {"path": "app.py"}}',
    )
    assert tool_call(ask(gw, member, history)) == ("read", {"path": "app.py"})
    first, second = sent(gw, member)
    # The history was sent as text: the earlier call, its result as data, the list.
    assert json.loads(first.body["messages"][2]["content"]) == {
        "tool": "bash",
        "args": {"command": "grep -n PASS app.py"},
    }
    assert "hunter2" in first.body["messages"][3]["content"]
    assert "Already executed commands (do not repeat):" in last_user(first)
    repeat = last_user(second)
    assert repeat.startswith("You already ran `bash: grep -n PASS app.py`")
    assert "try a different command or route" in repeat


def test_an_answer_object_is_plain_content_that_stops(gw: GatewayProcess) -> None:
    member = "js-answer"
    play(gw, member, '{"answer": "The password is hard-coded on app.py:1.", "done": true}')
    choice = ask(gw, member)["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"] == {
        "role": "assistant",
        "content": "The password is hard-coded on app.py:1.",
    }


def test_streaming_in_json_mode_synthesizes_the_chunks(gw: GatewayProcess) -> None:
    member = "js-stream"
    play(gw, member, '{"tool": "bash", "args": {"command": "cat app.py"}}', prompt_tokens=77)
    client = sdk_client(gw, member)
    stream = client.chat.completions.create(
        model="horde",
        messages=CONVERSATION,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert len(calls) == 1 and calls[0].function is not None
    assert calls[0].function.name == "bash"
    assert json.loads(calls[0].function.arguments or "") == {"command": "cat app.py"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 77
    (request,) = sent(gw, member)
    assert "tools" not in request.body and not request.body.get("stream")


def test_compact_mode_fits_a_long_conversation_in_the_cap(gateways: Gateways) -> None:
    gw = gateways.compact
    member = "js-compact"
    history: list[dict[str, Any]] = list(CONVERSATION)
    for i in range(8):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat part{i}.py"})},
        }
        history.append(
            {"role": "assistant", "content": "Reading the next part.", "tool_calls": [call]}
        )
        history.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{i}",
                "content": f"# part {i}\n" + "x = 1\n" * 400,
            }
        )
    play(gw, member, '{"tool": "bash", "args": {"command": "cat part8.py"}}')
    assert tool_call(ask(gw, member, history)) == ("bash", {"command": "cat part8.py"})
    (request,) = sent(gw, member)
    messages = request.body["messages"]
    assert sum(len(m["content"]) for m in messages) <= 300 * 4
    text = "\n".join(m["content"] for m in messages)
    assert "tools" not in request.body
    assert TASK in text, "the task survives compaction"
    assert "Reply with exactly one JSON object" in text
    assert "cat part7.py" in text, "the newest call is listed"


def test_the_quickstart_loop_reads_every_chunk_of_a_json_protocol_stream(
    gw: GatewayProcess,
) -> None:
    """Synthesized chunks too: no chunk without choices unless usage was asked for."""
    member = "js-stream-quickstart"
    play(gw, member, '{"answer": "All read."}', prompt_tokens=30)
    client = sdk_client(gw, member)
    stream = client.chat.completions.create(
        model="horde", messages=CONVERSATION, tools=TOOLS, stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)

    assert text == "All read."
    assert gw_usage(gw)["members"][member]["prompt_tokens"] == 30
