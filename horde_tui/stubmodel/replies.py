"""The OpenAI wire shapes of a scripted step: a `chat.completion`, its SSE stream, an error.

Kept apart from the server so the shapes can be read against OpenAI's documentation in
one place. They follow what api.openai.com sends, because the gateway reaches the stub
through litellm and the openai SDK, which parse exactly these fields: the stream opens
with the role, splits content and tool-call arguments over several deltas, closes with a
chunk carrying `finish_reason`, then (when asked with `stream_options.include_usage`) a
chunk with no choices and the usage, then `[DONE]`.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from horde_tui.common.httpserve import Response, error_body
from horde_tui.stubmodel.script import Step

STREAM_PIECES = 3
"""Content and each tool call's arguments are streamed in up to this many deltas."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call with its generated id and JSON-encoded arguments."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """A step resolved for one request: ids, model and usage fixed once for both shapes."""

    id: str
    created: int
    model: str
    content: str | None
    tool_calls: list[ToolCall]
    usage: dict[str, int]

    @classmethod
    def build(cls, step: Step, body: dict[str, Any]) -> Reply:
        """Resolve `step` against the request: echo its model, count tokens unless scripted."""
        calls = [
            ToolCall(f"call_{uuid.uuid4().hex[:24]}", spec.name, spec.arguments_json())
            for spec in step.tool_calls
        ]
        prompt = step.prompt_tokens
        if prompt is None:
            prompt = _estimate(json.dumps(body.get("messages", [])))
        completion = step.completion_tokens
        if completion is None:
            completion = _estimate(
                (step.content or "") + "".join(c.name + c.arguments for c in calls)
            )
        return cls(
            id=f"chatcmpl-{uuid.uuid4().hex[:24]}",
            created=int(time.time()),
            model=str(body.get("model") or "stub"),
            content=step.content,
            tool_calls=calls,
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"

    def completion(self) -> dict[str, Any]:
        """The non-streaming `chat.completion` object."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage,
        }

    def stream(self, include_usage: bool) -> list[bytes]:
        """The SSE events of the streamed reply, `data: [DONE]` last."""
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "content": "" if self.content else None}
        ]
        deltas += [{"content": piece} for piece in _pieces(self.content or "")]
        for index, call in enumerate(self.tool_calls):
            opening = {"name": call.name, "arguments": ""}
            deltas.append(
                {
                    "tool_calls": [
                        {"index": index, "id": call.id, "type": "function", "function": opening}
                    ]
                }
            )
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                for piece in _pieces(call.arguments)
            ]
        chunks = [self._chunk([_choice(delta, None)], include_usage) for delta in deltas]
        chunks.append(self._chunk([_choice({}, self.finish_reason)], include_usage))
        if include_usage:
            chunks.append(self._chunk([], include_usage) | {"usage": self.usage})
        return [b"data: %b\n\n" % json.dumps(chunk).encode() for chunk in chunks] + [
            b"data: [DONE]\n\n"
        ]

    def _chunk(self, choices: list[dict[str, Any]], include_usage: bool) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if include_usage:
            chunk["usage"] = None  # OpenAI sends null usage on every chunk but the last
        return chunk


def error_response(status: int, message: str | None = None, retry_after: str = "0") -> Response:
    """An OpenAI-style error reply; a 429 carries `retry-after` (by default 0, so retrying
    clients don't wait)."""
    kind, code = _ERROR_KINDS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    text = message or f"scripted {status} {_phrase(status)}"
    headers = {"retry-after": retry_after} if status == 429 else {}
    return Response(status, error_body(text, kind, code), headers)


_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"


def _choice(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def _pieces(text: str) -> list[str]:
    """Split text into up to STREAM_PIECES consecutive non-empty pieces."""
    size = max(1, math.ceil(len(text) / STREAM_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate(text: str) -> int:
    """A rough token count (4 characters a token), at least 1, like a real model's usage."""
    return max(1, len(text) // 4)
