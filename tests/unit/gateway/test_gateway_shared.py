"""One gateway process shared by several runs (`--shared`, what `horde-tui eval` starts):
each run joins with its own token and directory, and its usage, cost and budget stay its
own while the provider limit is the gateway's one.

A real gateway process on the stub provider, under a model name litellm prices
(`openai/gpt-4o-mini`; the stub answers any model), so budgets can trip. The member
names are this file's own: the stub is the session's, and other tests count by member.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import GatewayProcess, start_gateway
from support.gateway import price_map_entry

from horde_tui.stubmodel import StubThread
from horde_tui.supervisor.processes import (
    SHARED_GATEWAY_TOKEN_ENV,
    SHARED_GATEWAY_URL_ENV,
    join_gateway,
    leave_gateway,
)

PRICED = "openai/gpt-4o-mini"
PROMPT_TOKENS = 100_000
"""Per call: $0.015 at gpt-4o-mini's input price, so a $0.02 budget trips on call two."""


@pytest.fixture(scope="module")
def shared(
    stub_model: StubThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayProcess]:
    gw = start_gateway(
        stub_model, tmp_path_factory.mktemp("shared-gw"), "--shared", HORDE_MODEL=PRICED
    )
    yield gw
    gw.proc.terminate()
    gw.proc.wait(30)


def admin(gw: GatewayProcess, path: str, body: dict[str, Any], token: str = "") -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or gw.token}"}
    return httpx.post(gw.url + path, json=body, headers=headers, timeout=60)


def join(gw: GatewayProcess, folder: Path, budget: float | None, **extra: Any) -> str:
    """Register a run directory with a fresh token; return the token."""
    folder.mkdir(parents=True, exist_ok=True)
    token = "run-" + os.urandom(12).hex()
    body = {"token": token, "dir": str(folder), "max_cost_usd": budget, "model": PRICED, **extra}
    resp = admin(gw, "/v1/runs", body)
    assert resp.status_code == 200, resp.text
    return token


def chat(gw: GatewayProcess, token: str, member: str = "shared-1") -> httpx.Response:
    return httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "horde", "messages": [{"role": "user", "content": "Go."}]},
        headers={"Authorization": f"Bearer {token}", "X-Horde-Member": member},
        timeout=60,
    )


def usage_of(gw: GatewayProcess, token: str) -> dict[str, Any]:
    resp = httpx.get(gw.url + "/v1/usage", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text
    return resp.json()


def lines(folder: Path) -> list[dict[str, Any]]:
    path = folder / "usage.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_each_run_on_a_shared_gateway_keeps_its_own_usage_cost_and_budget(
    shared: GatewayProcess, tmp_path: Path
) -> None:
    big = {"content": "ok", "prompt_tokens": PROMPT_TOKENS, "completion_tokens": 0}
    small = {"content": "ok", "prompt_tokens": 10, "completion_tokens": 0}
    shared.stub.stub.set_scripts({"shared-1": [big] * 6, "shared-2": [small]})
    per_call = PROMPT_TOKENS * price_map_entry("gpt-4o-mini")["input_cost_per_token"]
    a, b = tmp_path / "a", tmp_path / "b"
    token_a, token_b = join(shared, a, 0.02), join(shared, b, 1.0)

    # Both runs have a shared-1; a's budget trips on its second call, b's does not.
    assert chat(shared, token_a).status_code == 200
    assert chat(shared, token_b).status_code == 200
    assert chat(shared, token_a).status_code == 200
    refused = chat(shared, token_a)
    assert refused.status_code == 402 and "budget is reached" in refused.text
    assert "$0.0300 of $0.0200" in refused.json()["error"]["message"]
    for _ in range(2):
        assert chat(shared, token_b).status_code == 200
    assert chat(shared, token_b, "shared-2").status_code == 200

    assert [x["member"] for x in lines(a)] == ["shared-1", "shared-1"]
    assert [x["member"] for x in lines(b)] == ["shared-1"] * 3 + ["shared-2"]
    assert sum(x["cost_usd"] for x in lines(a)) == pytest.approx(2 * per_call)
    assert (a / ".budget-reached").exists() and not (b / ".budget-reached").exists()
    ua, ub = usage_of(shared, token_a), usage_of(shared, token_b)
    assert ua["budget_reached"] and not ub["budget_reached"]
    assert ua["members"]["shared-1"]["calls"] == 2 and ub["members"]["shared-1"]["calls"] == 3
    assert ua["total_cost_usd"] == pytest.approx(2 * per_call)
    assert ub["max_cost_usd"] == 1.0 and "shared-2" not in ua["members"]
    # The provider limit is the gateway's one, whichever run asks.
    assert ua["limiters"] == ub["limiters"] and ua["limiters"]
    # Nothing of the runs' calls lands in the gateway's own usage file.
    assert not (shared.run_dir / "usage.jsonl").exists()


