"""The AI Horde provider: `aihorde/<model>` models, served by the volunteer swarm.

AI Horde (https://aihorde.net) serves open models as text only, through an async job API:
submit (`POST {root}/v2/generate/text/async`), poll (`GET {root}/v2/generate/text/status/
{id}`, cached about a second by the Horde) until `done`, or cancel (`DELETE` on the same
URL). litellm has no provider for it, so this module is one, plugged in through litellm's
own hook (`custom_provider_map` with a `CustomLLM`, see `register`): every call still
goes through `litellm.acompletion`, so the gateway's retries, shared limiter, usage
accounting, budget and JSON tool protocol apply to it unchanged. The models are
registered as text-only (the gateway then speaks the JSON tool protocol to them) and
free in dollars (AI Horde spends kudos, not money).

Importing this module does not import litellm: `horde-tui models` and the run's start
check read the model list through `fetch_models` alone.

The server's rules this client keeps (Haidra-Org/AI-Horde; `tests/support/aihorde.py`
implements them with their source files): the anonymous and zero-kudos cap is on
`max_length` alone, 256 to 512 tokens by the queue (`upfront_cap`), while the context is
the workers' own; submits are paced under the per-IP limit (`Pacer`); "no available
workers" is the submit's `message`; `wait_time` of a processing job is the worker's guess
of the time left, so it is polled every `POLL_BUSY_S` then.

Errors are raised as `HordeError` with an HTTP status the gateway's retry policy reads:
429 (the server's submit rate limit, or the key's parallel requests) is retried with the
shared limiter's backoff; 403 `KudosUpfront` is one line saying what helps; a faulted job
(502, retried: another worker may take it) and a request no worker can take (404, not
retried: horde.py's "a wrong id queues forever") name the model; the per-call deadline
cancels the job and is a 504 that is not retried (`retryable`: a retry would queue the
job again, four deadlines for one call).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from horde_tui import __version__
from horde_tui.common.settings import GatewaySettings
from horde_tui.gateway.jsonproto import CHARS_PER_TOKEN, content_text

PROVIDER = "aihorde"
PREFIX = PROVIDER + "/"
DEFAULT_ROOT = "https://aihorde.net/api"
"""The public AI Horde API root; `--api-base` replaces it (`{api-base}/v2/...`)."""
ANONYMOUS_KEY = "0000000000"
"""AI Horde's anonymous key: lowest priority, and `max_length` capped (`upfront_cap`)."""
UPFRONT_MAX = 512
UPFRONT_MIN = 256
"""The range of the `max_length` served without kudos upfront to the anonymous key and
keys without kudos (AI-Horde horde/classes/kobold/waiting_prompt.py,
require_upfront_kudos); the context is not capped. `UPFRONT_MIN` is used when the queue
cannot be read."""
DEFAULT_MAX_LENGTH = 512
DEFAULT_CONTEXT = 4096
"""Context asked for when the live worker list says nothing about the model."""
_SETTINGS = GatewaySettings()
"""The settings' defaults: the one client exists before a gateway's settings are read."""
POLL_MIN_S = 1.0
"""Polls of one job are limited to 60 a minute (AI-Horde horde/apis/v2/kobold.py,
TextAsyncStatus): one a second at most."""
POLL_BUSY_S = 1.5
"""The poll interval once a worker has the job: its `wait_time` is then a guess from the
worker's measured speed (127 s for a new worker in a live run, for 0.2 s of work)."""
POLL_MAX_S = 10.0
CAPS_TTL_S = 300.0
PERFORMANCE_TTL_S = 30.0
"""How long the queue read for `upfront_cap` is reused."""
SUBMIT_GAP_S = 0.6
SUBMITS_PER_MINUTE = 80
"""Submits are limited per IP to 2 a second and 90 a minute (AI-Horde
horde/apis/limiter_api.py): one gateway process spaces its submits to one API root
under both, for every member of its run or, shared, of its swarm."""
TOKENIZER_MARGIN = 1.25
"""Counted tokens are raised by this much: litellm's tokenizer (tiktoken's cl100k) is
not the workers' own (Llama and Mistral tokenizers split text finer); not measured here."""
SAFE_CHARS_PER_TOKEN = 2
"""Without a tokenizer, a token is taken to hold two characters (digits and spaces do)."""
BACKEND_PREFIXES = ("aphrodite/", "koboldcpp/")
"""How AI Horde's model ids start (the serving backend), as horde.py's HORDE_MODEL has
them: litellm has no provider by these names, so such a model string can only mean AI
Horde (see `aihorde_model`)."""


