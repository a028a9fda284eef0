"""A fake AI Horde (text generation) on 127.0.0.1, for the gateway's `aihorde/` provider.

No test may reach the real swarm, yet the provider's whole HTTP path (submit, poll, cancel,
the model list) must run for real. This fake implements the endpoints the provider uses,
served by `horde_tui.httpserve` from a background thread like `StubThread`:

- `POST /api/v2/generate/text/async`: a job, queued for `polls_to_done` status polls;
  the anonymous key (`0000000000`) is refused with 403 `KudosUpfront` when the request
  asks for more than `anon_cap` tokens (its `max_context_length`, or its prompt at four
  characters a token plus its `max_length`); `burst_429` next submits get 429; a model with
  no worker is accepted with the `NoAvailableWorker` warning and never runs
  (`is_possible` false), as the real Horde queues a wrong id forever;
- `GET /api/v2/generate/text/status/{id}`: `wait_time`, `queue_position`, `done`,
  `faulted` and the generation once done; a job's status is cached `status_cache_s`
  (a poll inside that window gets the same answer and does not advance the queue);
- `DELETE /api/v2/generate/text/status/{id}`: cancels the job;
- `GET /api/v2/status/models?type=text`: each model's workers, queue and eta;
- `GET /api/v2/workers?type=text`: the workers with their `max_length` and
  `max_context_length` caps.

Everything received is recorded (prompts, params, headers, polls, cancels) for the tests
to assert on. The fake's model answers through `answer(prompt, params)`, by default
horde.py's JSON tool format; the reply is cut at `max_length` tokens as a worker cuts it.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from horde_tui.httpserve import HttpServer, Request, Response, serve

ANON_KEY = "0000000000"
CHARS_PER_TOKEN = 4
T = TypeVar("T")

Answer = Callable[[str, dict[str, Any]], str]
"""The fake model: (prompt, params) -> the text it generates (before the length cut)."""


@dataclass
class FakeModel:
    """One text model of the fake swarm."""

    name: str
    workers: int = 2
    max_length: int = 512
    max_context_length: int = 4096
    eta: int = 20
    queued: int = 0


@dataclass
class Job:
    id: str
    model: str
    prompt: str
    params: dict[str, Any]
    anonymous: bool
    possible: bool
    faulted: bool = False
    polls: int = 0
    cancelled: bool = False
    text: str | None = None
    cached: tuple[float, dict[str, Any]] | None = None


@dataclass(frozen=True)
class Submit:
    """One submit as received: body, headers, and the job id it got (None: refused)."""

    body: dict[str, Any]
    headers: dict[str, str]
    job: str | None
    status: int


@dataclass
class FakeHorde:
    """The fake's state and its HTTP handler; a lock guards it (tests read it from
    another thread while the server's loop serves)."""

    models: list[FakeModel]
    answer: Answer
    polls_to_done: int = 2
    anon_cap: int = 512
    status_cache_s: float = 1.0
    burst_429: int = 0
    fault_next: int = 0
    jobs: dict[str, Job] = field(default_factory=dict)
    submits: list[Submit] = field(default_factory=list)
    polls: list[tuple[str, float]] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    model_lists: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def model(self, name: str) -> FakeModel | None:
        return next((m for m in self.models if m.name == name), None)

    async def handle(self, request: Request) -> Response:
        path = request.path
        status = re.fullmatch(r"/api/v2/generate/text/status/([\w-]+)", path)
        if request.method == "POST" and path == "/api/v2/generate/text/async":
            return self._submit(request)
        if status and request.method == "GET":
            return self._status(status.group(1))
        if status and request.method == "DELETE":
            return self._cancel(status.group(1))
        if request.method == "GET" and path == "/api/v2/status/models":
            return self._models()
        if request.method == "GET" and path == "/api/v2/workers":
            return self._workers()
        return _error(404, f"no route {request.method} {path}", "NotFound")

    def _submit(self, request: Request) -> Response:
        try:
            body = request.json()
        except ValueError:
            body = None
        headers = dict(request.headers)
        with self._lock:
            refused = self._refusal(body, headers)
            if refused is not None:
                self.submits.append(Submit(body or {}, headers, None, refused.status))
                return refused
            assert isinstance(body, dict)
            name = body["models"][0]
            model = self.model(name)
            possible = model is not None and model.workers > 0
            job = Job(
                uuid.uuid4().hex,
                name,
                body["prompt"],
                body.get("params") or {},
                headers.get("apikey", ANON_KEY) == ANON_KEY,
                possible,
                faulted=self.fault_next > 0 and possible,
            )
            if job.faulted:
                self.fault_next -= 1
            self.jobs[job.id] = job
            self.submits.append(Submit(body, headers, job.id, 202))
        warnings = (
            []
            if possible
            else [
                {
                    "code": "NoAvailableWorker",
                    "message": "No available worker can fulfil this request.",
                }
            ]
        )
        return Response(202, {"id": job.id, "kudos": 1.0, "warnings": warnings})

    def _refusal(self, body: Any, headers: dict[str, str]) -> Response | None:
        if not headers.get("client-agent"):
            return _error(400, "Client-Agent header missing", "MissingClientAgent")
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return _error(400, "Input payload validation failed", "BadRequest")
        if not body.get("models"):
            return _error(400, "a model must be named", "BadRequest")
        if self.burst_429 > 0:
            self.burst_429 -= 1
            return _error(429, "Too many prompts in parallel", "TooManyPrompts", retry="1")
        params = body.get("params") or {}
        anonymous = headers.get("apikey", ANON_KEY) == ANON_KEY
        context = int(params.get("max_context_length") or 1024)
        length = int(params.get("max_length") or 80)
        asked = max(context, len(body["prompt"]) // CHARS_PER_TOKEN + length)
        if anonymous and asked > self.anon_cap:
            return _error(
                403,
                f"This request requires upfront kudos to fulfil ({asked} tokens; anonymous "
                f"requests are limited to {self.anon_cap}).",
                "KudosUpfront",
            )
        return None

    def _status(self, job_id: str) -> Response:
        now = time.monotonic()
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return _error(404, "Request not found", "RequestNotFound")
            self.polls.append((job_id, now))
            if job.cached is not None and now - job.cached[0] < self.status_cache_s:
                return Response(200, job.cached[1])
            job.polls += 1
            body = self._job_status(job)
            job.cached = (now, body)
        return Response(200, body)

    def _job_status(self, job: Job) -> dict[str, Any]:
        left = max(0, self.polls_to_done - job.polls)
        done = job.possible and not job.faulted and not job.cancelled and left == 0
        if done and job.text is None:
            cap = int(job.params.get("max_length") or 80) * CHARS_PER_TOKEN
            job.text = self.answer(job.prompt, job.params)[:cap]
        generations = (
            [{"text": job.text, "model": job.model, "state": "ok", "worker_name": "fake"}]
            if done
            else []
        )
        return {
            "finished": int(done),
            "processing": 0,
            "restarted": 0,
            "waiting": int(not done),
            "done": done,
            "faulted": job.faulted,
            "wait_time": left if job.possible else 0,
            "queue_position": max(0, left - 1),
            "kudos": 1.0,
            "is_possible": job.possible,
            "generations": generations,
        }

    def _cancel(self, job_id: str) -> Response:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return _error(404, "Request not found", "RequestNotFound")
            job.cancelled = True
            self.cancels.append(job_id)
            body = self._job_status(job)
        return Response(200, body)

    def _models(self) -> Response:
        with self._lock:
            self.model_lists += 1
            rows = [
                {
                    "name": m.name,
                    "count": m.workers,
                    "performance": 10.0 * m.workers,
                    "queued": m.queued,
                    "jobs": float(m.queued // 100),
                    "eta": m.eta,
                    "type": "text",
                }
                for m in self.models
                if m.workers > 0
            ]
        return Response(200, rows)

    def _workers(self) -> Response:
        with self._lock:
            rows = [
                {
                    "name": f"worker-{i}-{m.name}",
                    "type": "text",
                    "models": [m.name],
                    "max_length": m.max_length,
                    "max_context_length": m.max_context_length,
                }
                for m in self.models
                for i in range(m.workers)
            ]
        return Response(200, rows)

    # -- what tests read ---------------------------------------------------------------------

    def accepted(self) -> list[Submit]:
        with self._lock:
            return [s for s in self.submits if s.job is not None]

    def unfinished(self) -> list[str]:
        """Jobs neither done nor faulted nor cancelled: what a client left behind."""
        with self._lock:
            return [
                j.id
                for j in self.jobs.values()
                if not j.cancelled and j.text is None and not j.faulted
            ]


def _error(status: int, message: str, rc: str, retry: str | None = None) -> Response:
    headers = {"Retry-After": retry} if retry else {}
    return Response(status, {"message": message, "rc": rc}, headers=headers)


class FakeHordeThread:
    """A `FakeHorde` served from its own thread and loop (as `StubThread` serves the stub):
    the tests that spawn gateway processes wait synchronously while it answers."""

    def __init__(self, fake: FakeHorde, timeout: float = 10.0) -> None:
        self.fake = fake
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.server: HttpServer = self._call(serve(fake.handle))

    @property
    def api_base(self) -> str:
        """The API root, as `--api-base` takes it (`{root}/v2/...`)."""
        return self.server.url + "/api"

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._call(self.server.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self._timeout)
            self._loop.close()

    def __enter__(self) -> FakeHordeThread:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


# -- the fake's model: horde.py's JSON tool format ------------------------------------------


def json_tool_answer(prompt: str, params: dict[str, Any]) -> str:
    """An agent in horde.py's flat JSON format that adds an idea, claims it, files a
    finding, closes the idea and answers, stepping by the calls the prompt says were
    already run (compact prompts keep that list and the last result, nothing else)."""
    ran = prompt.rsplit("Already executed commands", 1)[-1] if "Already executed" in prompt else ""
    if '"action":"done"' in ran:
        return '{"answer": "Filed the hard-coded password finding.", "done": true}'
    if '"action":"finding"' in ran:
        ids = re.findall(r"\bok\s+#(\d+)", prompt) or ["1"]
        return f'{{"tool": "horde", "action": "done", "id": "#{ids[-1]}", "result": "filed"}}'
    if '"action":"claim"' in ran:
        return (
            '{"tool": "horde", "action": "finding", "concern": "hardcoded-secret", '
            '"concernDef": "secrets in source", "text": "PASSWORD is hard-coded in app.py", '
            '"evidence": "app.py:1", "support": "tested", "importance": "high", '
            '"confidence": "high"}'
        )
    if '"action":"idea"' in ran:
        ids = re.findall(r"\b(?:ok|duplicate of)\s+#(\d+)", prompt) or ["1"]
        return f'{{"tool": "horde", "action": "claim", "id": "#{ids[-1]}"}}'
    token = uuid.uuid4().hex[:6]
    # Cut mid-string, as a worker stops at max_length: the gateway repairs a cut `horde` call.
    return f'{{"tool": "horde", "action": "idea", "text": "Check app.py for secrets {token} and the'
