"""What gateway tests share beyond conftest's gateway process: litellm's own price map,
and a member's calls to a gateway process (a tool, a chat POST, its usage)."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    import openai
    from conftest import GatewayProcess


def price_map_entry(model: str) -> dict[str, Any]:
    """The model's entry in the price map litellm loads with LITELLM_LOCAL_MODEL_COST_MAP."""
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations)))
    entries = json.loads((path / "model_prices_and_context_window_backup.json").read_text())
    return entries[model]


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
READ = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
HELLO = [{"role": "user", "content": "List the files."}]


def sdk_client(gw: GatewayProcess, member: str, key: str | None = None) -> openai.OpenAI:
    """The official OpenAI SDK pointed at a gateway process as `member`, with the run's
    token unless `key` (no retries: a test sees the gateway's first answer)."""
    import openai

    return openai.OpenAI(
        base_url=gw.url + "/v1",
        api_key=key or gw.token,
        max_retries=0,
        default_headers={"X-Horde-Member": member},
    )


def post(
    gw: GatewayProcess,
    member: str,
    body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
) -> httpx.Response:
    """POST /v1/chat/completions as `member` with the run's token (unless `headers` given)."""
    sent = {"Authorization": f"Bearer {gw.token}", "X-Horde-Member": member}
    if headers is not None:
        sent = headers
    if content is None and body is None:
        body = {"model": "horde", "messages": HELLO, "tools": [BASH]}
    return httpx.post(
        gw.url + "/v1/chat/completions", json=body, content=content, headers=sent, timeout=60
    )


def usage(gw: GatewayProcess) -> dict[str, Any]:
    resp = httpx.get(gw.url + "/v1/usage", headers={"Authorization": f"Bearer {gw.token}"})
    assert resp.status_code == 200
    return resp.json()


def usage_lines(gw: GatewayProcess, member: str) -> list[dict[str, Any]]:
    path = gw.run_dir / "usage.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["member"] == member]


def error_of(resp: httpx.Response) -> str:
    return resp.json()["error"]["message"]


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (it was free a moment ago): a gateway or
    provider address that refuses the connection."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