class HordeError(Exception):
    """A failed AI Horde call, shaped as the gateway reads provider errors: `status_code`
    for its retry policy, `response.headers` for a `retry-after`, `message` one line."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.headers = headers or {}
        self.retryable = retryable
        """False when another attempt cannot help (the gateway's retry reads it): an
        expired deadline already waited the longest a call may, and cancelled the job."""
        self.upfront: int | None = None
        """For a `KudosUpfront` refusal: the `max_length` cap it named."""

    @property
    def response(self) -> Any:
        """An httpx response carrying the status and headers: litellm's error mapping
        reads `response.request`, and the gateway reads `retry-after` from its headers
        (httpx comes with litellm; imported here, on an error, so the import stays light)."""
        import httpx

        request = httpx.Request("POST", DEFAULT_ROOT)
        return httpx.Response(self.status_code, headers=self.headers, request=request)


def is_aihorde(model: str | None) -> bool:
    return bool(model) and str(model).startswith(PREFIX)


def aihorde_model(model: str) -> str:
    """The model string as the gateway names it: horde.py's bare AI Horde id
    (`aphrodite/...`, `koboldcpp/...`) gets the `aihorde/` prefix; others are kept."""
    if model.startswith(BACKEND_PREFIXES):
        return PREFIX + model
    return model


def key_clash(models: Iterable[str], api_key: str | None) -> str | None:
    """Why `HORDE_API_KEY` cannot serve these models together, or None.

    horde.py's users keep `HORDE_API_KEY` (their AI Horde key) and `HORDE_MODEL` (a bare
    AI Horde id, read as `aihorde/<id>` by `aihorde_model`); here the key is the one
    provider key of the run. It goes to AI Horde for an `aihorde/` model, so a run that
    mixes AI Horde and another provider would hand one provider's key to the other; and
    the anonymous key means nothing to any other provider. Both are refused in one line.
    """
    chosen = sorted(set(models))
    horde = [m for m in chosen if is_aihorde(m)]
    other = [m for m in chosen if not is_aihorde(m)]
    if not other:
        return None
    if api_key == ANONYMOUS_KEY:
        return (
            f"HORDE_API_KEY is AI Horde's anonymous key ({ANONYMOUS_KEY}) but {other[0]} is "
            f"not an AI Horde model; write the model as aihorde/<id> (horde.py's HORDE_MODEL "
            "ids are read that way), or give that provider's key"
        )
    if horde and api_key:
        return (
            f"the run mixes AI Horde ({horde[0]}) and {other[0]} with one provider key "
            "(HORDE_API_KEY), which would reach both; use one provider per run, or run AI "
            "Horde with the anonymous key (no HORDE_API_KEY)"
        )
    return None


def horde_id(model: str) -> str:
    """The AI Horde model id of `aihorde/<id>` (litellm hands the handler either)."""
    return model[len(PREFIX) :] if model.startswith(PREFIX) else model


def api_root(api_base: str | None) -> str:
    return (api_base or DEFAULT_ROOT).rstrip("/")


def client_agent() -> str:
    """`Client-Agent` as the Horde asks for it: name:version:contact. The project has no
    public address yet, so the contact part is left empty rather than invented."""
    return f"horde-tui:{__version__}:"


def headers_for(key: str | None) -> dict[str, str]:
    return {
        "apikey": key or ANONYMOUS_KEY,
        "Client-Agent": client_agent(),
        "Content-Type": "application/json",
    }


def is_anonymous(key: str | None) -> bool:
    return not key or key == ANONYMOUS_KEY


def estimate_tokens(text: str) -> int:
    """Tokens of `text` at four characters each, for usage where no tokenizer is set."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def safe_tokens(text: str) -> int:
    """Tokens `text` may take on a worker, counted high, where no tokenizer is set."""
    return -(-len(text) // SAFE_CHARS_PER_TOKEN)


def upfront_cap(queued_text_requests: int, text_threads: int) -> int:
    """The largest `max_length` served without kudos upfront: 512 + 5 a text thread - 0.9
    a queued text request, within 256..512 (AI-Horde horde/classes/kobold/
    waiting_prompt.py, require_upfront_kudos; both numbers are `/v2/status/performance`'s)."""
    cap = UPFRONT_MAX + text_threads * 5 - round(queued_text_requests * 0.9)
    return max(UPFRONT_MIN, min(UPFRONT_MAX, cap))


# -- the live model list ----------------------------------------------------------------------


@dataclass(frozen=True)
class ModelStatus:
    """One text model of the swarm as `/v2/status/models` lists it."""

    name: str
    threads: int
    """Its `count`: the threads of the workers serving it (AI-Horde horde/database/
    functions.py, get_available_models), not the workers."""
    queued: int
    """Tokens waiting for this model."""
    jobs: float
    eta: int
    """Estimated seconds to clear the queue."""
    performance: float

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "threads": self.threads,
            "queued": self.queued,
            "jobs": self.jobs,
            "eta": self.eta,
            "performance": self.performance,
        }


