"""The AI Horde provider (`aihorde/<model>`) against the fake AI Horde on 127.0.0.1.

Two levels: the job client in this process (submit, poll, cancel, the error mapping),
then a real gateway process whose litellm routes `aihorde/...` to the provider: what a
member gets back (a tool call read from the model's JSON, a stream), what the fake
received (the prompt, the headers, the caps), and what was accounted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.aihorde import ANON_KEY, FakeHorde, FakeHordeThread, FakeModel, json_tool_answer
from support.gateway import BASH, error_of, post, usage, usage_lines

from horde_tui import __version__
from horde_tui.gateway import aihorde
from horde_tui.gateway.aihorde import Client, HordeError
from horde_tui.stubmodel import StubThread

SKYFALL = "aphrodite/TheDrummer/Skyfall-31B-v4.2"
IDLE = "koboldcpp/Nobody-7B"
HELLO = [{"role": "user", "content": "Review app.py"}]


def fake(**extra: Any) -> FakeHorde:
    models = [FakeModel(SKYFALL, workers=2, eta=40), FakeModel(IDLE, workers=0)]
    return FakeHorde(models=models, answer=extra.pop("answer", json_tool_answer), **extra)


@pytest.fixture
def horde_fake() -> Iterator[FakeHordeThread]:
    with FakeHordeThread(fake(polls_to_done=3, status_cache_s=0.05)) as served:
        yield served


def quick() -> Client:
    return Client(deadline_s=20, poll_min_s=0.05, poll_max_s=0.2)


def generate(client: Client, served: FakeHordeThread, model: str = SKYFALL, **kw: Any) -> Any:
    return asyncio.run(
        client.generate(aihorde.PREFIX + model, HELLO, served.api_base, kw.pop("key", None), **kw)
    )


# -- the job client ------------------------------------------------------------------------------


def test_a_job_is_polled_until_done_with_the_client_agent_and_anonymous_key(
    horde_fake: FakeHordeThread,
) -> None:
    result = generate(quick(), horde_fake)
    assert result.text.startswith('{"tool": "horde"')
    submit = horde_fake.fake.accepted()[0]
    assert submit.headers["apikey"] == ANON_KEY
    assert submit.headers["client-agent"].startswith(f"horde-tui:{__version__}:")
    assert submit.body["models"] == [SKYFALL]
    # Skyfall is a Mistral model: its instruct format, and the reply starts after it.
    assert submit.body["prompt"] == "[INST] Review app.py [/INST]"
    assert "[INST]" in submit.body["params"]["stop_sequence"]
    # Anonymous: within the anonymous allowance, with a small generation.
    assert submit.body["params"]["max_context_length"] <= 512
    assert submit.body["params"]["max_length"] <= aihorde.COMPACT_MAX_LENGTH
    job = submit.job
    polls = [t for j, t in horde_fake.fake.polls if j == job]
    assert len(polls) >= 3  # the queue advanced through every poll
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert horde_fake.fake.unfinished() == [] and quick().live == {}


def test_polls_wait_for_the_status_cache_and_the_wait_time_asked_for(
    horde_fake: FakeHordeThread,
) -> None:
    """The status is cached (here 0.3 s): a client polling faster only sees old news."""
    horde_fake.fake.status_cache_s = 0.3
    client = Client(deadline_s=20, poll_min_s=0.3, poll_max_s=1.0)
    generate(client, horde_fake)
    times = [t for _, t in horde_fake.fake.polls]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps and min(gaps) >= 0.25, gaps


def test_a_registered_key_gets_the_live_workers_caps(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.models[0].max_context_length = 8192
    horde_fake.fake.models[0].max_length = 300
    generate(quick(), horde_fake, key="registered-key-1234", max_tokens=1000)
    submit = horde_fake.fake.accepted()[0]
    assert submit.headers["apikey"] == "registered-key-1234"
    assert submit.body["params"]["max_context_length"] == 8192
    assert submit.body["params"]["max_length"] == 300


def test_kudos_upfront_is_one_line_saying_what_to_do(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.anon_cap = 100
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    err = caught.value
    assert err.status_code == 403
    assert "\n" not in err.message
    for needle in ("KudosUpfront", "shorten the context", "registered key", "allow_downgrade"):
        assert needle in err.message


def test_a_429_carries_its_retry_after_for_the_gateways_backoff(
    horde_fake: FakeHordeThread,
) -> None:
    horde_fake.fake.burst_429 = 1
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    assert caught.value.status_code == 429
    assert caught.value.response.headers.get("retry-after") == "1"


def test_a_faulted_job_is_a_model_error_naming_the_model(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.fault_next = 1
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    assert caught.value.status_code == 502 and SKYFALL in caught.value.message
    assert "faulted" in caught.value.message


def test_a_model_with_no_worker_is_refused_and_its_job_cancelled(
    horde_fake: FakeHordeThread,
) -> None:
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake, model=IDLE)
    assert caught.value.status_code == 404 and IDLE in caught.value.message
    assert "horde-tui models" in caught.value.message
    assert horde_fake.fake.cancels == [horde_fake.fake.accepted()[0].job]


def test_the_deadline_cancels_the_job(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.polls_to_done = 10_000
    client = Client(deadline_s=0.4, poll_min_s=0.05, poll_max_s=0.1)
    with pytest.raises(HordeError) as caught:
        generate(client, horde_fake)
    assert caught.value.status_code == 504 and "0.4 s" in caught.value.message
    assert horde_fake.fake.cancels == [horde_fake.fake.accepted()[0].job]
    assert horde_fake.fake.unfinished() == []


def test_a_caller_that_gives_up_cancels_the_job_and_cancel_all_ends_the_rest(
    horde_fake: FakeHordeThread,
) -> None:
    horde_fake.fake.polls_to_done = 10_000
    client = quick()

    async def scenario() -> int:
        first = asyncio.create_task(
            client.generate(aihorde.PREFIX + SKYFALL, HELLO, horde_fake.api_base, None)
        )
        second = asyncio.create_task(
            client.generate(aihorde.PREFIX + SKYFALL, HELLO, horde_fake.api_base, None)
        )
        while len(client.live) < 2:
            await asyncio.sleep(0.02)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        ended = await client.cancel_all()
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        return ended

    assert asyncio.run(scenario()) == 1
    assert sorted(horde_fake.fake.cancels) == sorted(s.job for s in horde_fake.fake.accepted())
    assert horde_fake.fake.unfinished() == []


def test_instruct_formats_and_the_prompt_fit() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]
    llama, stops = aihorde.build_prompt(messages, "aihorde/koboldcpp/Llama-3.1-8B-Instruct")
    assert llama.startswith("<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>")
    assert llama.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert "<|eot_id|>" in stops
    plain, _ = aihorde.build_prompt(messages, "aihorde/koboldcpp/Unknown-Model")
    assert plain.endswith("### User:\nbye\n\n### Assistant:\n")
    fitted = aihorde.fit_prompt("A" * 1000 + "Z" * 1000, 100)
    assert len(fitted) <= 400 and fitted.startswith("A") and fitted.endswith("Z")


def test_models_are_sorted_by_availability_and_a_dead_model_warned() -> None:
    live = aihorde.parse_models(
        [
            {"name": "slow", "count": 1, "eta": 300, "queued": 10},
            {"name": "fast", "count": 3, "eta": 5, "queued": 0},
            {"name": "none", "count": 0, "eta": 0},
            "junk",
        ]
    )
    assert [m.name for m in aihorde.by_availability(live)] == ["fast", "slow", "none"]
    assert aihorde.no_worker_warning("aihorde/fast", live) is None
    line = aihorde.no_worker_warning("aihorde/none", live)
    assert line is not None and "none" in line and "fast" in line and "\n" not in line
    assert aihorde.no_worker_warning("aihorde/typo", live) is not None


def test_importing_the_provider_does_not_import_litellm() -> None:
    code = (
        "import sys, horde_tui.gateway.aihorde; "
        "print('litellm' in sys.modules, 'aiohttp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- through a gateway process ----------------------------------------------------------------


@pytest.fixture
def horde_gateway(
    stub_model: StubThread, tmp_path: Path
) -> Iterator[tuple[GatewayProcess, FakeHordeThread]]:
    with FakeHordeThread(fake(polls_to_done=1)) as served:
        gw = start_gateway(
            stub_model,
            tmp_path,
            HORDE_MODEL=f"aihorde/{SKYFALL}",
            HORDE_API_BASE=served.api_base,
            HORDE_API_KEY="",
        )
        try:
            yield gw, served
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)


def test_a_member_gets_a_tool_call_from_the_models_json_under_the_anonymous_cap(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    gw, served = horde_gateway
    long_task = "Review app.py for secrets. " * 200  # far over the anonymous 512 tokens
    body = {"model": "horde", "messages": [{"role": "user", "content": long_task}], "tools": [BASH]}
    served.fake.answer = lambda prompt, params: '{"tool": "bash", "command": "grep -n PASS app.py"}'
    resp = post(gw, "member-a", body)
    assert resp.status_code == 200, resp.text
    call = resp.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "bash"
    assert json.loads(call["arguments"]) == {"command": "grep -n PASS app.py"}
    submit = served.fake.accepted()[-1]
    params = submit.body["params"]
    # Compact mode: the prompt and its generation fit the anonymous allowance.
    assert len(submit.body["prompt"]) // 4 + params["max_length"] <= 512
    assert "Review app.py for secrets." in submit.body["prompt"]  # the task is kept
    lines = usage_lines(gw, "member-a")
    assert len(lines) == 1 and lines[0]["prompt_tokens"] > 0
    assert lines[0]["cost_usd"] == 0.0  # AI Horde spends kudos, not dollars


def test_a_429_burst_is_retried_through_the_shared_limiter(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    gw, served = horde_gateway
    served.fake.burst_429 = 2
    resp = post(gw, "member-b", {"model": "horde", "messages": HELLO})
    assert resp.status_code == 200, resp.text
    statuses = [s.status for s in served.fake.submits]
    assert statuses[:3] == [429, 429, 202]
    limiters = usage(gw)["limiters"]
    # The shared limiter saw the 429s: its limit came down for the AI Horde key.
    assert limiters[f"aihorde@{served.api_base}"]["decreases"] >= 1, limiters


def test_kudos_upfront_reaches_the_member_as_one_line(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    gw, served = horde_gateway
    served.fake.anon_cap = 50
    resp = post(gw, "member-c", {"model": "horde", "messages": HELLO})
    assert resp.status_code == 403
    message = error_of(resp)
    assert "KudosUpfront" in message and "registered key" in message and "\n" not in message


def test_a_model_with_no_worker_is_a_model_error(stub_model: StubThread, tmp_path: Path) -> None:
    with FakeHordeThread(fake(polls_to_done=1)) as served:
        gw = start_gateway(
            stub_model,
            tmp_path,
            HORDE_MODEL=f"aihorde/{IDLE}",
            HORDE_API_BASE=served.api_base,
            HORDE_API_KEY="",
        )
        try:
            resp = post(gw, "member-d", {"model": "horde", "messages": HELLO})
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)
    assert resp.status_code == 404 and IDLE in error_of(resp)


def test_a_streamed_request_is_answered_as_one_stream_once_done(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    gw, served = horde_gateway
    served.fake.answer = lambda prompt, params: '{"answer": "all good", "done": true}'
    body = {
        "model": "horde",
        "messages": HELLO,
        "tools": [BASH],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream(
        "POST",
        gw.url + "/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {gw.token}", "X-Horde-Member": "member-e"},
        timeout=60,
    ) as resp:
        assert resp.status_code == 200
        events = [line[6:] for line in resp.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
    )
    assert text == "all good"
    assert any(c.get("usage") for c in chunks)


def test_a_stopping_gateway_cancels_the_jobs_in_flight(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    gw, served = horde_gateway
    served.fake.polls_to_done = 10_000
    with httpx.Client(timeout=60) as client:
        pending = client.build_request(
            "POST",
            gw.url + "/v1/chat/completions",
            json={"model": "horde", "messages": HELLO},
            headers={"Authorization": f"Bearer {gw.token}", "X-Horde-Member": "member-f"},
        )
        import threading

        thread = threading.Thread(target=lambda: _send_quietly(client, pending), daemon=True)
        thread.start()
        from support.processes import wait_until

        assert wait_until(lambda: len(served.fake.accepted()) == 1, 30)
        gw.proc.terminate()
        gw.proc.wait(10)
    assert served.fake.cancels == [served.fake.accepted()[0].job]
    assert served.fake.unfinished() == []


def _send_quietly(client: httpx.Client, request: httpx.Request) -> None:
    try:
        client.send(request)
    except httpx.HTTPError:
        pass


def test_a_registered_key_compacts_only_past_the_live_workers_context(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """With a registered key the cap is the workers' context (here 8,000 tokens, from
    `/v2/workers`, not a constant): a short conversation goes whole, a long one is
    rebuilt compact (task, calls run, last result) rather than cut in the middle."""
    swarm = fake(polls_to_done=1)
    swarm.models[0].max_context_length = 8000
    swarm.answer = lambda prompt, params: '{"tool": "bash", "command": "ls"}'
    with FakeHordeThread(swarm) as served:
        gw = start_gateway(
            stub_model,
            tmp_path,
            HORDE_MODEL=f"aihorde/{SKYFALL}",
            HORDE_API_BASE=served.api_base,
            HORDE_API_KEY="registered-key",
        )
        try:
            short = post(gw, "member-g", {"model": "horde", "messages": HELLO, "tools": [BASH]})
            history: list[dict[str, Any]] = [{"role": "user", "content": "Review app.py"}]
            for i in range(12):
                call = {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}"})},
                }
                history += [
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 600},
                ]
            long = post(gw, "member-g", {"model": "horde", "messages": history, "tools": [BASH]})
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)
        first, second = served.fake.accepted()[-2:]
    assert short.status_code == 200 and long.status_code == 200, long.text
    assert first.body["params"]["max_context_length"] == 8000
    assert "# Tool protocol" in first.body["prompt"]  # whole: the full protocol section
    prompt, params = second.body["prompt"], second.body["params"]
    assert len(prompt) // 4 + params["max_length"] <= 8000
    assert "Task:\nReview app.py" in prompt and "cat f11" in prompt and "[…]" not in prompt


# -- a member that gives up, a deadline that expires -------------------------------------------

GIVE_UP = """
import sys
from horde_tui.member.client import GatewayClient, GatewayError
url, token, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
client = GatewayClient(url, token, "member-h", timeout_s=timeout)
try:
    client.chat([{"role": "user", "content": "Review app.py"}], [])
