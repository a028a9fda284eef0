"""The gateway skips litellm's per-call pricing and logging payload (lean.py), and only those.

What litellm does is observed in a real gateway process, not in our code: a
`sitecustomize` on the gateway's PYTHONPATH (PROBE below) imports litellm first, keeps
the code objects of litellm's own functions, and counts their calls in every thread
with a profile hook; SIGUSR1 makes it write the counts to a file. The gateway then
starts as usual, in front of the stub, with a priced run model and one member on the
stub's unpriced model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.gateway import price_map_entry, sdk_client

from horde_tui.stubmodel import StubThread

PRICED = "openai/gpt-4o-mini"
PRICED_MEMBER = "lean-priced"
UNPRICED_MEMBER = "lean-unpriced"
HELLO = [{"role": "user", "content": "Go."}]

PROBE = """
import json, os, signal, sys, threading
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as the gateway imports it
os.environ.setdefault("LITELLM_LOG", "ERROR")
import litellm
from litellm import cost_calculator
from litellm.litellm_core_utils import litellm_logging
from litellm.litellm_core_utils.llm_response_utils.response_metadata import ResponseMetadata

Logging = litellm_logging.Logging
WATCHED = {
    Logging.response_cost_calculator.__code__: "Logging.response_cost_calculator",
    cost_calculator.response_cost_calculator.__code__: "cost_calculator.response_cost_calculator",
    Logging._build_standard_logging_payload.__code__: "Logging._build_standard_logging_payload",
    litellm_logging.get_standard_logging_object_payload.__code__:
        "get_standard_logging_object_payload",
    ResponseMetadata.set_hidden_params.__code__: "ResponseMetadata.set_hidden_params",
}
DONE = Logging.mark_logging_complete.__code__
counts = dict.fromkeys([*WATCHED.values(), "success_logging_done"], 0)
seen = []

def hook(frame, event, arg):
    if event != "call":
        return
    name = WATCHED.get(frame.f_code)
    if name is not None:
        counts[name] += 1
    elif frame.f_code is DONE and frame.f_locals.get("event_type") == "async_success":
        counts["success_logging_done"] += 1

def report(*_):
    path = os.environ["LEAN_PROBE_COUNTS"]
    with open(path + ".part", "w") as out:
        json.dump({"counts": counts, "callback_saw": seen}, out)
    os.replace(path + ".part", path)

if os.environ.get("LEAN_PROBE_CALLBACK"):
    from litellm.integrations.custom_logger import CustomLogger

    class Recorder(CustomLogger):
        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
            payload = kwargs.get("standard_logging_object")
            seen.append({
                "model": kwargs.get("model"),
                "response_cost": kwargs.get("response_cost"),
                "payload": None if payload is None else {"response_cost": payload["response_cost"]},
            })

    litellm.callbacks = [Recorder()]

signal.signal(signal.SIGUSR1, report)
threading.setprofile(hook)
sys.setprofile(hook)
"""


def probed_gateway(stub: StubThread, tmp: Path, **env: str) -> GatewayProcess:
    """A gateway whose process counts calls of litellm's functions (see PROBE)."""
    probe_dir = tmp / "probe"
    probe_dir.mkdir()
    (probe_dir / "sitecustomize.py").write_text(PROBE)
    path = os.pathsep.join(filter(None, [str(probe_dir), os.environ.get("PYTHONPATH")]))
    run_dir = tmp / "run"
    run_dir.mkdir()
    return start_gateway(
        stub,
        run_dir,
        "--model",
        PRICED,
        "--member-model",
        f"{UNPRICED_MEMBER}={stub.model}",
        PYTHONPATH=path,
        LEAN_PROBE_COUNTS=str(tmp / "counts.json"),
        **env,
    )


def probe_report(gw: GatewayProcess, until: str, at_least: int) -> dict[str, Any]:
    """The probe's counts once `until` (a count, or the callback's sightings) reaches `at_least`.

    Success logging runs on litellm's logging worker after the reply is out, so the
    counts are asked for again until it has caught up, within a bound.
    """
    path = gw.run_dir.parent / "counts.json"
    deadline = time.monotonic() + 30
    while True:
        path.unlink(missing_ok=True)
        gw.proc.send_signal(signal.SIGUSR1)
        while not path.exists():
            assert time.monotonic() < deadline, "the probe never reported"
            time.sleep(0.01)
        report = json.loads(path.read_text())
        done = len(report["callback_saw"]) if until == "callback_saw" else report["counts"][until]
        if done >= at_least:
            return report
        assert time.monotonic() < deadline, f"{until}: {done} of {at_least} after 30 s"