def by_availability(models: Iterable[ModelStatus]) -> list[ModelStatus]:
    """Most available first: models with threads, then the shortest estimated wait, the
    most threads, the shortest queue; the name breaks ties so the order is stable."""
    return sorted(models, key=lambda m: (m.threads <= 0, m.eta, -m.threads, m.queued, m.name))


def parse_models(data: Any) -> list[ModelStatus]:
    rows = data if isinstance(data, list) else []
    out = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            continue
        out.append(
            ModelStatus(
                row["name"],
                _int(row.get("count")),
                _int(row.get("queued")),
                _float(row.get("jobs")),
                _int(row.get("eta")),
                _float(row.get("performance")),
            )
        )
    return out


async def fetch_models(
    api_base: str | None = None, key: str | None = None, timeout_s: float = 15.0
) -> list[ModelStatus]:
    """The swarm's live text models (`GET {root}/v2/status/models?type=text`)."""
    data = await _get_json(api_root(api_base), "/v2/status/models?type=text", key, timeout_s)
    return parse_models(data)


def no_worker_warning(model: str, live: list[ModelStatus]) -> str | None:
    """One line when `model` (`aihorde/<id>`) has no worker in the live list, else None."""
    wanted = horde_id(model)
    found = next((m for m in live if m.name == wanted), None)
    if found is not None and found.threads > 0:
        return None
    close = [m.name for m in by_availability(live) if m.threads > 0][:3]
    hint = f"; available now: {', '.join(close)}" if close else ""
    return (
        f"warning: no AI Horde worker serves {wanted} today, so its jobs would wait forever; "
        f"pick a live model with `horde-tui models`{hint}"
    )


@dataclass(frozen=True)
class Caps:
    """What every live worker of the model accepts: the smallest of their caps."""

    max_length: int
    max_context_length: int


def parse_caps(data: Any, model: str) -> Caps | None:
    """The caps of the workers serving `model` (`/v2/workers?type=text`), None when none
    is listed. The smallest caps: a worker takes a job only within its own (AI-Horde
    horde/classes/kobold/worker.py, can_generate), so any worker of the model can."""
    rows = [
        r
        for r in (data if isinstance(data, list) else [])
        if isinstance(r, dict) and model in (r.get("models") or [])
    ]
    lengths = [n for r in rows if (n := _int(r.get("max_length"))) > 0]
    contexts = [n for r in rows if (n := _int(r.get("max_context_length"))) > 0]
    if not rows:
        return None
    return Caps(min(lengths, default=DEFAULT_MAX_LENGTH), min(contexts, default=DEFAULT_CONTEXT))


