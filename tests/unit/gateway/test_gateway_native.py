"""`--tool-protocol native` means native: a provider's `tools` refusal is not papered over."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from horde_tui.common.httpserve import Request
from horde_tui.common.settings import GatewaySettings
from horde_tui.gateway.app import Gateway, GatewayConfig
from horde_tui.gateway.backend import LiteLLM


class ToolsRefused(Exception):
    status_code = 400


class FakeLiteLLM:
    """Just enough of litellm: an unknown model whose provider rejects `tools`."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def get_model_info(self, model: str) -> None:
        raise KeyError(model)

    async def acompletion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if "tools" in kwargs:
            raise ToolsRefused("this model does not support tools")
        raise AssertionError("a native-only gateway must not retry without tools")


def gateway(protocol: str) -> tuple[Gateway, FakeLiteLLM]:
    fake = FakeLiteLLM()
    wrapper = LiteLLM()
    wrapper._module = fake
    wrapper._done.set()
    return Gateway(
        GatewayConfig("t", GatewaySettings(model="openai/local", tool_protocol=protocol)), wrapper
    ), fake


def request() -> Request:
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
        ],
    }
    headers = {"authorization": "Bearer t", "x-horde-member": "m"}
    return Request("POST", "/v1/chat/completions", {}, headers, json.dumps(body).encode())


def test_native_keeps_the_providers_refusal() -> None:
    gw, fake = gateway("native")
    response = asyncio.run(gw.handle(request()))
    assert response.status == 400
    assert "does not support tools" in response.body["error"]["message"]  # type: ignore[index]
    assert len(fake.calls) == 1 and gw.json_models == set()