except GatewayError as exc:
    print("gave up:", exc.message, flush=True)
"""


@pytest.mark.parametrize("how", ["killed", "timed-out"])
def test_a_member_that_gives_up_mid_call_cancels_its_job_at_once(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread], how: str
) -> None:
    """The member's process is killed, or its own HTTP timeout closes the request: the
    job is cancelled within seconds, not at the 6-minute deadline or the run's end."""
    from support.processes import wait_until

    gw, served = horde_gateway
    # A first call waits out litellm's import, so the member's 3 s are the job's alone.
    assert post(gw, "member-h", {"model": "horde", "messages": HELLO}).status_code == 200
    served.fake.polls_to_done = 10_000
    timeout = "600" if how == "killed" else "3"
    member = subprocess.Popen(
        [sys.executable, "-c", GIVE_UP, gw.url, gw.token, timeout],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(lambda: len(served.fake.accepted()) == 2, 30)
        if how == "killed":
            member.kill()
        member.wait(30)
        job = served.fake.accepted()[1].job
        assert wait_until(lambda: served.fake.cancels == [job], 5), served.fake.cancels
    finally:
        member.kill()
        member.wait(10)
    assert served.fake.unfinished() == []
    assert gw.proc.poll() is None  # the gateway serves on
    served.fake.polls_to_done = 1
    assert post(gw, "member-i", {"model": "horde", "messages": HELLO}).status_code == 200


def test_an_expired_deadline_is_one_error_and_not_retried(
    stub_model: StubThread, tmp_path: Path
) -> None:
    """The job was cancelled at its deadline: a retry would queue it again (up to four
    deadlines for one call); the member gets one 504 saying what happened instead."""
    with FakeHordeThread(fake(polls_to_done=10_000)) as served:
        gw = start_gateway(
            stub_model,
            tmp_path,
            HORDE_MODEL=f"aihorde/{SKYFALL}",
            HORDE_API_BASE=served.api_base,
            HORDE_API_KEY="",
            HORDE_AIHORDE_DEADLINE_S="1",
        )
        try:
            resp = post(gw, "member-j", {"model": "horde", "messages": HELLO})
        finally:
            gw.proc.terminate()
            gw.proc.wait(10)
        accepted = served.fake.accepted()
        cancels = served.fake.cancels
    assert resp.status_code == 504, resp.text
    message = error_of(resp)
    assert "within 1 s" in message and "cancelled" in message and "\n" not in message
    assert len(accepted) == 1, [s.status for s in served.fake.submits]
    assert cancels == [accepted[0].job]


@pytest.mark.parametrize("tool", ["links", "sitemap"])
def test_a_fetch_cut_at_max_length_is_asked_again_never_fetched(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread], tool: str
) -> None:
    """A worker stops at `max_length` (128 tokens anonymous): a `links` call cut inside
    its URL names another page, or another host (`https://exa`), which the member would
    fetch, a request to a site nobody chose. So it is sent back like a cut command, as
    horde.py drops a cut string, and the whole URL of the next reply is what runs."""
    from horde_tui.member.tools import TOOL_DEFINITIONS

    gw, served = horde_gateway
    replies = iter(
        [
            f'{{"tool": "{tool}", "url": "https://example.org/docs/ind',
            f'{{"tool": "{tool}", "url": "https://example.org/docs/index.html"}}',
        ]
    )
    served.fake.answer = lambda prompt, params: next(replies)
    tools = [d for d in TOOL_DEFINITIONS if d["function"]["name"] == tool]
    resp = post(gw, "member-k", {"model": "horde", "messages": HELLO, "tools": tools})
    assert resp.status_code == 200, resp.text
    call = resp.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == tool
    assert json.loads(call["arguments"]) == {"url": "https://example.org/docs/index.html"}
    second = served.fake.accepted()[-1]
    assert "the reply was cut off" in second.body["prompt"]
    assert "Send the whole URL" in second.body["prompt"]