# -- prompts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """An instruct format: how each role's turn is written, how the reply starts, where it
    stops. `system_in_user` folds the system text into the first user turn (formats
    without a system role)."""

    system: str
    user: str
    assistant: str
    reply: str
    stops: tuple[str, ...]
    system_in_user: bool = False


TEMPLATES: dict[str, Template] = {
    "chatml": Template(
        "<|im_start|>system\n{}<|im_end|>\n",
        "<|im_start|>user\n{}<|im_end|>\n",
        "<|im_start|>assistant\n{}<|im_end|>\n",
        "<|im_start|>assistant\n",
        ("<|im_end|>", "<|im_start|>"),
    ),
    "llama3": Template(
        "<|start_header_id|>system<|end_header_id|>\n\n{}<|eot_id|>",
        "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n{}<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        ("<|eot_id|>", "<|start_header_id|>"),
    ),
    "mistral": Template(
        "{}", "[INST] {} [/INST]", "{}</s>", "", ("[INST]", "</s>"), system_in_user=True
    ),
    "gemma": Template(
        "{}",
        "<start_of_turn>user\n{}<end_of_turn>\n",
        "<start_of_turn>model\n{}<end_of_turn>\n",
        "<start_of_turn>model\n",
        ("<end_of_turn>", "<start_of_turn>"),
        system_in_user=True,
    ),
    "plain": Template(
        "### System:\n{}\n\n",
        "### User:\n{}\n\n",
        "### Assistant:\n{}\n\n",
        "### Assistant:\n",
        ("\n### User:", "\n### System:"),
    ),
}
_FAMILIES = (
    (("llama-3", "llama3", "l3-", "l3.", "llama-4"), "llama3"),
    (("qwen", "chatml", "hermes", "dolphin", "qwq"), "chatml"),
    (("gemma",), "gemma"),
    (("mistral", "mixtral", "cydonia", "skyfall", "nemo", "magnum", "behemoth"), "mistral"),
)


def template_for(model: str) -> Template:
    """The instruct format of a model id where its family is known, plain turns else."""
    name = horde_id(model).lower()
    for needles, family in _FAMILIES:
        if any(n in name for n in needles):
            return TEMPLATES[family]
    return TEMPLATES["plain"]


def build_prompt(messages: list[dict[str, Any]], model: str) -> tuple[str, list[str]]:
    """The prompt for `messages` in the model's instruct format, and its stop sequences.

    AI Horde is stateless: the whole conversation goes in every prompt, ending where the
    assistant's reply starts."""
    tpl = template_for(model)
    parts: list[str] = []
    pending_system: list[str] = []
    for message in messages:
        role = message.get("role")
        text = content_text(message.get("content"))
        if role in ("system", "developer"):
            if tpl.system_in_user:
                pending_system.append(text)
            else:
                parts.append(tpl.system.format(text))
        elif role == "assistant":
            parts.append(tpl.assistant.format(text))
        else:  # user, and tool results a caller did not render (read as user text)
            if pending_system:
                text = "\n\n".join([*pending_system, text])
                pending_system = []
            parts.append(tpl.user.format(text))
    if pending_system:
        parts.append(tpl.user.format("\n\n".join(pending_system)))
    return "".join(parts) + tpl.reply, list(tpl.stops)


