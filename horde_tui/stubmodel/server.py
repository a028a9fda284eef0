"""The stub model server: plays scripted replies per member and records every request.

Tests and `horde-tui demo` point litellm at it (`openai/stub` with
`api_base=<url>/v1`), so the gateway's real HTTP path runs with no internet and no key.
It can be run three ways: inside a test's event loop (`start_stub`), in a background
thread for synchronous tests that spawn real processes (`StubThread`), or as its own
process (`python -m horde_tui.stubmodel`) driven over `/stub/script` and
`/stub/requests`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any, TypeVar

from horde_tui.common.httpserve import HttpServer, Request, Response, StreamResponse, serve
from horde_tui.stubmodel.replies import Reply, error_response
from horde_tui.stubmodel.script import (
    DONE,
    FALLBACK,
    Scripts,
    ScriptsInput,
    Step,
    parse_scripts,
)

MODEL_ID = "stub"
"""The one model `/v1/models` lists; any requested model name is accepted and echoed."""

MEMBER_HEADER = "x-horde-member"
"""Names the member when the request body has no `user` field."""

T = TypeVar("T")

Policy = Callable[[str, dict[str, Any]], Step | None]
"""Decides a reply from (member, request body) before the scripts; None defers to them."""


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as received: who sent it, the JSON body, the headers."""

    member: str
    body: dict[str, Any]
    headers: dict[str, str]


class StubModel:
    """Scripts, their per-member progress and the request record, behind one HTTP handler.

    A lock guards the mutable state because a `StubThread`'s loop serves requests while
    the test thread rescripts or inspects it.
    """

    def __init__(
        self,
        scripts: ScriptsInput | None = None,
        *,
        token: str | None = None,
        policy: Policy | None = None,
    ) -> None:
        self.token = token
        self.policy = policy
        self._lock = threading.Lock()
        self._scripts: Scripts = {}
        self._cursors: dict[str, int] = {}
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._peak_in_flight = 0
        self.set_scripts(scripts or {})

    def set_scripts(self, scripts: ScriptsInput | object) -> None:
        """Replace every script (Steps or JSON data) and restart every member at step one."""
        expanded = {
            member: [step for step in steps for _ in range(step.repeat)]
            for member, steps in parse_scripts(scripts).items()
        }
        with self._lock:
            self._scripts = expanded
            self._cursors = {}

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat-completions request so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def peak_in_flight(self) -> int:
        """The most chat requests it was answering at once (a step's delay included):
        what a provider's rate limit would have seen from every gateway together."""
        with self._lock:
            return self._peak_in_flight

    def requests_for(self, member: str) -> list[RecordedRequest]:
        """The requests one member sent, oldest first."""
        return [r for r in self.requests if r.member == member]

    def next_step(self, member: str, body: dict[str, Any]) -> Step:
        """The policy's step, else the member's next scripted step, else `DONE`."""
        if self.policy is not None:
            step = self.policy(member, body)
            if step is not None:
                return step
        with self._lock:
            script = self._scripts.get(member, self._scripts.get(FALLBACK, []))
            position = self._cursors.get(member, 0)
            if position >= len(script):
                return DONE
            self._cursors[member] = position + 1
            return script[position]

    async def handle(self, request: Request) -> Response | StreamResponse:
        """The HTTP handler: route, check the token on `/v1/*`, answer."""
        routes = {
            "/v1/chat/completions": ("POST", self._chat),
            "/v1/models": ("GET", self._models),
            "/stub/script": ("POST", self._script),
            "/stub/requests": ("GET", self._recorded),
        }
        if request.path not in routes:
            return error_response(404, f"no route {request.path}")
        method, route = routes[request.path]
        if request.method != method:
            return error_response(405, f"{request.path} takes {method}")
        return await route(request)

    def _unauthorised(self, request: Request) -> Response | None:
        """401 unless the bearer token matches (when one is set), as OpenAI answers."""
        if self.token is None or request.headers.get("authorization") == f"Bearer {self.token}":
            return None
        return error_response(401, "Incorrect API key provided.")

    async def _chat(self, request: Request) -> Response | StreamResponse:
        try:
            body = request.json()
        except ValueError:
            return error_response(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return error_response(400, "request body must be a JSON object")
        user = body.get("user")
        member = user if isinstance(user, str) and user else request.headers.get(MEMBER_HEADER)
        member = member or FALLBACK
        with self._lock:
            self._requests.append(RecordedRequest(member, body, dict(request.headers)))
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            return await self._answer(request, body, member)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _answer(
        self, request: Request, body: dict[str, Any], member: str
    ) -> Response | StreamResponse:
        if denied := self._unauthorised(request):
            return denied
        if not isinstance(body.get("messages"), list):
            return error_response(400, "'messages' must be a list")
        step = self.next_step(member, body)
        if step.delay_ms:
            await asyncio.sleep(step.delay_ms / 1000)
        if step.status is not None:
            return error_response(step.status, step.error_message, step.retry_after)
        reply = Reply.build(step, body)
        if body.get("stream") is not True:
            return Response(200, reply.completion())
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return StreamResponse(_iterate(reply.stream(include_usage)))

    async def _models(self, request: Request) -> Response:
        if denied := self._unauthorised(request):
            return denied
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "horde-tui"}
        return Response(200, {"object": "list", "data": [model]})

    async def _script(self, request: Request) -> Response:
        try:
            self.set_scripts(request.json())
        except ValueError as exc:  # bad JSON, and pydantic's ValidationError is one too
            return error_response(400, f"bad script: {exc}")
        with self._lock:
            members = sorted(self._scripts)
        return Response(200, {"ok": True, "members": members})

    async def _recorded(self, request: Request) -> Response:
        member = request.query.get("member")
        chosen = self.requests if member is None else self.requests_for(member)
        return Response(200, {"requests": [asdict(r) for r in chosen]})