def chat_both_ways(gw: GatewayProcess, member: str, tokens: tuple[int, int]) -> list[Any]:
    """One plain and one streamed call as `member`; the `usage` of each reply."""
    prompt, completion = tokens
    step = {"content": "ok", "prompt_tokens": prompt, "completion_tokens": completion}
    gw.stub.stub.set_scripts({member: [step, step]})
    plain = httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "horde", "messages": HELLO},
        headers={"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member},
        timeout=60,
    )
    assert plain.status_code == 200, plain.text
    client = sdk_client(gw, member)
    chunks = list(
        client.chat.completions.create(
            model="horde",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"
    streamed = chunks[-1].usage
    assert streamed is not None
    return [plain.json()["usage"], streamed.model_dump()]


def expected_price(prompt: int, completion: int) -> float:
    entry = price_map_entry(PRICED.split("/", 1)[1])
    return prompt * entry["input_cost_per_token"] + completion * entry["output_cost_per_token"]


def test_the_gateway_skips_litellms_pricing_and_payload_and_still_accounts_every_call(
    stub_model: StubThread, tmp_path: Path
) -> None:
    gw = probed_gateway(stub_model, tmp_path)
    try:
        priced = chat_both_ways(gw, PRICED_MEMBER, (1000, 200))
        unpriced = chat_both_ways(gw, UNPRICED_MEMBER, (500, 50))
        counts = probe_report(gw, "success_logging_done", 4)["counts"]
    finally:
        gw.proc.terminate()
        gw.proc.wait(30)
    cost = expected_price(1000, 200)
    assert cost > 0
    # Plain and streamed replies alike: the tokens, and the gateway's own price. litellm's
    # `usage.cost` on the last chunk of a stream (its price, never read) is gone.
    for usage in priced:
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (1000, 200)
        assert usage["horde_cost_usd"] == pytest.approx(cost, rel=1e-12)
        assert "cost" not in usage
    for usage in unpriced:
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (500, 50)
        assert usage["horde_cost_usd"] is None
    lines = [json.loads(x) for x in (gw.run_dir / "usage.jsonl").read_text().splitlines()]
    assert [(x["member"], x["cost_usd"]) for x in lines] == [
        (PRICED_MEMBER, pytest.approx(cost, rel=1e-12)),
        (PRICED_MEMBER, pytest.approx(cost, rel=1e-12)),
        (UNPRICED_MEMBER, None),
        (UNPRICED_MEMBER, None),
    ]
    # litellm ran its success logging for all four calls and set the hidden params that
    # used to carry its price, yet neither priced a response nor built a payload.
    assert counts["success_logging_done"] == 4
    assert counts["ResponseMetadata.set_hidden_params"] == 4
    assert counts["Logging.response_cost_calculator"] == 0
    assert counts["cost_calculator.response_cost_calculator"] == 0
    assert counts["Logging._build_standard_logging_payload"] == 0
    assert counts["get_standard_logging_object_payload"] == 0


def test_with_a_litellm_callback_registered_litellm_prices_and_builds_its_payload(
    stub_model: StubThread, tmp_path: Path
) -> None:
    gw = probed_gateway(stub_model, tmp_path, LEAN_PROBE_CALLBACK="1")
    try:
        priced = chat_both_ways(gw, PRICED_MEMBER, (1000, 200))
        unpriced = chat_both_ways(gw, UNPRICED_MEMBER, (500, 50))
        report = probe_report(gw, "callback_saw", 4)
    finally:
        gw.proc.terminate()
        gw.proc.wait(30)
    counts, saw = report["counts"], report["callback_saw"]
    assert counts["Logging.response_cost_calculator"] >= 4
    assert counts["cost_calculator.response_cost_calculator"] >= 4
    assert counts["Logging._build_standard_logging_payload"] == 4
    assert counts["get_standard_logging_object_payload"] == 4
    # The callback got litellm's own price and its payload: the map's price for the priced
    # model (the same as the gateway's), none for the stub's model (whose payload litellm
    # fills in its own way, untouched here).
    cost = expected_price(1000, 200)
    priced_seen = [x for x in saw if x["model"] == PRICED.split("/", 1)[1]]
    unpriced_seen = [x for x in saw if x["model"] == stub_model.model.split("/", 1)[1]]
    assert len(priced_seen) == len(unpriced_seen) == 2
    assert [x["response_cost"] for x in priced_seen] == [pytest.approx(cost, rel=1e-12)] * 2
    assert [x["payload"] for x in priced_seen] == [{"response_cost": pytest.approx(cost)}] * 2
    assert [x["response_cost"] for x in unpriced_seen] == [None, None]
    assert all(x["payload"] is not None for x in unpriced_seen)
    assert all(u["horde_cost_usd"] == pytest.approx(cost, rel=1e-12) for u in priced)
    assert all(u["horde_cost_usd"] is None for u in unpriced)


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HORDE_", "LITELLM_"))}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR")
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_guard_fits_the_pinned_litellm() -> None:
    """Fails when the litellm pin moves and the replaced methods changed: re-check lean.py."""
    proc = run_python(
        "import json, litellm\n"
        "from horde_tui.gateway import lean\n"
        "print(json.dumps(lean.mismatches(litellm)))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_changed_litellm_is_left_untouched_and_said_once_on_stderr() -> None:
    """One mismatch, and neither method is replaced: litellm never runs half patched."""
    proc = run_python(
        "import asyncio, json, litellm\n"
        "from litellm.litellm_core_utils.litellm_logging import Logging\n"
        "from horde_tui.gateway.backend import LiteLLM\n"
        "price = Logging.response_cost_calculator\n"
        "build = Logging._build_standard_logging_payload\n"
        "def changed(self, init_response_obj, start_time, end_time, *, extra=None):\n"
        "    return build(self, init_response_obj, start_time, end_time)\n"
        "Logging._build_standard_logging_payload = changed\n"
        "lite = LiteLLM()\n"
        "lite.start_import()\n"
        "asyncio.run(lite.module())\n"
        "print(json.dumps({\n"
        "    'price_untouched': Logging.response_cost_calculator is price,\n"
        "    'payload_untouched': Logging._build_standard_logging_payload is changed,\n"
        "}))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"price_untouched": True, "payload_untouched": True}
    (line,) = proc.stderr.splitlines()
    assert line.startswith("horde-tui gateway: litellm's per-call pricing and logging payload")
    assert "Logging._build_standard_logging_payload(" in line and "changed" in line
    assert line.endswith("re-check horde_tui/gateway/lean.py against this litellm")