def fit_prompt(prompt: str, tokens: int, count: Callable[[str], int]) -> str:
    """`prompt` within `tokens` as `count` counts them, cut in the middle: a worker cuts
    an overlong prompt from the front, which loses the instructions, and the end holds
    the latest turn and the format reminder. The JSON protocol's compact mode normally
    keeps prompts under the room; this is the net for what it misjudged, and for a
    request it did not rebuild (one without tools)."""
    size = count(prompt)
    if size <= tokens:
        return prompt
    marker = "\n[…]\n"
    keep = len(prompt)
    while keep > 0:
        keep = min(keep - 1, int(keep * max(0, tokens) / max(size, 1) * 0.95))
        head = max(0, keep // 3)
        tail = max(0, keep - head - len(marker))
        fitted = prompt[:head] + marker + (prompt[-tail:] if tail else "")
        size = count(fitted)
        if size <= tokens:
            return fitted
    return ""


# -- the job client ---------------------------------------------------------------------------


@dataclass
class Generation:
    """A finished job: the text, the tokens counted for it, the worker's model."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str


@dataclass
class Pacer:
    """Submits to one API root spaced under the server's per-IP limit (`SUBMIT_GAP_S`,
    `SUBMITS_PER_MINUTE`). Each submit reserves its slot before it waits, with no await
    in between, so concurrent calls of one event loop never take the same slot."""

    gap_s: float = SUBMIT_GAP_S
    per_minute: int = SUBMITS_PER_MINUTE
    sent: deque[float] = field(default_factory=deque)

    def delay(self) -> float:
        """Reserve the next free slot; the seconds to wait for it."""
        now = time.monotonic()
        while self.sent and now - self.sent[0] > 60.0:
            self.sent.popleft()
        at = max(now, self.sent[-1] + self.gap_s) if self.sent else now
        if len(self.sent) >= self.per_minute:
            at = max(at, self.sent[-self.per_minute] + 60.0)
        self.sent.append(at)
        return at - now


@dataclass
class Client:
    """Submits, polls and cancels AI Horde jobs; one per gateway process.

    `live` holds every job submitted and not yet finished or cancelled, so a stopping
    gateway can cancel them all (`cancel_all`): an abandoned job would still spend a
    worker's time and the user's kudos."""

    deadline_s: float = _SETTINGS.aihorde_deadline_s
    poll_min_s: float = POLL_MIN_S
    poll_max_s: float = POLL_MAX_S
    poll_busy_s: float = POLL_BUSY_S
    allow_downgrade: bool = _SETTINGS.allow_downgrade
    """Sent as `allow_downgrade` when on: the server then lowers a request over the
    upfront cap instead of refusing it (the `allow_downgrade` setting)."""
    tokenizer: Callable[[str], int] | None = None
    """A real token counter (litellm's, set by `register`); `safe_tokens` without one."""
    live: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    _caps: dict[tuple[str, str], tuple[float, Caps | None]] = field(default_factory=dict)
    _upfront: dict[str, tuple[float, int]] = field(default_factory=dict)
    _capped_keys: set[tuple[str, str]] = field(default_factory=set)
    """Registered keys refused `KudosUpfront` (no kudos): kept under the cap after."""
    _pacers: dict[str, Pacer] = field(default_factory=dict)

    def tokens_of(self, text: str) -> int:
        """Tokens `text` may take on a worker, counted high (`TOKENIZER_MARGIN`)."""
        if self.tokenizer is None:
            return safe_tokens(text)
        return math.ceil(self.tokenizer(text) * TOKENIZER_MARGIN)

    def usage_tokens(self, text: str) -> int:
        """Tokens of `text` for usage (AI Horde reports none): the tokenizer's count."""
        return self.tokenizer(text) if self.tokenizer is not None else estimate_tokens(text)

    async def caps(self, model: str, api_base: str | None, key: str | None) -> Caps | None:
        """The live caps of the model's workers, asked once per `CAPS_TTL_S`; None when the
        list cannot be read or names no worker for it (the Horde then decides)."""
        root, name = api_root(api_base), horde_id(model)
        cached = self._caps.get((root, name))
        if cached is not None and time.monotonic() - cached[0] < CAPS_TTL_S:
            return cached[1]
        try:
            data = await _get_json(root, "/v2/workers?type=text", key, 15.0)
            caps = parse_caps(data, name)
        except HordeError:
            caps = None
        self._caps[(root, name)] = (time.monotonic(), caps)
        return caps

    async def upfront(self, root: str, key: str | None) -> int:
        """The `max_length` cap now, from the queue (`/v2/status/performance`, read once per
        `PERFORMANCE_TTL_S`; `UPFRONT_MIN` when it cannot be read)."""
        cached = self._upfront.get(root)
        if cached is not None and time.monotonic() - cached[0] < PERFORMANCE_TTL_S:
            return cached[1]
        try:
            data = await _get_json(root, "/v2/status/performance", key, 15.0)
            data = data if isinstance(data, dict) else {}
            cap = upfront_cap(
                _int(data.get("queued_text_requests")), _int(data.get("text_thread_count"))
            )
        except HordeError:
            cap = UPFRONT_MIN
        self._upfront[root] = (time.monotonic(), cap)
        return cap

    def capped(self, root: str, key: str | None) -> bool:
        """Whether `key` is served without kudos upfront only under the cap: the
        anonymous key, and a key the server refused for want of kudos."""
        return is_anonymous(key) or (root, key or "") in self._capped_keys

    async def limits(
        self, model: str, api_base: str | None, key: str | None, max_tokens: int | None
    ) -> tuple[int, int]:
        """(max_length, max_context_length) for one call: the smallest caps of the model's
        live workers, and `max_length` under the upfront cap for a capped key."""
        root = api_root(api_base)
        caps = await self.caps(model, api_base, key)
        context = caps.max_context_length if caps else DEFAULT_CONTEXT
        length = caps.max_length if caps else DEFAULT_MAX_LENGTH
        if max_tokens:
            length = min(length, max_tokens)
        if self.capped(root, key):
            length = min(length, await self.upfront(root, key))
        return max(16, min(length, context // 2)), context

    async def compact_tokens(
        self,
        model: str,
        api_base: str | None,
        key: str | None,
        messages: list[dict[str, Any]] | None = None,
    ) -> int:
        """The prompt budget the JSON protocol must fit, in its four-character tokens (its
        compact mode rebuilds the conversation only when it does not fit): the workers'
        context less the generation and a margin for the instruct format, at the
        characters a token of this conversation holds (counted on its last 20,000)."""
        length, context = await self.limits(model, api_base, key, None)
        room = max(64, context - length - 16)
        sample = "\n".join(content_text(m.get("content")) for m in messages or [])[-20_000:]
        if len(sample) < 1000:
            return room
        counted = await asyncio.to_thread(self.tokens_of, sample)
        chars_per_token = min(CHARS_PER_TOKEN, len(sample) / max(1, counted))
        return max(64, int(room * chars_per_token / CHARS_PER_TOKEN))

    async def generate(
        self,
        model: str,
        messages: list[dict[str, Any]],
        api_base: str | None,
        key: str | None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        temperature: float | None = None,
    ) -> Generation:
        """One chat call as one AI Horde job: submit, poll until done, read the text."""
        root = api_root(api_base)
        length, context = await self.limits(model, api_base, key, max_tokens)
        prompt, stops = build_prompt(messages, model)
        prompt = await asyncio.to_thread(fit_prompt, prompt, context - length, self.tokens_of)
        params: dict[str, Any] = {
            "n": 1,
            "max_length": length,
            "max_context_length": context,
            "stop_sequence": [*stops, *(stop or [])][:16],
        }
        if temperature is not None:
            params["temperature"] = temperature
        body: dict[str, Any] = {"prompt": prompt, "params": params, "models": [horde_id(model)]}
        if self.allow_downgrade:
            body["allow_downgrade"] = True
        job = await self._submit(root, key, body, model)
        deadline = time.monotonic() + self.deadline_s
        try:
            text = await self._wait(root, key, job, model, deadline)
        except BaseException:
            await self.cancel(job)
            raise
        self.live.pop(job, None)
        used = await asyncio.to_thread(self.usage_tokens, prompt)
        return Generation(text, used, self.usage_tokens(text), model)

    async def _submit(self, root: str, key: str | None, body: dict[str, Any], model: str) -> str:
        pacer = self._pacers.setdefault(root, Pacer())
        await asyncio.sleep(pacer.delay())
        status, data, headers = await _request(
            "POST", f"{root}/v2/generate/text/async", key, body, 60.0
        )
        if status >= 400:
            error = _api_error(status, data, headers, model, root)
            if error.upfront is not None:
                # The refusal names the cap it applied: this key is kept under it now.
                self._capped_keys.add((root, key or ""))
                self._upfront[root] = (time.monotonic(), error.upfront)
            raise error
        data = data if isinstance(data, dict) else {}
        job = str(data.get("id") or "")
        if not job:
            raise HordeError(502, f"AI Horde accepted no job for {horde_id(model)}: {data!r:.200}")
        self.live[job] = (root, key)
        # No worker can take it (the model, or its context or length): the submit's
        # `message` says so (AI-Horde horde/apis/v2/kobold.py, get_size_too_big_message).
        if "no available worker" in str(data.get("message") or "").lower():
            await self.cancel(job)
            raise _no_worker(model, body.get("params"))
        return job

    async def _wait(self, root: str, key: str | None, job: str, model: str, deadline: float) -> str:
        url = f"{root}/v2/generate/text/status/{job}"
        while True:
            status, data, headers = await _request("GET", url, key, None, 30.0)
            if status >= 400 and status != 429:
                raise _api_error(status, data, headers, model, root)
            data = data if isinstance(data, dict) else {}
            if data.get("faulted"):
                raise HordeError(
                    502, f"AI Horde: the job for {horde_id(model)} faulted on its worker"
                )
            if data.get("is_possible") is False:
                raise _no_worker(model)
            if data.get("done"):
                generations = data.get("generations") or []
                first = generations[0] if generations and isinstance(generations[0], dict) else {}
                return str(first.get("text") or "")
            left = deadline - time.monotonic()
            if left <= 0:
                raise HordeError(
                    504,
                    f"AI Horde: no result from {horde_id(model)} within {self.deadline_s:g} s "
                    f"(queue position {data.get('queue_position', '?')}); the job was "
                    "cancelled; a registered key (more kudos) is served sooner",
                    retryable=False,
                )
            wait = _int(data.get("wait_time"))
            if _int(data.get("processing")) > 0:
                # A worker has it: `wait_time` is its guess of the time left, often far off.
                pause = max(self.poll_min_s, min(self.poll_busy_s, wait))
            else:
                pause = min(self.poll_max_s, max(self.poll_min_s, wait / 2))
            await asyncio.sleep(min(pause, left))

    async def cancel(self, job: str) -> None:
        """Cancel a job (`DELETE` on its status URL), once, shielded from the caller's own
        cancellation; a failure to reach the Horde is not the caller's error. A job a
        worker has already picked up runs to its end on the worker: the server only stops
        handing it out (AI-Horde horde/apis/v2/kobold.py, TextAsyncStatus.delete)."""
        where = self.live.pop(job, None)
        if where is None:
            return
        root, key = where
        url = f"{root}/v2/generate/text/status/{job}"
        try:
            await asyncio.shield(_request("DELETE", url, key, None, 10.0))
        except (HordeError, asyncio.CancelledError):
            pass

    async def cancel_all(self) -> int:
        """Cancel every job still live (the gateway is stopping); how many there were."""
        jobs = list(self.live)
        await asyncio.gather(*(self.cancel(j) for j in jobs), return_exceptions=True)
        return len(jobs)


CLIENT = Client()
"""The gateway process's one client (its live jobs, cached caps and submit pacing)."""


def _no_worker(model: str, params: Any = None) -> HordeError:
    params = params if isinstance(params, dict) else {}
    asked = (
        f" at max_context_length {params.get('max_context_length')} and max_length "
        f"{params.get('max_length')}"
        if params
        else ""
    )
    return HordeError(
        404,
        f"AI Horde: no available worker takes the model {horde_id(model)}{asked} now, so "
        "its job would wait forever; pick a live model with `horde-tui models`",
    )


_UPFRONT_CAP = re.compile(r"requests over (\d+) tokens")
"""The cap a `KudosUpfront` refusal names (AI-Horde horde/apis/v2/kobold.py)."""


def _api_error(
    status: int, data: Any, headers: dict[str, str], model: str, root: str = ""
) -> HordeError:
    """An AI Horde error answer as the gateway's error, one line, saying what to do."""
    data = data if isinstance(data, dict) else {}
    rc = str(data.get("rc") or "")
    said = " ".join(str(data.get("message") or "").split())[:300]
    if rc == "KudosUpfront" or (status == 403 and "kudos" in said.lower()):
        error = HordeError(
            403,
            f"AI Horde refused the request for {horde_id(model)} (KudosUpfront: {said}); "
            "what helps: a lower max_length (this key is kept under the cap from now on), "
            "a registered key with kudos (HORDE_API_KEY, from aihorde.net/register), or "
            "allow_downgrade (HORDE_ALLOW_DOWNGRADE=on: the server lowers max_length)",
        )
        found = _UPFRONT_CAP.search(said)
        error.upfront = int(found.group(1)) if found else UPFRONT_MIN
        return error
    if status == 429 and rc:
        return HordeError(429, f"AI Horde: too many parallel requests for this key ({rc}: {said})")
    if status == 429:
        return HordeError(429, f"AI Horde: the server's submit rate limit ({said})", headers)
    if status in (401, 403):
        return HordeError(status, f"AI Horde refused the key ({rc or status}: {said})")
    if status == 404 and root and not root.endswith("/api"):
        return HordeError(
            404,
            f"AI Horde answered 404 at {root}: --api-base is the API root, which ends in "
            f"/api (try --api-base {root}/api)",
        )
    where = f" for {horde_id(model)}" if model else ""
    return HordeError(status, f"AI Horde answered {status}{where}: {said or rc}")


async def _get_json(root: str, path: str, key: str | None, timeout_s: float) -> Any:
    status, data, headers = await _request("GET", root + path, key, None, timeout_s)
    if status >= 400:
        raise _api_error(status, data, headers, "", root)
    return data


async def _request(
    method: str, url: str, key: str | None, body: dict[str, Any] | None, timeout_s: float
) -> tuple[int, Any, dict[str, str]]:
    """One HTTP exchange with the Horde: (status, JSON body or None, headers). A network
    failure is a 503 `HordeError` (retried by the gateway like a provider's outage)."""
    import aiohttp  # the gateway's own dependency; imported here so the CLI's import is light

    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.request(method, url, json=body, headers=headers_for(key)) as resp,
        ):
            text = await resp.text()
            try:
                data = json.loads(text) if text else None
            except ValueError:
                data = {"message": text[:300]}
            return resp.status, data, {k.lower(): v for k, v in resp.headers.items()}
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise HordeError(
            503, f"AI Horde unreachable at {url}: {exc or type(exc).__name__}"
        ) from exc


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


# -- litellm's seam ---------------------------------------------------------------------------


def register(litellm: Any, models: Iterable[str], client: Client = CLIENT) -> None:
    """Make litellm route `aihorde/...` to this provider (its `custom_provider_map`), and
    enter the run's AI Horde models in its model map as text-only and free, so the
    gateway uses the JSON tool protocol for them and prices their calls at $0."""
    from litellm import CustomLLM  # the gateway process only
    from litellm.types.utils import GenericStreamingChunk, ModelResponse

    class AIHordeLLM(CustomLLM):
        """litellm's handler for `aihorde/<model>`: one AI Horde job per call."""

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            generation = await _generate(client, kwargs)
            response = ModelResponse(
                model=generation.model,
                choices=[
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": generation.text},
                        "finish_reason": "stop",
                    }
                ],
                usage={
                    "prompt_tokens": generation.prompt_tokens,
                    "completion_tokens": generation.completion_tokens,
                    "total_tokens": generation.prompt_tokens + generation.completion_tokens,
                },
            )
            return response

        # litellm types `astreaming` as a coroutine returning an iterator but iterates
        # what it returns, which an async generator is.
        async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
            """A stream of one chunk, sent once the job is done (AI Horde does not stream)."""
            generation = await _generate(client, kwargs)
            chunk: GenericStreamingChunk = {
                "text": generation.text,
                "is_finished": True,
                "finish_reason": "stop",
                "usage": {
                    "prompt_tokens": generation.prompt_tokens,
                    "completion_tokens": generation.completion_tokens,
                    "total_tokens": generation.prompt_tokens + generation.completion_tokens,
                },
                "index": 0,
                "tool_use": None,
            }
            yield chunk

    handler = AIHordeLLM()
    # cl100k, bundled with litellm: a model-named count could fetch a tokenizer online.
    client.tokenizer = lambda text: int(litellm.token_counter(text=text))
    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map or [] if p.get("provider") != PROVIDER],
        {"provider": PROVIDER, "custom_handler": handler},
    ]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    entries = {
        m: {
            "litellm_provider": PROVIDER,
            "mode": "chat",
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
            "supports_function_calling": False,
            "max_tokens": DEFAULT_MAX_LENGTH,
        }
        for m in models
        if is_aihorde(m)
    }
    if entries:
        litellm.register_model(entries)


SENT_PARAMS = frozenset({"max_tokens", "max_completion_tokens", "stop", "temperature"})
"""The request parameters a job carries (`_generate` reads them); the gateway refuses
any other by name for an AI Horde model rather than drop it."""


async def _generate(client: Client, kwargs: dict[str, Any]) -> Generation:
    """The job for one litellm call, from the arguments litellm hands a custom handler."""
    params = kwargs.get("optional_params") or {}
    stop = params.get("stop")
    return await client.generate(
        str(kwargs.get("model") or ""),
        list(kwargs.get("messages") or []),
        kwargs.get("api_base"),
        kwargs.get("api_key"),
        max_tokens=params.get("max_tokens") or params.get("max_completion_tokens"),
        stop=[stop] if isinstance(stop, str) else list(stop or []),
        temperature=params.get("temperature"),
    )


def models_table(models: list[ModelStatus]) -> str:
    """`horde-tui models` as a table: the run's model string, threads, queue and wait."""
    if not models:
        return "no text model has a worker on this AI Horde now"
    rows = [("model (--model)", "threads", "queued tokens", "est. wait")]
    rows += [(PREFIX + m.name, str(m.threads), str(m.queued), f"{m.eta} s") for m in models]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )
