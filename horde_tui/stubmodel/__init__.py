"""A scripted OpenAI-compatible model server on 127.0.0.1, for tests and the demo.

No test may use the internet or a provider key, yet the gateway's litellm HTTP path must
be exercised for real. This stub answers `POST /v1/chat/completions` (plain and
streamed) from per-member scripts of content, tool calls, delays and HTTP errors, and
records every request so a test can check what litellm actually sent.
"""

from __future__ import annotations

from horde_tui.stubmodel.script import (
    DONE,
    FALLBACK,
    Step,
    ToolCallSpec,
    load_scripts,
    parse_scripts,
)
from horde_tui.stubmodel.server import (
    DEMO_KEY,
    MEMBER_HEADER,
    MODEL_ID,
    Policy,
    RecordedRequest,
    RunningStub,
    StubModel,
    StubThread,
    bypass_proxies_for_loopback,
    demo_stub,
    start_stub,
)

__all__ = [
    "DEMO_KEY",
    "DONE",
    "FALLBACK",
    "MEMBER_HEADER",
    "MODEL_ID",
    "Policy",
    "RecordedRequest",
    "RunningStub",
    "Step",
    "StubModel",
    "StubThread",
    "ToolCallSpec",
    "bypass_proxies_for_loopback",
    "demo_stub",
    "load_scripts",
    "parse_scripts",
    "start_stub",
]