def test_a_run_that_left_is_refused_and_its_figures_are_returned(
    shared: GatewayProcess, tmp_path: Path
) -> None:
    shared.stub.stub.set_scripts({"shared-3": [{"content": "ok", "prompt_tokens": 5}]})
    token = join(shared, tmp_path / "c", None)
    assert chat(shared, token, "shared-3").status_code == 200
    left = admin(shared, "/v1/runs/end", {"token": token})
    assert left.status_code == 200, left.text
    assert left.json()["members"]["shared-3"]["calls"] == 1
    assert chat(shared, token, "shared-3").status_code == 401
    assert admin(shared, "/v1/runs/end", {"token": token}).status_code == 404
    assert shared.proc.poll() is None  # a run leaving does not stop the gateway


def test_only_the_gateways_own_token_joins_runs_and_bad_joins_are_one_line(
    shared: GatewayProcess, tmp_path: Path
) -> None:
    token = join(shared, tmp_path / "d", None)
    body = {"token": "x" * 32, "dir": str(tmp_path / "e"), "model": PRICED}
    (tmp_path / "e").mkdir()
    assert admin(shared, "/v1/runs", body, token=token).status_code == 403  # a run's token
    assert admin(shared, "/v1/runs", body, token="wrong").status_code == 401
    cases = [
        ({**body, "model": "openai/other"}, 409, "serves model openai/gpt-4o-mini"),
        # A bare AI Horde id is compared as the gateway names it (`aihorde/...`).
        ({**body, "model": "koboldcpp/tiny"}, 409, "asks for aihorde/koboldcpp/tiny"),
        ({**body, "token": token}, 409, "already"),
        ({**body, "token": "short"}, 400, "token"),
        ({**body, "dir": str(tmp_path / "missing")}, 400, "not a directory"),
        ({**body, "max_cost_usd": "lots"}, 400, "max_cost_usd"),
    ]
    for case, status, words in cases:
        resp = admin(shared, "/v1/runs", case)
        message = resp.json()["error"]["message"]
        assert resp.status_code == status and words in message and "\n" not in message, resp.text


def test_a_gateway_not_started_shared_takes_no_runs(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    resp = admin(gateway, "/v1/runs", {"token": "y" * 32, "dir": str(tmp_path)})
    assert resp.status_code == 404 and "--shared" in resp.json()["error"]["message"]


def test_a_run_joins_with_the_budget_it_is_given(shared: GatewayProcess, tmp_path: Path) -> None:
    """`join_gateway` takes the run's budget as a number, not an argument list to parse."""
    env = {
        SHARED_GATEWAY_URL_ENV: shared.url,
        SHARED_GATEWAY_TOKEN_ENV: shared.token,
        "HORDE_GATEWAY_TOKEN": "run-" + os.urandom(12).hex(),
        "HORDE_MODEL": PRICED,
    }
    handle = asyncio.run(join_gateway(tmp_path, env, 0.25))
    try:
        assert usage_of(shared, handle.token)["max_cost_usd"] == 0.25
        assert json.loads((tmp_path / "gateway.json").read_text())["shared"] is True
    finally:
        asyncio.run(leave_gateway(handle))
    assert chat(shared, handle.token).status_code == 401  # it left
