"""A fake AI Horde (text generation) on 127.0.0.1, for the gateway's `aihorde/` provider.

No test may reach the real swarm, yet the provider's whole HTTP path (submit, poll, cancel,
the model, worker and performance lists) must run for real. This fake implements the
endpoints the provider uses, served by `horde_tui.common.httpserve` from a background thread like
`StubThread`, with the real server's rules (Haidra-Org/AI-Horde; each rule's source file
is noted where it is implemented):

- `POST /api/v2/generate/text/async`: a job, queued for `polls_to_done` status polls, then
  processing for `processing_s` seconds. Anonymous and zero-kudos keys are refused 403
  `KudosUpfront` when `max_length` exceeds the queue-dependent cap (`upfront_cap`), unless
  `allow_downgrade` (then `max_length` is lowered to the cap); the context is not capped.
  Submits are limited per IP (2 per second, 90 per minute: 429 with a `message`, a
  `Retry-After` and no `rc`). A request no worker can take (model, `max_length` or
  `max_context_length`) is accepted with a `message` saying so and never runs;
- `GET /api/v2/generate/text/status/{id}`: `wait_time` (while processing, the time left),
  `queue_position`, `processing`, `done`, `faulted`, `is_possible` and the generation once
  done; 60 polls a minute per job;
- `DELETE /api/v2/generate/text/status/{id}`: cancels the job;
- `GET /api/v2/status/models?type=text`: each model's threads (`count`), queue and eta;
- `GET /api/v2/status/performance`: the queued text requests and text threads the cap
  is computed from;
- `GET /api/v2/workers?type=text`: the workers with their threads and `max_length` and
  `max_context_length` caps.

Everything received is recorded (prompts, params, headers, times, polls, cancels) for the
tests to assert on. The fake's model answers through `answer(prompt, params)`, by default
horde.py's JSON tool format; the reply is cut at `max_length` tokens as a worker cuts it.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from horde_tui.common.httpserve import HttpServer, Request, Response, serve

ANON_KEY = "0000000000"
CHARS_PER_TOKEN = 4
DEFAULT_CLIENT_AGENT = "unknown:0:unknown"
"""What the server reads when `Client-Agent` is missing (horde/apis/v2/base.py, the
`Client-Agent` argument's default): it is not refused."""
SUBMIT_LIMITS = ((2, 1.0), (90, 60.0))
"""Submits per IP: 2 per second, 90 per minute (horde/apis/limiter_api.py,
get_request_2sec_limit_per_ip and get_request_90min_limit_per_ip, on TextAsyncGenerate
in horde/apis/v2/kobold.py)."""
POLLS_PER_MINUTE = 60
"""Status polls per job and IP (horde/apis/v2/kobold.py, TextAsyncStatus: 60/minute keyed
by the request path)."""
NO_WORKER_MESSAGE = (
    "Warning: No available workers can fulfill this request. It will expire in 20 minutes. "
    "Consider reducing the amount of tokens to generate."
)
"""The submit's `message` when no worker can take the request (horde/apis/v2/kobold.py,
get_size_too_big_message); there is no `warnings` entry for it."""
T = TypeVar("T")

Answer = Callable[[str, dict[str, Any]], str]
"""The fake model: (prompt, params) -> the text it generates (before the length cut)."""


def upfront_cap(queued_text_requests: int, text_threads: int) -> int:
    """The largest `max_length` served without kudos upfront: 512 + 5 per text thread -
    0.9 per queued text request, kept within 256..512 (horde/classes/kobold/
    waiting_prompt.py, require_upfront_kudos; the server reads both numbers from the
    totals that `/v2/status/performance` reports)."""
    return max(256, min(512, 512 + text_threads * 5 - round(queued_text_requests * 0.9)))


@dataclass
class FakeModel:
    """One text model of the fake swarm: `workers` workers with `threads` threads each,
    all with these caps unless `contexts` gives each worker its own context."""

    name: str
    workers: int = 2
    max_length: int = 512
    max_context_length: int = 4096
    eta: int = 20
    queued: int = 0
    threads: int = 1
    contexts: tuple[int, ...] = ()

    def worker_contexts(self) -> list[int]:
        return list(self.contexts) or [self.max_context_length] * self.workers

    def takes(self, params: dict[str, Any]) -> bool:
        """Some worker can take the job (horde/classes/kobold/worker.py, can_generate:
        its context and length caps at least the request's)."""
        length = int(params.get("max_length") or 80)
        context = int(params.get("max_context_length") or 2048)
        return length <= self.max_length and any(c >= context for c in self.worker_contexts())


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
    started: float | None = None
    """When a worker picked it up (processing), monotonic."""
    done_at: float | None = None


@dataclass(frozen=True)
class Submit:
    """One submit as received: body, headers, and the job id it got (None: refused)."""

    body: dict[str, Any]
    headers: dict[str, str]
    job: str | None
    status: int
    at: float = 0.0
    message: str = ""


@dataclass
class FakeHorde:
    """The fake's state and its HTTP handler; a lock guards it (tests read it from
    another thread while the server's loop serves)."""

    models: list[FakeModel]
    answer: Answer
    polls_to_done: int = 2
    processing_s: float = 0.0
    """How long a worker takes once it has picked a job up."""
    processing_wait: int | None = None
    """`wait_time` reported while processing; None: the true time left. The server
    computes it from the worker's measured speed (horde/classes/base/waiting_prompt.py
    get_status, with processing_generation.py get_expected_time_left), which for a
    new worker is far off (127 s reported for a 0.2 s generation in the live run)."""
    queued_text_requests: int = 0
    """Text requests queued elsewhere on the horde (besides this fake's live jobs)."""
    status_cache_s: float = 1.0
    burst_429: int = 0
    """The next submits refused as over the user's parallel-request limit (rc
    `TooManyPrompts`, horde/apis/v2/base.py GenerateTemplate, horde/exceptions.py)."""
    fault_next: int = 0
    zero_kudos_keys: set[str] = field(default_factory=set)
    """Registered keys without kudos: capped like the anonymous key (reserve_kudos fails
    for both, horde/apis/v2/kobold.py TextAsyncGenerate.initiate_waiting_prompt)."""
    down: set[str] = field(default_factory=set)
    """Paths that answer 500 (a client must then do without that list)."""
    jobs: dict[str, Job] = field(default_factory=dict)
    submits: list[Submit] = field(default_factory=list)
    polls: list[tuple[str, float]] = field(default_factory=list)
    poll_429s: int = 0
    cancels: list[str] = field(default_factory=list)
    model_lists: int = 0
    performance_reads: int = 0
    _windows: dict[tuple[str, float, int], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def model(self, name: str) -> FakeModel | None:
        return next((m for m in self.models if m.name == name), None)

    async def handle(self, request: Request) -> Response:
        path = request.path
        if path in self.down:
            return _error(500, "Internal Server Error", "InternalServerError")
        status = re.fullmatch(r"/api/v2/generate/text/status/([\w-]+)", path)
        if request.method == "POST" and path == "/api/v2/generate/text/async":
            return self._submit(request)
        if status and request.method == "GET":
            return self._status(status.group(1))
        if status and request.method == "DELETE":
            return self._cancel(status.group(1))
        if request.method == "GET" and path == "/api/v2/status/models":
            return self._models()
        if request.method == "GET" and path == "/api/v2/status/performance":
            return self._performance()
        if request.method == "GET" and path == "/api/v2/workers":
            return self._workers()
        return _error(404, f"no route {request.method} {path}", "NotFound")

    def _limited(self, key: str, limits: tuple[tuple[int, float], ...]) -> Response | None:
        """A fixed-window limit (flask-limiter's "fixed-window" strategy, horde/limiter.py):
        429 with the limit as its `message` and no `rc`, `Retry-After` the seconds to the
        window's end (0 or 1 for the per-second limit)."""
        now = time.time()
        for amount, period in limits:
            window = (key, period, int(now // period))
            self._windows[window] = self._windows.get(window, 0) + 1
            if self._windows[window] > amount:
                left = (window[2] + 1) * period - now
                unit = "1 second" if period == 1.0 else "1 minute"
                body = {"message": f"{amount} per {unit}"}
                return Response(429, body, headers={"Retry-After": str(int(left + 0.5))})
        return None

    def _submit(self, request: Request) -> Response:
        try:
            body = request.json()
        except ValueError:
            body = None
        headers = dict(request.headers)
        headers.setdefault("client-agent", DEFAULT_CLIENT_AGENT)
        now = time.monotonic()
        with self._lock:
            refused = self._limited("submit", SUBMIT_LIMITS) or self._refusal(body, headers)
            if refused is not None:
                said = str(refused.body.get("message")) if isinstance(refused.body, dict) else ""
                self.submits.append(Submit(body or {}, headers, None, refused.status, now, said))
                return refused
            assert isinstance(body, dict)
            name = body["models"][0]
            model = self.model(name)
            params = body.setdefault("params", {})
            possible = model is not None and model.workers > 0 and model.takes(params)
            job = Job(
                uuid.uuid4().hex,
                name,
                body["prompt"],
                params,
                headers.get("apikey", ANON_KEY) == ANON_KEY,
                possible,
                faulted=self.fault_next > 0 and possible,
            )
            if job.faulted:
                self.fault_next -= 1
            self.jobs[job.id] = job
            answer: dict[str, Any] = {"id": job.id, "kudos": 1}
            if not possible:
                answer["message"] = NO_WORKER_MESSAGE
            self.submits.append(Submit(body, headers, job.id, 202, now, answer.get("message", "")))
        return Response(202, answer)

    def _refusal(self, body: Any, headers: dict[str, str]) -> Response | None:
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return _error(400, "Input payload validation failed", "BadRequest")
        if not body.get("models"):
            return _error(400, "a model must be named", "BadRequest")
        if self.burst_429 > 0:
            self.burst_429 -= 1
            return _error(
                429,
                "Parallel requests (3) exceeded user limit (2). Please try again later or "
                "request to increase your concurrency.",
                "TooManyPrompts",
            )
        params = body.get("params") or {}
        key = headers.get("apikey", ANON_KEY)
        length = int(params.get("max_length") or 80)
        cap = upfront_cap(self._queue(), self._threads())
        if length > cap and (key == ANON_KEY or key in self.zero_kudos_keys):
            if body.get("allow_downgrade"):
                params["max_length"] = cap  # TextWaitingPrompt.downgrade
                body["params"] = params
                return None
            kudos = round(length * 13 / 21, 2)
            return _error(
                403,
                f"Due to heavy demand, for requests over {cap} tokens, the client needs to "
                f"already have the required kudos. This request requires {kudos} kudos to "
                "fulfil.",
                "KudosUpfront",
            )
        return None

    def _queue(self) -> int:
        """Text requests waiting or processing (horde/database/functions.py count_totals)."""
        live = sum(1 for j in self.jobs.values() if j.done_at is None and not j.cancelled)
        return self.queued_text_requests + live

    def _threads(self) -> int:
        return sum(m.workers * m.threads for m in self.models)

    def _status(self, job_id: str) -> Response:
        now = time.monotonic()
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return _error(404, "Request not found", "RequestNotFound")
            if (limited := self._limited(job_id, ((POLLS_PER_MINUTE, 60.0),))) is not None:
                self.poll_429s += 1
                return limited
            self.polls.append((job_id, now))
            if job.cached is not None and now - job.cached[0] < self.status_cache_s:
                return Response(200, job.cached[1])
            job.polls += 1
            body = self._job_status(job, now)
            job.cached = (now, body)
        return Response(200, body)

    def _job_status(self, job: Job, now: float) -> dict[str, Any]:
        left = max(0, self.polls_to_done - job.polls)
        running = job.possible and not job.faulted and not job.cancelled
        if running and left == 0 and job.started is None:
            job.started = now
        remaining = (
            max(0.0, job.started + self.processing_s - now) if job.started is not None else 0.0
        )
        done = running and job.started is not None and (remaining <= 0 or job.text is not None)
        processing = running and job.started is not None and not done
        if done and job.text is None:
            cap = int(job.params.get("max_length") or 80) * CHARS_PER_TOKEN
            job.text = self.answer(job.prompt, job.params)[:cap]
            job.done_at = now
        generations = (
            [{"text": job.text, "model": job.model, "state": "ok", "worker_name": "fake"}]
            if done
            else []
        )
        if processing:
            wait = (
                self.processing_wait if self.processing_wait is not None else math.ceil(remaining)
            )
        else:
            wait = left if job.possible else 0
        return {
            "finished": int(done),
            "processing": int(processing),
            "restarted": 0,
            "waiting": int(not done and not processing),
            "done": done,
            "faulted": job.faulted,
            "wait_time": wait,
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
            body = self._job_status(job, time.monotonic())
        return Response(200, body)

    def _models(self) -> Response:
        """`count` is the threads serving the model, summed over its workers
        (horde/database/functions.py get_available_models: total_threads)."""
        with self._lock:
            self.model_lists += 1
            rows = [
                {
                    "name": m.name,
                    "count": m.workers * m.threads,
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

    def _performance(self) -> Response:
        """The horde's totals (horde/apis/v2/base.py HordeLoad, fields from
        horde/apis/models/v2.py HordePerformance)."""
        with self._lock:
            self.performance_reads += 1
            threads = self._threads()
            body = {
                "queued_requests": 0,
                "queued_text_requests": self._queue(),
                "worker_count": 0,
                "text_worker_count": sum(m.workers for m in self.models),
                "thread_count": 0,
                "text_thread_count": threads,
                "queued_tokens": float(sum(m.queued for m in self.models)),
                "past_minute_tokens": 0.0,
            }
        return Response(200, body)

    def _workers(self) -> Response:
        with self._lock:
            rows = [
                {
                    "name": f"worker-{i}-{m.name}",
                    "type": "text",
                    "models": [m.name],
                    "threads": m.threads,
                    "max_length": m.max_length,
                    "max_context_length": context,
                }
                for m in self.models
                for i, context in enumerate(m.worker_contexts())
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


def _error(status: int, message: str, rc: str) -> Response:
    return Response(status, {"message": message, "rc": rc})


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
