"""The scripted stub model, checked through the clients that will really call it.

Replies are parsed by the real openai SDK (and once by litellm) rather than by hand, so
a shape the SDK would reject fails here and not in a gateway test three layers up.
"""

from __future__ import annotations

import http.client
import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)
from pydantic import ValidationError
from support.gateway import READ

from horde_tui.stubmodel import (
    DONE,
    Step,
    StubModel,
    StubThread,
    ToolCallSpec,
    load_scripts,
    parse_scripts,
    start_stub,
)

READ_TOOL = cast(ChatCompletionFunctionToolParam, READ)  # the gateway tests' read tool
HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Find the bug."}]


@pytest.fixture
def stub() -> Iterator[StubThread]:
    with StubThread() as running:
        yield running


def client(stub: StubThread, api_key: str = "x") -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.api_base, api_key=api_key, max_retries=0)


def http_json(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    """One request with http.client; the status and the parsed JSON answer."""
    split = url.removeprefix("http://").split("/", 1)
    conn = http.client.HTTPConnection(split[0], timeout=10)
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    conn.request(method, "/" + split[1], body=data)
    response = conn.getresponse()
    result = response.status, json.loads(response.read())
    conn.close()
    return result


def test_non_streaming_reply_with_tool_calls(stub: StubThread) -> None:
    stub.stub.set_scripts(
        {
            "*": [
                Step(
                    content="Reading two files.",
                    tool_calls=[
                        ToolCallSpec(name="read", arguments={"path": "a.py"}),
                        ToolCallSpec(name="read", arguments='{"path": "b.py"}'),
                    ],
                    prompt_tokens=120,
                    completion_tokens=30,
                )
            ]
        }
    )
    reply = client(stub).chat.completions.create(
        model="any-name", messages=HELLO, tools=[READ_TOOL]
    )
    assert reply.object == "chat.completion"
    assert reply.model == "any-name"
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Reading two files."
    calls = [
        c
        for c in choice.message.tool_calls or []
        if isinstance(c, ChatCompletionMessageFunctionToolCall)
    ]
    assert [c.function.name for c in calls] == ["read", "read"]
    assert [json.loads(c.function.arguments) for c in calls] == [{"path": "a.py"}, {"path": "b.py"}]
    assert all(c.id.startswith("call_") for c in calls)
    assert len({c.id for c in calls}) == 2
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (
        120,
        30,
        150,
    )
    done = client(stub).chat.completions.create(model="m", messages=HELLO)
    assert done.choices[0].message.content == DONE.content == "Done."
    assert done.choices[0].message.tool_calls is None
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.prompt_tokens > 0


def test_streaming_reply_with_tool_calls_and_usage(stub: StubThread) -> None:
    arguments = {"path": "src/some/rather/long/path.py"}
    stub.stub.set_scripts(
        {
            "*": [
                {
                    "content": "Let me look at the file first.",
                    "tool_calls": [{"name": "read", "arguments": arguments}],
                    "prompt_tokens": 7,
                    "completion_tokens": 9,
                }
            ]
        }
    )
    stream = client(stub).chat.completions.create(
        model="m",
        messages=HELLO,
        tools=[READ_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant"
    content_deltas = [
        c.choices[0].delta.content for c in with_choices if c.choices[0].delta.content
    ]
    assert len(content_deltas) > 1, "content should arrive in several deltas"
    assert "".join(content_deltas) == "Let me look at the file first."
    call_deltas = [tc for c in with_choices for tc in c.choices[0].delta.tool_calls or []]
    assert call_deltas[0].id is not None and call_deltas[0].id.startswith("call_")
    assert call_deltas[0].function is not None and call_deltas[0].function.name == "read"
    assert {tc.index for tc in call_deltas} == {0}
    joined = "".join(tc.function.arguments or "" for tc in call_deltas if tc.function)
    assert len(call_deltas) > 2, "arguments should arrive in pieces"
    assert json.loads(joined) == arguments
    assert with_choices[-1].choices[0].finish_reason == "tool_calls"
    assert [c.usage for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (7, 9)


def test_stream_without_include_usage_sends_no_usage_chunk(stub: StubThread) -> None:
    stub.stub.set_scripts({"*": [{"content": "Plain answer."}]})
    chunks = list(client(stub).chat.completions.create(model="m", messages=HELLO, stream=True))
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Plain answer."


def test_each_member_walks_its_own_script(stub: StubThread) -> None:
    stub.stub.set_scripts(
        {
            "member-1": [{"content": "one-a"}, {"content": "one-b"}],
            "member-2": [{"content": "two", "repeat": 2}],
            "*": [{"content": "anyone"}],
        }
    )
    api = client(stub)

    def ask(user: str | None = None, header: str | None = None) -> str | None:
        reply = api.chat.completions.create(
            model="m",
            messages=HELLO,
            user=user or openai.omit,
            extra_headers={"x-horde-member": header} if header else None,
        )
        return reply.choices[0].message.content

    assert ask("member-1") == "one-a"
    assert ask("member-2") == "two"
    assert ask(header="member-1") == "one-b"  # the header names the member too
    assert ask("member-2") == "two"  # repeat: 2
    assert ask("member-2") == "Done."
    assert ask("member-1", header="member-2") == "Done."  # `user` wins over the header
    assert ask("member-3") == "anyone"  # the fallback script, its own copy
    assert ask("member-4") == "anyone"
    assert ask("member-3") == "Done."
    assert ask() == "anyone"  # no name at all: member "*"
    assert [r.member for r in stub.stub.requests_for("member-2")] == ["member-2"] * 3
    stub.stub.set_scripts({"member-1": [{"content": "again"}]})
    assert ask("member-1") == "again", "new scripts restart every member"
    assert ask("member-3") == "Done.", "replaced scripts drop the old fallback"


def test_error_steps_become_sdk_errors(stub: StubThread) -> None:
    stub.stub.set_scripts(
        {
            "*": [
                {"status": 429},
                {"status": 500, "error_message": "upstream exploded"},
                {"content": "recovered"},
                {"status": 429, "retry_after": "3600"},
            ]
        }
    )
    api = client(stub)
    with pytest.raises(openai.RateLimitError) as limited:
        api.chat.completions.create(model="m", messages=HELLO)
    assert limited.value.response.headers["retry-after"] == "0"
    assert limited.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError) as failed:
        api.chat.completions.create(model="m", messages=HELLO, stream=True)
    assert failed.value.status_code == 500
    assert failed.value.message == "Error code: 500 - upstream exploded"
    assert failed.value.type == "server_error"
    reply = api.chat.completions.create(model="m", messages=HELLO)
    assert reply.choices[0].message.content == "recovered"
    with pytest.raises(openai.RateLimitError) as quota:
        api.chat.completions.create(model="m", messages=HELLO)
    assert quota.value.response.headers["retry-after"] == "3600"


def test_token_guards_the_openai_endpoints() -> None:
    with StubThread({"*": [{"content": "hi"}]}, token="sekret") as stub:
        with pytest.raises(openai.AuthenticationError) as denied:
            client(stub, api_key="wrong").chat.completions.create(model="m", messages=HELLO)
        assert denied.value.code == "invalid_api_key"
        status, answer = http_json(stub.url + "/v1/chat/completions", "POST", {"messages": []})
        assert (status, answer["error"]["code"]) == (401, "invalid_api_key")
        with pytest.raises(openai.AuthenticationError):
            client(stub, api_key="wrong").models.list()
        api = client(stub, api_key="sekret")
        assert [m.id for m in api.models.list()] == ["stub"]
        assert (
            api.chat.completions.create(model="m", messages=HELLO).choices[0].message.content
            == "hi"
        )
        assert [r.headers.get("authorization") for r in stub.stub.requests] == [
            "Bearer wrong",
            None,
            "Bearer sekret",
        ]


def test_policy_comes_before_the_scripts() -> None:
    seen: list[tuple[str, int]] = []

    def policy(member: str, body: dict[str, Any]) -> Step | None:
        seen.append((member, len(body["messages"])))
        return Step(content="from policy") if member == "demo" else None

    with StubThread({"*": [{"content": "from script"}]}, policy=policy) as running:
        api = client(running)
        for user, expected in (
            ("demo", "from policy"),
            ("other", "from script"),
            ("demo", "from policy"),
        ):
            reply = api.chat.completions.create(model="m", messages=HELLO, user=user)
            assert reply.choices[0].message.content == expected
    assert seen == [("demo", 1), ("other", 1), ("demo", 1)]


def test_delay_postpones_the_answer(stub: StubThread) -> None:
    stub.stub.set_scripts({"*": [{"content": "late", "delay_ms": 150}]})
    started = time.monotonic()
    reply = client(stub).chat.completions.create(model="m", messages=HELLO)
    assert reply.choices[0].message.content == "late"
    assert time.monotonic() - started >= 0.15


def test_requests_are_recorded_with_body_and_headers(stub: StubThread) -> None:
    client(stub).chat.completions.create(
        model="m",
        messages=HELLO,
        user="member-5",
        temperature=0.5,
        extra_headers={"X-Trace": "abc"},
    )
    (recorded,) = stub.stub.requests
    assert recorded.member == "member-5"
    assert recorded.body["messages"] == HELLO
    assert recorded.body["temperature"] == 0.5
    assert recorded.headers["x-trace"] == "abc"
    status, listed = http_json(stub.url + "/stub/requests?member=member-5")
    assert status == 200
    assert listed["requests"][0]["body"]["user"] == "member-5"
    assert http_json(stub.url + "/stub/requests?member=nobody")[1] == {"requests": []}


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/chat/completions", b"{not json", 400),
        ("POST", "/v1/chat/completions", [1, 2], 400),
        ("POST", "/v1/chat/completions", {"model": "m"}, 400),
        ("GET", "/v1/chat/completions", None, 405),
        ("GET", "/v1/nowhere", None, 404),
        ("POST", "/stub/script", {"m": [{"contnet": "typo"}]}, 400),
        ("POST", "/stub/script", b"[", 400),
    ],
)
def test_bad_requests_get_openai_style_errors(
    stub: StubThread, method: str, path: str, body: Any, status: int
) -> None:
    got, answer = http_json(stub.url + path, method, body)
    assert got == status
    assert set(answer["error"]) == {"message", "type", "param", "code"}


def test_scripts_are_validated_strictly(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        parse_scripts({"m": [{"content": "x", "unknown": 1}]})
    with pytest.raises(ValidationError):
        parse_scripts({"m": [{"status": 200}]})
    with pytest.raises(ValidationError):
        parse_scripts({"m": [{"repeat": 0}]})
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"*": [{"tool_calls": [{"name": "bash"}]}]}))
    (step,) = load_scripts(path)["*"]
    assert step.tool_calls[0].arguments_json() == "{}"
    model = StubModel({"a": [step, {"content": "two"}]})
    assert model.next_step("a", {}) is step
    assert model.next_step("a", {}).content == "two"
    assert model.next_step("a", {}) is DONE


