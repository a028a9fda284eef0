"""The gateway as a standard OpenAI client sees it: the official `openai` SDK (issue 30).

Each test drives the session's gateway process (in front of the scripted stub model)
with the SDK a user would pick up from OpenAI's quickstart: the streaming loop that reads
`chunk.choices[0]` of every chunk, tools single and parallel, streamed tool calls, JSON
mode, a bad key and a model the gateway does not serve. What reached the provider is read
back from the stub's record of the request.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from conftest import GatewayProcess
from support.gateway import BASH, HELLO, READ, sdk_client, usage, usage_lines


def listed_model(gw: GatewayProcess) -> str:
    (model,) = [m.id for m in sdk_client(gw, "lister").models.list()]
    return model


def test_the_quickstart_streaming_loop_reads_every_chunk_and_usage_is_still_counted(
    gateway: GatewayProcess,
) -> None:
    member = "sdk-quickstart"
    gateway.stub.stub.set_scripts(
        {member: [{"content": "Hello there.", "prompt_tokens": 9, "completion_tokens": 3}]}
    )
    stream = sdk_client(gateway, member).chat.completions.create(
        model=listed_model(gateway),
        messages=[{"role": "user", "content": "Say hello"}],
        stream=True,
    )
    printed = []
    for chunk in stream:  # OpenAI's quickstart, as written there
        printed.append(chunk.choices[0].delta.content or "")

    assert "".join(printed) == "Hello there."
    # Not asked for in the request, yet the budget still counts the call.
    (line,) = usage_lines(gateway, member)
    assert (line["prompt_tokens"], line["completion_tokens"]) == (9, 3)
    assert usage(gateway)["members"][member]["calls"] == 1


def test_the_usage_chunk_comes_when_the_client_asks_for_it(gateway: GatewayProcess) -> None:
    member = "sdk-include-usage"
    gateway.stub.stub.set_scripts(
        {member: [{"content": "Counted.", "prompt_tokens": 7, "completion_tokens": 2}]}
    )
    chunks = list(
        sdk_client(gateway, member).chat.completions.create(
            model=listed_model(gateway),
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (7, 2)
    assert all(c.choices for c in chunks[:-1])


def test_one_tool_call_and_the_reply_names_the_listed_model(gateway: GatewayProcess) -> None:
    member = "sdk-one-tool"
    gateway.stub.stub.set_scripts(
        {member: [{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}]}
    )
    model = listed_model(gateway)
    reply = sdk_client(gateway, member).chat.completions.create(
        model=model, messages=HELLO, tools=[BASH]  # type: ignore[list-item]
    )

    assert reply.model == model
    assert reply.choices[0].finish_reason == "tool_calls"
    (call,) = reply.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "bash" and json.loads(call.function.arguments) == {
        "command": "ls"
    }


def play_tool_calls(gateway: GatewayProcess, member: str, *calls: dict[str, Any]) -> None:
    """The stub model answers `member`'s next call with these tool calls, all at once."""
    gateway.stub.stub.set_scripts({member: [{"tool_calls": list(calls)}]})


def test_parallel_tool_calls_come_back_together(gateway: GatewayProcess) -> None:
    member = "sdk-parallel"
    play_tool_calls(
        gateway,
        member,
        {"name": "read", "arguments": {"path": "a.py"}},
        {"name": "read", "arguments": {"path": "b.py"}},
    )
    reply = sdk_client(gateway, member).chat.completions.create(
        model=listed_model(gateway),
        messages=HELLO,
        tools=[READ],  # type: ignore[list-item]
        parallel_tool_calls=True,
    )

    calls = reply.choices[0].message.tool_calls or []
    assert [json.loads(c.function.arguments)["path"] for c in calls] == ["a.py", "b.py"]  # type: ignore[union-attr]
    assert len({c.id for c in calls}) == 2
    (sent,) = gateway.stub.stub.requests_for(member)
    assert sent.body["parallel_tool_calls"] is True


