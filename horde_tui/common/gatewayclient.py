"""The one HTTP client for a run's gateway: members, the doctor's probe and the supervisor's
joining and leaving of a shared gateway all call it through `GatewayClient`.

Stdlib only (`http.client`, one kept-alive socket): members must stay small processes
(no aiohttp, no httpx, no litellm) and make one request at a time, so that is all they
need; the doctor and the supervisor make a handful of calls, from a worker thread.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from horde_tui.common.inputs import loads


class GatewayError(Exception):
    """The gateway answered with an error (after its own retries) or could not be reached."""

    def __init__(self, status: int, message: str, kind: str = "") -> None:
        super().__init__(f"{status} {kind}: {message}".strip())
        self.status = status
        self.message = message
        self.kind = kind


def error_message(answer: Any, limit: int = 500) -> str:
    """The one line of an OpenAI-style error answer, for a refusal to quote."""
    error = answer.get("error") if isinstance(answer, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return " ".join(str(text or "no message").split())[:limit]


class GatewayClient:
    """Calls to one gateway as one caller: `token` is its bearer token and `member` the
    member it speaks for (`X-Horde-Member`: the gateway picks that member's model)."""

    def __init__(self, url: str, token: str, member: str = "", timeout_s: float = 900.0) -> None:
        parts = urlsplit(url)
        self._url = url
        self._host = parts.hostname if parts.scheme == "http" else None
        self._port = parts.port or 80
        self._token = token
        self._member = member
        self._timeout = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, timeout_s: float | None = None
    ) -> tuple[int, Any]:
        """One request: the status and the answer parsed (`{}` when it is not JSON).
        `OSError` when the gateway does not answer (a timeout is a `TimeoutError`)."""
        status, raw = self._exchange(method, path, body, timeout_s)
        try:
            return status, loads(raw)
        except ValueError:
            return status, {}

    def _exchange(
        self,
        method: str,
        path: str,
        body: Any,
        timeout_s: float | None,
        on_delta: Callable[[str], None] | None = None,
    ) -> tuple[int, bytes]:
        """The status and body of one request on the kept-alive connection; a socket the
        server closed while idle fails once and is retried on a fresh one. With
        `on_delta`, a 200 answer is read as a stream (`_Streamed`)."""
        if self._host is None:
            raise ConnectionError(f"not an http://HOST:PORT address: {self._url!r}")
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self._token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._member:
            headers["X-Horde-Member"] = self._member
        timeout = self._timeout if timeout_s is None else timeout_s
        streamed: _Streamed | None = None
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            conn = self._conn
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, path, data, headers)
                resp = conn.getresponse()
                if on_delta is not None and resp.status == 200:
                    streamed = _Streamed(on_delta)
                    return resp.status, streamed.read(resp)
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                started = streamed is not None and streamed.said
                if attempt == 1 and not isinstance(exc, TimeoutError) and not started:
                    continue
                if isinstance(exc, OSError):
                    raise
                raise ConnectionError(f"{type(exc).__name__}: {exc}") from None
            except KeyboardInterrupt:
                # Stopped mid-call (a member's SIGTERM): closing the socket now rather
                # than at the process's exit tells the gateway at once to cancel the call
                # (an AI Horde job is deleted).
                self.close()
                raise
        raise ConnectionError("gateway unreachable")  # not reached: attempt 2 returns or raises

    def post(self, path: str, body: Any, timeout_s: float | None = None) -> tuple[int, Any]:
        """`request("POST", ...)`."""
        return self.request("POST", path, body, timeout_s)

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """A member's chat completion; `GatewayError` on any failure. With `on_delta` it is
        streamed: each piece of text goes to `on_delta` as it arrives, and the answer is
        still returned whole, as a non-streamed one (usage included)."""
        body: dict[str, Any] = {"model": "horde", "messages": messages, "tools": tools}
        if on_delta is not None:
            body.update(stream=True, stream_options={"include_usage": True})
        try:
            status, raw = self._exchange("POST", "/v1/chat/completions", body, None, on_delta)
        except OSError as exc:
            raise GatewayError(0, f"gateway unreachable: {exc}", "connection_error") from None
        try:
            answer = loads(raw)
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            kind = str(error.get("type") or "") if isinstance(error, dict) else ""
            text = error_message(answer) if error else raw[:500].decode(errors="replace")
            raise GatewayError(status, text, kind)
        return answer

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _Streamed:
    """A streamed chat completion (server-sent events) put back together as the one
    answer a non-streamed call returns, its text handed on piece by piece."""

    def __init__(self, on_delta: Callable[[str], None]) -> None:
        self.on_delta = on_delta
        self.said = False
        """Some text was handed on: the call cannot be retried without saying it twice."""
        self.content = ""
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None

    def read(self, resp: http.client.HTTPResponse) -> bytes:
        """Read events to `[DONE]` (or the end); the answer as JSON bytes."""
        while line := resp.readline():
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            try:
                chunk = loads(data)
            except ValueError:
                continue
            if isinstance(chunk, dict):
                self._take(chunk)
        resp.read()  # the rest, so the kept-alive connection can carry the next call
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish}
        answer: dict[str, Any] = {"choices": [choice]}
        if self.usage is not None:
            answer["usage"] = self.usage
        return json.dumps(answer).encode()

    def _take(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                self.content += text
                self.said = True
                self.on_delta(text)
            for call in delta.get("tool_calls") or []:
                self._call(call)

    def _call(self, part: dict[str, Any]) -> None:
        index = part.get("index", 0)
        call = self.calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        call["id"] = part.get("id") or call["id"]
        fn = part.get("function") or {}
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""
