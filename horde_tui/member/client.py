"""The member's HTTP client for the run's gateway: stdlib only, one kept-alive socket.

Members must stay small processes (no litellm, no httpx), and they make one request at a
time, so `http.client` with a reused connection is all they need.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit


class GatewayError(Exception):
    """The gateway answered with an error (after its own retries) or could not be reached."""

    def __init__(self, status: int, message: str, kind: str = "") -> None:
        super().__init__(f"{status} {kind}: {message}".strip())
        self.status = status
        self.message = message
        self.kind = kind


class GatewayClient:
    def __init__(self, url: str, token: str, member: str, timeout_s: float = 900.0) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._token = token
        self._member = member
        self._timeout = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """One non-streaming chat completion; raises `GatewayError` on any failure."""
        body = json.dumps({"model": "horde", "messages": messages, "tools": tools}).encode()
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Content-Type": "application/json",
            "X-Horde-Member": self._member,
        }
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request("POST", "/v1/chat/completions", body, headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
                self.close()
                # A kept-alive socket the server closed fails once; a fresh one is retried.
                if attempt == 1 and not isinstance(exc, TimeoutError):
                    continue
                raise GatewayError(0, f"gateway unreachable: {exc}", "connection_error") from None
            except KeyboardInterrupt:
                # Stopped mid-call (SIGTERM): closing the socket now rather than at the
                # process's exit tells the gateway at once to cancel the call (an AI
                # Horde job is deleted).
                self.close()
                raise
            return self._decode(resp.status, raw)
        raise GatewayError(0, "gateway unreachable", "connection_error")

    def _decode(self, status: int, raw: bytes) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if status != 200 or not isinstance(data, dict):
            err = (data or {}).get("error", {}) if isinstance(data, dict) else {}
            message = err.get("message") if isinstance(err, dict) else None
            kind = err.get("type", "") if isinstance(err, dict) else ""
            raise GatewayError(status, message or raw[:500].decode(errors="replace"), kind)
        return data

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