def test_streamed_parallel_tool_calls_assemble_from_their_deltas(gateway: GatewayProcess) -> None:
    member = "sdk-stream-tools"
    play_tool_calls(
        gateway,
        member,
        {"name": "read", "arguments": {"path": "a.py"}},
        {"name": "bash", "arguments": {"command": "grep -rn TODO ."}},
    )
    stream = sdk_client(gateway, member).chat.completions.create(
        model=listed_model(gateway),
        messages=HELLO,
        tools=[READ, BASH],  # type: ignore[list-item]
        stream=True,
    )
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for delta in choice.delta.tool_calls or []:
            entry = calls.setdefault(delta.index, {"name": "", "arguments": ""})
            if delta.function is not None:
                entry["name"] += delta.function.name or ""
                entry["arguments"] += delta.function.arguments or ""

    assert finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())] == [
        ("read", {"path": "a.py"}),
        ("bash", {"command": "grep -rn TODO ."}),
    ]


def test_json_mode_and_the_sampling_parameters_reach_the_provider(gateway: GatewayProcess) -> None:
    member = "sdk-json-mode"
    gateway.stub.stub.set_scripts({member: [{"content": '{"files": 2}'}]})
    reply = sdk_client(gateway, member).chat.completions.create(
        model=listed_model(gateway),
        messages=[{"role": "user", "content": "Count the files; answer in JSON."}],
        response_format={"type": "json_object"},
        max_completion_tokens=64,
        frequency_penalty=0.5,
        presence_penalty=0.25,
        logprobs=True,
        top_logprobs=2,
        n=1,
        seed=7,
    )

    assert json.loads(reply.choices[0].message.content or "") == {"files": 2}
    (sent,) = gateway.stub.stub.requests_for(member)
    assert {k: sent.body.get(k) for k in ("response_format", "max_completion_tokens")} == {
        "response_format": {"type": "json_object"},
        "max_completion_tokens": 64,
    }
    assert (sent.body["frequency_penalty"], sent.body["presence_penalty"]) == (0.5, 0.25)
    assert (sent.body["logprobs"], sent.body["top_logprobs"], sent.body["n"]) == (True, 2, 1)
    assert sent.body["seed"] == 7


def test_a_parameter_the_gateway_cannot_pass_on_is_refused_by_name(
    gateway: GatewayProcess,
) -> None:
    member = "sdk-unknown-param"
    with pytest.raises(openai.BadRequestError) as caught:
        sdk_client(gateway, member).chat.completions.create(
            model=listed_model(gateway), messages=HELLO, extra_body={"temprature": 0.2}
        )

    assert caught.value.status_code == 400
    body: Any = caught.value.body
    assert body["param"] == "temprature"
    assert "'temprature'" in body["message"]
    assert gateway.stub.stub.requests_for(member) == []


def test_a_bad_key_is_an_authentication_error(gateway: GatewayProcess) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk_client(gateway, "sdk-bad-key", key="sk-not-this-runs-token").chat.completions.create(
            model=listed_model(gateway), messages=HELLO
        )

    assert caught.value.status_code == 401
    assert "bearer token" in caught.value.message


def test_an_unknown_model_is_model_not_found_and_reaches_no_provider(
    gateway: GatewayProcess,
) -> None:
    member = "sdk-unknown-model"
    with pytest.raises(openai.NotFoundError) as caught:
        sdk_client(gateway, member).chat.completions.create(model="gpt-4o-mini", messages=HELLO)

    body: Any = caught.value.body
    assert body["code"] == "model_not_found" and body["param"] == "model"
    assert "gpt-4o-mini" in body["message"] and listed_model(gateway) in body["message"]
    assert gateway.stub.stub.requests_for(member) == []


def test_the_documented_alias_horde_is_the_gateways_model(gateway: GatewayProcess) -> None:
    member = "sdk-alias"
    gateway.stub.stub.set_scripts({member: [{"content": "ok"}]})
    reply = sdk_client(gateway, member).chat.completions.create(model="horde", messages=HELLO)

    assert reply.model == listed_model(gateway)
    assert reply.choices[0].message.content == "ok"


def test_the_bearer_scheme_is_case_insensitive(gateway: GatewayProcess) -> None:
    """RFC 7235: `bearer` is the same scheme as `Bearer`."""
    answered = httpx.get(
        gateway.url + "/v1/models", headers={"Authorization": f"bearer {gateway.token}"}
    )
    refused = httpx.get(gateway.url + "/v1/models", headers={"Authorization": "bearer nope"})

    assert answered.status_code == 200
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].lower().startswith("bearer")