async def test_start_stub_serves_async_clients_in_the_running_loop() -> None:
    scripts = {"*": [{"content": "streamed in-loop"}]}
    async with start_stub(scripts, token="t") as running:
        assert running.model == "openai/stub"
        assert running.api_base == running.url + "/v1"
        api = openai.AsyncOpenAI(base_url=running.api_base, api_key="t", max_retries=0)
        stream = await api.chat.completions.create(model="m", messages=HELLO, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        assert text == "streamed in-loop"
        await api.close()
        assert running.stub.requests[0].body["stream"] is True


def wait_line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    """The next stdout line, failing instead of hanging if the process prints nothing."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the stub process printed nothing"
    return proc.stdout.readline()


def test_runs_as_a_process_driven_over_http(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"*": [{"content": "from the file"}]}))
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "horde_tui.stubmodel", "--port", "0"),
            *("--script", str(script), "--token", "tok", "--port-file", str(port_file)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = wait_line(proc)
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.split()[-1]
        assert url.endswith(f":{port_file.read_text().strip()}")
        api = openai.OpenAI(base_url=url + "/v1", api_key="tok", max_retries=0)
        first = api.chat.completions.create(model="m", messages=HELLO, user="w1")
        assert first.choices[0].message.content == "from the file"
        status, _ = http_json(
            url + "/stub/script", "POST", {"w1": [{"tool_calls": [{"name": "read"}]}]}
        )
        assert status == 200
        second = api.chat.completions.create(model="m", messages=HELLO, user="w1")
        assert second.choices[0].message.tool_calls is not None
        status, recorded = http_json(url + "/stub/requests")
        assert [r["member"] for r in recorded["requests"]] == ["w1", "w1"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def test_process_refuses_a_bad_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"*": [{"contents": "typo"}]}')
    done = subprocess.run(
        [sys.executable, "-m", "horde_tui.stubmodel", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "cannot load" in done.stderr


def test_litellm_real_http_path_reaches_the_stub(
    stub: StubThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """litellm's `openai/...` provider with `api_base`: the exact path the gateway uses."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download
    import litellm

    litellm.suppress_debug_info = True
    call = {"tool_calls": [{"name": "read", "arguments": {"path": "x.py"}}]}
    stub.stub.set_scripts(
        {"member-1": [call, {**call, "prompt_tokens": 40, "completion_tokens": 4}]}
    )
    common: dict[str, Any] = {
        "model": stub.model,
        "api_base": stub.api_base,
        "api_key": "x",
        "messages": HELLO,
        "tools": [READ_TOOL],
        "max_retries": 0,
        # litellm drops `user=` for models outside OpenAI's catalog (like "stub"), so
        # the member's name travels in a header; extra_headers reach the server as-is.
        "extra_headers": {"x-horde-member": "member-1"},
    }
    reply: Any = litellm.completion(**common)
    (tool_call,) = reply.choices[0].message.tool_calls
    assert tool_call.function.name == "read"
    assert json.loads(tool_call.function.arguments) == {"path": "x.py"}
    assert reply.choices[0].finish_reason == "tool_calls"

    chunks = list(litellm.completion(**common, stream=True, stream_options={"include_usage": True}))
    rebuilt: Any = litellm.stream_chunk_builder(chunks)  # litellm's unions hide the shape
    (streamed_call,) = rebuilt.choices[0].message.tool_calls
    assert json.loads(streamed_call.function.arguments) == {"path": "x.py"}
    assert (rebuilt.usage.prompt_tokens, rebuilt.usage.completion_tokens) == (40, 4)

    plain, streamed = stub.stub.requests_for("member-1")
    assert plain.body["model"] == "stub"
    assert plain.body["tools"] == [READ_TOOL]
    assert "stream" not in plain.body
    assert streamed.body["stream"] is True
    assert streamed.body["stream_options"] == {"include_usage": True}
    assert streamed.headers["authorization"] == "Bearer x"
