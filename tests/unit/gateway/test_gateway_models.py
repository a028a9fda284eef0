"""Per-model facts the gateway asks litellm once and then keeps: price and reasoning.

The gateway caches what litellm's map says about each model (known or not, its tool
support, whether it takes `reasoning_effort`) because litellm searches its map afresh
on every question. These tests hold that the cached answers are still the right ones,
call after call, on the real path: a gateway process, litellm, the stub behind it.
The expected prices come from litellm's local price map file, read here as plain JSON,
so the test does not price the calls the way the gateway does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.gateway import price_map_entry

from horde_tui.stubmodel import StubThread

PRICED = "openai/o3-mini"
"""In litellm's map with a price and `supports_reasoning`; the stub answers any model."""
UNPRICED_MEMBER = "models-unpriced"
PRICED_MEMBER = "models-priced"


@pytest.fixture(scope="module")
def gw(
    stub_model: StubThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    """A gateway whose run model is priced, with one member on the stub's unpriced model."""
    gw = start_gateway(
        stub_model,
        tmp_path_factory.mktemp("models-run"),
        "--model",
        PRICED,
        "--member-model",
        f"{UNPRICED_MEMBER}={stub_model.model}",
        "--thinking",
        "high",
    )
    yield gw
    gw.proc.terminate()
    gw.proc.wait(30)


def chat(gw: GatewayProcess, member: str) -> dict[str, Any]:
    resp = httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "horde", "messages": [{"role": "user", "content": "Go."}]},
        headers={"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


def usage_lines(gw: GatewayProcess, member: str) -> list[dict[str, Any]]:
    lines = (gw.run_dir / "usage.jsonl").read_text().splitlines()
    return [x for x in map(json.loads, lines) if x["member"] == member]


def test_a_priced_model_costs_its_map_price_on_every_call_and_an_unpriced_one_stays_unknown(
    gw: GatewayProcess,
) -> None:
    tokens = [(1000, 200), (2500, 40), (7, 3)]
    gw.stub.stub.set_scripts(
        {
            PRICED_MEMBER: [
                {"content": "ok", "prompt_tokens": p, "completion_tokens": c} for p, c in tokens
            ],
            UNPRICED_MEMBER: [{"content": "ok", "prompt_tokens": 500, "completion_tokens": 50}] * 3,
        }
    )
    entry = price_map_entry(PRICED.split("/", 1)[1])
    expected = [
        p * entry["input_cost_per_token"] + c * entry["output_cost_per_token"] for p, c in tokens
    ]
    assert all(cost > 0 for cost in expected)

    priced = [chat(gw, PRICED_MEMBER)["usage"]["horde_cost_usd"] for _ in tokens]
    unpriced = [chat(gw, UNPRICED_MEMBER)["usage"]["horde_cost_usd"] for _ in range(3)]

    assert priced == pytest.approx(expected, rel=1e-12)
    # Looked up once and remembered as unknown: never turned into $0 on a later call.
    assert unpriced == [None, None, None]
    assert [x["cost_usd"] for x in usage_lines(gw, PRICED_MEMBER)] == pytest.approx(
        expected, rel=1e-12
    )
    assert [x["cost_usd"] for x in usage_lines(gw, UNPRICED_MEMBER)] == [None, None, None]
    report = httpx.get(gw.url + "/v1/usage", headers={"Authorization": f"Bearer {gw.token}"}).json()
    assert report["members"][PRICED_MEMBER]["cost_usd"] == pytest.approx(sum(expected))
    assert report["members"][UNPRICED_MEMBER]["cost_usd"] is None
    # Part of the run is unpriced: the total is the known part, flagged as a lower bound.
    assert report["total_cost_usd"] == pytest.approx(sum(expected))
    assert report["cost_unknown_calls"] == 3


def test_thinking_reaches_a_reasoning_model_on_every_call_and_no_other(
    gw: GatewayProcess,
) -> None:
    member = "models-think"
    for _ in range(2):
        chat(gw, member)
        chat(gw, UNPRICED_MEMBER)
    sent = gw.stub.stub.requests_for(member)
    assert [r.body.get("reasoning_effort") for r in sent] == ["high", "high"]
    # The stub's model is unknown to litellm: thinking cannot be mapped, so it is not sent.
    unpriced = gw.stub.stub.requests_for(UNPRICED_MEMBER)[-2:]
    assert [r.body.get("reasoning_effort", "absent") for r in unpriced] == ["absent", "absent"]
    assert {r.body["model"] for r in unpriced} == {gw.stub.model.split("/", 1)[1]}
