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
import re
import subprocess
import sys
import time
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
    assert "allow_downgrade" not in submit.body  # the setting is off
    job = submit.job
    polls = [t for j, t in horde_fake.fake.polls if j == job]
    assert len(polls) >= 3  # the queue advanced through every poll
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert horde_fake.fake.unfinished() == [] and quick().live == {}


@pytest.mark.parametrize(
    ("queued", "down", "length"),
    [(0, set(), 512), (400, set(), 256), (0, {"/api/v2/status/performance"}, 256)],
    ids=["idle", "loaded", "unknown"],
)
def test_the_anonymous_cap_is_on_max_length_alone_from_the_queue(
    horde_fake: FakeHordeThread, queued: int, down: set[str], length: int
) -> None:
    """The anonymous key may ask for any context; only `max_length` is capped, at 512 on
    an idle horde and down to 256 under load (read from `/v2/status/performance`; 256
    when it cannot be read). None of these is refused."""
    horde_fake.fake.models[0].max_context_length = 8192
    horde_fake.fake.queued_text_requests = queued
    horde_fake.fake.down = down
    generate(quick(), horde_fake)
    [submit] = horde_fake.fake.submits
    assert submit.status == 202, submit.message
    assert submit.body["params"]["max_context_length"] == 8192
    assert submit.body["params"]["max_length"] == length


def test_the_context_is_the_smallest_of_the_models_workers(horde_fake: FakeHordeThread) -> None:
    """Any worker of the model can take the job: none is left out by a larger context."""
    horde_fake.fake.models[0].contexts = (8192, 2048)
    generate(quick(), horde_fake, key="registered-key-1234")
    assert horde_fake.fake.accepted()[0].body["params"]["max_context_length"] == 2048


def test_submits_are_paced_under_the_servers_per_ip_limit(horde_fake: FakeHordeThread) -> None:
    """Five calls at once: the server takes 2 submits a second from one IP, so the client
    spaces them rather than collect 429s."""
    client = quick()

    async def five() -> list[Any]:
        calls = [
            client.generate(aihorde.PREFIX + SKYFALL, HELLO, horde_fake.api_base, None)
            for _ in range(5)
        ]
        return await asyncio.gather(*calls)

    assert len(asyncio.run(five())) == 5
    submits = horde_fake.fake.submits
    assert [s.status for s in submits] == [202] * 5, [s.message for s in submits]
    times = sorted(s.at for s in submits)
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.45, times


def test_the_submit_rate_limit_is_named_as_the_servers(horde_fake: FakeHordeThread) -> None:
    """Another program on this IP used the second's two submits: the client's is refused
    with the server's 429 (a `message`, no `rc`), named for what it is."""
    body = {"prompt": "hi", "models": [SKYFALL], "params": {"max_length": 16}}
    with httpx.Client(timeout=10) as other:
        while time.time() % 1 > 0.2:  # the start of a window, so it cannot roll over
            time.sleep(0.01)
        for _ in range(2):
            other.post(horde_fake.api_base + "/v2/generate/text/async", json=body)
        with pytest.raises(HordeError) as caught:
            asyncio.run(
                quick()._submit(horde_fake.api_base, None, {**body, "prompt": "me"}, SKYFALL)
            )
    err = caught.value
    assert err.status_code == 429
    assert "the server's submit rate limit" in err.message and "2 per 1 second" in err.message
    assert err.response.headers.get("retry-after") in ("0", "1")


def test_a_processing_job_is_read_soon_whatever_its_wait_time(horde_fake: FakeHordeThread) -> None:
    """Once a worker has the job, `wait_time` is its guess of the time left (127 s for a
    new worker, for a 0.2 s generation): the client polls every 1-2 s then, within the
    server's 60 polls a minute per job."""
    fake = horde_fake.fake
    fake.polls_to_done, fake.processing_s, fake.processing_wait = 1, 0.2, 127
    generate(Client(deadline_s=60), horde_fake)
    [job] = fake.jobs.values()
    assert job.started is not None and job.done_at is not None
    assert job.done_at - (job.started + fake.processing_s) < 2.5
    times = [t for _, t in fake.polls]
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.95, times
    assert fake.poll_429s == 0


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