async def _iterate(events: list[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event


class RunningStub:
    """A stub being served: its URL, the litellm model string, and the StubModel itself."""

    model = f"openai/{MODEL_ID}"
    """The litellm model string that reaches the stub (with `api_base`)."""

    def __init__(self, stub: StubModel, server: HttpServer) -> None:
        self.stub = stub
        self.server = server

    @property
    def url(self) -> str:
        """The base URL, `http://127.0.0.1:PORT` (OpenAI clients want `api_base`)."""
        return self.server.url

    @property
    def api_base(self) -> str:
        """The OpenAI base URL: `url + "/v1"`."""
        return self.server.url + "/v1"


@asynccontextmanager
async def start_stub(
    scripts: ScriptsInput | None = None,
    *,
    token: str | None = None,
    policy: Policy | None = None,
) -> AsyncIterator[RunningStub]:
    """Serve a stub on a free 127.0.0.1 port in the current event loop for the block."""
    stub = StubModel(scripts, token=token, policy=policy)
    server = await serve(stub.handle)
    try:
        yield RunningStub(stub, server)
    finally:
        await server.close()


class StubThread(RunningStub):
    """A stub served from a background thread with its own loop, for synchronous tests.

    Synchronous tests spawn real gateway and member processes and wait on them; the stub
    must keep answering meanwhile, which it cannot do on a loop the test is not running.
    Use as a context manager or call `close()`.
    """

    def __init__(
        self,
        scripts: ScriptsInput | None = None,
        *,
        token: str | None = None,
        policy: Policy | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="stubmodel", daemon=True
        )
        self._thread.start()
        try:
            stub = StubModel(scripts, token=token, policy=policy)
            server = self._call(serve(stub.handle))
        except BaseException:
            self._stop_loop()
            raise
        super().__init__(stub, server)

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self._timeout)
        self._loop.close()

    def close(self) -> None:
        """Stop serving and end the thread; calling it again does nothing."""
        if self._loop.is_closed():
            return
        try:
            self._call(self.server.close())
        finally:
            self._stop_loop()

    def __enter__(self) -> StubThread:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


_LOOPBACK = ("127.0.0.1", "localhost")


def bypass_proxies_for_loopback() -> None:
    """Keep the gateway's requests to the local stub off any HTTP proxy.

    A user behind a corporate proxy has HTTP(S)_PROXY set; httpx would send even
    127.0.0.1 through it and the demo would fail for a reason unrelated to horde-tui.
    The supervisor (and an ask) passes this process's environment to the gateway it spawns.
    """
    for name in ("NO_PROXY", "no_proxy"):
        present = [p.strip() for p in os.environ.get(name, "").split(",") if p.strip()]
        missing = [host for host in _LOOPBACK if host not in present]
        if missing:
            os.environ[name] = ",".join([*present, *missing])


DEMO_KEY = "demo"
"""The demo model's bearer token, and the api_key of the runs it plays: not a provider key."""


def demo_stub(policy: Policy) -> StubThread:
    """The stub serving `policy` as the demo model (the demo, its fork, its eval, an ask
    or a lessons pass over demo runs): off any HTTP proxy, with the demo's token."""
    bypass_proxies_for_loopback()  # the gateway inherits this process's NO_PROXY
    return StubThread(policy=policy, token=DEMO_KEY)