def test_kudos_upfront_says_what_helps_and_the_key_is_capped_after(
    horde_fake: FakeHordeThread,
) -> None:
    """A registered key without kudos under load (cap 256): refused once, with what helps
    (a lower max_length, a key with kudos, allow_downgrade); its next call fits the cap."""
    horde_fake.fake.queued_text_requests = 300
    horde_fake.fake.zero_kudos_keys = {"broke-key-1234"}
    client = quick()
    with pytest.raises(HordeError) as caught:
        generate(client, horde_fake, key="broke-key-1234")
    err = caught.value
    assert err.status_code == 403 and "\n" not in err.message
    for needle in ("KudosUpfront", "max_length", "registered key with kudos", "allow_downgrade"):
        assert needle in err.message
    assert "shorten the context" not in err.message
    generate(client, horde_fake, key="broke-key-1234")
    assert horde_fake.fake.accepted()[-1].body["params"]["max_length"] <= 256


def test_allow_downgrade_is_sent_when_on(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.queued_text_requests = 300
    horde_fake.fake.zero_kudos_keys = {"broke-key-1234"}
    client = Client(deadline_s=20, poll_min_s=0.05, poll_max_s=0.2, allow_downgrade=True)
    generate(client, horde_fake, key="broke-key-1234")
    submit = horde_fake.fake.accepted()[0]
    assert submit.body["allow_downgrade"] is True
    assert submit.body["params"]["max_length"] == 256  # lowered by the server, not refused


def test_too_many_parallel_prompts_is_named_as_the_keys_limit(
    horde_fake: FakeHordeThread,
) -> None:
    horde_fake.fake.burst_429 = 1
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    assert caught.value.status_code == 429
    assert "parallel requests" in caught.value.message and "TooManyPrompts" in caught.value.message


def test_a_faulted_job_is_a_model_error_naming_the_model(horde_fake: FakeHordeThread) -> None:
    horde_fake.fake.fault_next = 1
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    assert caught.value.status_code == 502 and SKYFALL in caught.value.message
    assert "faulted" in caught.value.message


def test_a_model_with_no_worker_is_refused_and_its_job_cancelled(
    horde_fake: FakeHordeThread,
) -> None:
    """The submit's `message` says no worker can take it: read there, not after a poll."""
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake, model=IDLE)
    assert caught.value.status_code == 404 and IDLE in caught.value.message
    assert "horde-tui models" in caught.value.message
    job = horde_fake.fake.accepted()[0].job
    assert horde_fake.fake.cancels == [job]
    assert [j for j, _ in horde_fake.fake.polls if j == job] == []


def test_a_context_no_worker_takes_is_refused_at_submit(horde_fake: FakeHordeThread) -> None:
    """The worker list cannot be read and the model's workers take 2048 tokens of context:
    the default context asked for is more, and the submit's `message` says so."""
    horde_fake.fake.down = {"/api/v2/workers"}
    horde_fake.fake.models[0].max_context_length = 2048
    with pytest.raises(HordeError) as caught:
        generate(quick(), horde_fake)
    assert caught.value.status_code == 404
    assert f"max_context_length {aihorde.DEFAULT_CONTEXT}" in caught.value.message
    job = horde_fake.fake.accepted()[0].job
    assert [j for j, _ in horde_fake.fake.polls if j == job] == []


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


def test_a_submit_without_client_agent_is_taken_as_unknown(horde_fake: FakeHordeThread) -> None:
    """The fake, as the server: a missing `Client-Agent` is read as its default."""
    body = {"prompt": "hi", "models": [SKYFALL], "params": {"max_length": 16}}
    resp = httpx.post(horde_fake.api_base + "/v2/generate/text/async", json=body, timeout=10)
    assert resp.status_code == 202, resp.text
    assert horde_fake.fake.accepted()[0].headers["client-agent"] == "unknown:0:unknown"


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
    fitted = aihorde.fit_prompt("A" * 1000 + "Z" * 1000, 100, aihorde.safe_tokens)
    assert aihorde.safe_tokens(fitted) <= 100 and fitted.startswith("A") and fitted.endswith("Z")


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
    """A task over 512 tokens goes whole with the anonymous key: only `max_length` is
    capped, and the workers take 4096 tokens of context."""
    gw, served = horde_gateway
    long_task = "Review app.py for secrets. " * 200  # ~1,200 tokens
    body = {"model": "horde", "messages": [{"role": "user", "content": long_task}], "tools": [BASH]}
    served.fake.answer = lambda prompt, params: '{"tool": "bash", "command": "grep -n PASS app.py"}'
    resp = post(gw, "member-a", body)
    assert resp.status_code == 200, resp.text
    call = resp.json()["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "bash"
    assert json.loads(call["arguments"]) == {"command": "grep -n PASS app.py"}
    submit = served.fake.accepted()[-1]
    params = submit.body["params"]
    assert params["max_context_length"] == 4096 and params["max_length"] == 512
    assert long_task.strip() in submit.body["prompt"]  # whole, not compacted
    assert "# Tool protocol" in submit.body["prompt"]
    lines = usage_lines(gw, "member-a")
    assert len(lines) == 1 and lines[0]["prompt_tokens"] > 1000  # counted, over 512
    assert lines[0]["cost_usd"] == 0.0  # AI Horde spends kudos, not dollars


def test_a_prompt_is_never_sent_over_the_context_it_asks_for(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    """Digits and spaces run two characters a token, not four: the prompt is counted
    with a tokenizer and cut in the middle to fit, its head and its end kept."""
    gw, served = horde_gateway
    served.fake.models[0].max_context_length = 1024
    served.fake.models[0].max_length = 256
    digits = " ".join(str(i % 10) for i in range(2000))  # 2,000 tokens: 1,000 at 4 chars
    content = f"HEAD {digits} TAIL"
    resp = post(gw, "member-l", {"model": "horde", "messages": [{"role": "user", "content": content}]})
    assert resp.status_code == 200, resp.text
    submit = served.fake.accepted()[-1]
    prompt, params = submit.body["prompt"], submit.body["params"]
    assert params["max_context_length"] == 1024 and params["max_length"] == 256
    # Each digit after a space is at least one token in any tokenizer.
    assert len(re.findall(r" \d", prompt)) <= 1024 - 256
    assert "HEAD" in prompt and prompt.endswith("TAIL [/INST]")


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


def test_members_calling_at_once_share_one_submit_pace(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    """Four members' calls at once through one gateway: their submits are spaced under
    the server's per-IP limit (2 a second), so none is refused."""
    from concurrent.futures import ThreadPoolExecutor

    gw, served = horde_gateway
    assert post(gw, "member-m0", {"model": "horde", "messages": HELLO}).status_code == 200
    with ThreadPoolExecutor(4) as pool:
        answers = list(
            pool.map(
                lambda i: post(gw, f"member-m{i}", {"model": "horde", "messages": HELLO}),
                range(1, 5),
            )
        )
    assert [r.status_code for r in answers] == [200] * 4
    submits = served.fake.submits
    assert [s.status for s in submits] == [202] * 5, [s.message for s in submits]


def test_kudos_upfront_reaches_the_member_as_one_line(
    horde_gateway: tuple[GatewayProcess, FakeHordeThread],
) -> None:
    """The queue grew past the cap the gateway last read: one refusal, one line saying
    what helps, and the next call fits the cap the refusal named."""
    gw, served = horde_gateway
    assert post(gw, "member-c", {"model": "horde", "messages": HELLO}).status_code == 200
    served.fake.queued_text_requests = 300  # the cap falls from 512 to 256
    resp = post(gw, "member-c", {"model": "horde", "messages": HELLO})
    assert resp.status_code == 403
    message = error_of(resp)
    assert "KudosUpfront" in message and "registered key" in message and "\n" not in message
    assert post(gw, "member-c", {"model": "horde", "messages": HELLO}).status_code == 200
    assert served.fake.accepted()[-1].body["params"]["max_length"] == 256


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
from horde_tui.common.gatewayclient import GatewayClient, GatewayError
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
    """A worker stops at `max_length` (256-512 tokens anonymous): a `links` call cut inside
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
