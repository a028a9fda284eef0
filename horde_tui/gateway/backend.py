"""The litellm side of the gateway: one place that imports litellm, calls it, retries.

Facts about litellm 1.110.2 this module is built around:
- its retry layers multiply (the OpenAI SDK retries twice by default), so every call
  passes `max_retries=0` and this module owns the backoff;
- a refused connection surfaces as `InternalServerError`, not a connection error;
- streamed usage arrives only with `stream_options={"include_usage": True}`;
- a model it does not know has no price and `supports_function_calling` is False for it;
- unmapped-model calls print a "Provider List" line to stdout unless
  `suppress_debug_info` is set; and without `LITELLM_LOCAL_MODEL_COST_MAP=True` the
  import fetches a price map from the network and can hang for seconds;
- every call prices the response for litellm's own bookkeeping (for a model without a
  price, by trying every fallback spelling) and builds its logging payload, with no
  callbacks registered too, and no setting or call parameter turns either off. Counted
  as Python function calls per `acompletion` (all threads, 50-100 calls on the stub,
  2026-11-30): about 9,550 as this module calls it; the same with `no-log`,
  `litellm.logging = False`, `disable_streaming_logging`, `drop_params = False` or the
  payload's excluded fields; 12,580 with `turn_off_message_logging` (it redacts a copy)
  and 10,500 with a shared `client=` (an httpx client instead of litellm's cached
  aiohttp one); so none of them is set, and `lean` skips both pieces of work instead.
"""

from __future__ import annotations

import asyncio
import gc
import math
import os
import random
import re
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from horde_tui.gateway import lean
from horde_tui.gateway.limiter import AdaptiveLimiter

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class ProviderError(Exception):
    """A provider call failed for good; carries what the member should see."""

    def __init__(
        self, status: int, message: str, kind: str = "provider_error", param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        """The request field refused, when the error is about one."""


@dataclass
class CallResult:
    """A finished non-streaming call: the OpenAI-format response dict plus accounting."""

    response: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    attempts: int


class LiteLLM:
    """Lazy, thread-started litellm import, shared by every request of the gateway.

    The import costs seconds; starting it in a thread when the gateway starts lets the
    server listen at once and the import overlap the run's setup.
    """

    def __init__(self, setup: Callable[[Any], None] | None = None) -> None:
        self._setup = setup
        """Run on the module once imported (the AI Horde provider registers there)."""
        self._module: Any = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self.import_seconds: float | None = None

    def start_import(self) -> None:
        threading.Thread(target=self._import, name="litellm-import", daemon=True).start()

    def _import(self) -> None:
        started = time.perf_counter()
        collecting = gc.isenabled()
        gc.disable()  # see freeze_import_heap: the import's objects all live on
        try:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.suppress_debug_info = True
            litellm.drop_params = True
            litellm.telemetry = False
            skip_unread_bookkeeping(litellm)
            if self._setup is not None:
                self._setup(litellm)
            freeze_import_heap()
            self._module = litellm
        except BaseException as exc:  # surfaced to every request, never swallowed
            self._error = exc
        finally:
            if collecting:
                gc.enable()
            self.import_seconds = time.perf_counter() - started
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self._module is not None

    async def module(self) -> Any:
        if not self._done.is_set():
            await asyncio.get_running_loop().run_in_executor(None, self._done.wait)
        if self._module is None:
            raise ProviderError(500, f"litellm failed to import: {self._error}", "gateway_error")
        return self._module


def skip_unread_bookkeeping(litellm: Any) -> None:
    """Apply `lean` (litellm's per-call pricing and logging payload, which nothing reads).

    When this litellm's internals differ from what `lean` was written against, nothing is
    replaced: calls work as before, only with that CPU cost, and one line says so.
    """
    refused = lean.apply(litellm)
    if refused:
        print(
            f"horde-tui gateway: litellm's per-call pricing and logging payload are not "
            f"skipped (calls cost more CPU), its internals differ from lean.py's: {refused}; "
            "re-check horde_tui/gateway/lean.py against this litellm",
            file=sys.stderr,
            flush=True,
        )


def freeze_import_heap() -> None:
    """Take what litellm's import left on the heap out of the garbage collector's scans.

    The import leaves about 370,000 objects the collector tracks (its price map, provider
    configs, pydantic models), and every full collection walks them all: 0.2 s each
    here, with the GIL held, so every member's call in flight stalls behind it. The
    first came a few hundred calls into a run, measured as 0.5 ms more CPU per call
    over the 480 calls of `bench_members.py`. Those objects live as long as the
    process, so they are collected once now (dropping the import's own garbage) and
    frozen (`gc.freeze`): later collections walk only what the calls allocate.

    For the same reason the collector is paused while litellm imports (`LiteLLM._import`):
    the full collections the import's allocations trigger find almost nothing to free and
    cost about a fifth of its CPU (4.5-4.8 CPU-s against 3.6-3.8, `python -c "import
    litellm"` with and without `gc.disable()`, 2026-12-06). What the server allocates meanwhile
    is collected at the `gc.collect()` here.
    """
    gc.collect()
    gc.freeze()


def status_of(exc: BaseException) -> int:
    """The HTTP status a litellm/OpenAI exception stands for (500 when unknown)."""
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    name = type(exc).__name__
    if "Timeout" in name:
        return 408
    if "RateLimit" in name:
        return 429
    return 500


def retryable(exc: BaseException) -> bool:
    """False when the error, or the provider error litellm wrapped in it (its
    `__context__`), says another attempt cannot help (`retryable = False`: an AI Horde
    deadline, whose job was cancelled after the longest wait a call may take)."""
    seen: BaseException | None = exc
    for _ in range(8):  # a wrapped error's chain is short; never loop on a cycle
        if seen is None:
            break
        if getattr(seen, "retryable", True) is False:
            return False
        seen = seen.__cause__ or seen.__context__
    return True


def retry_after_s(exc: BaseException, cap_s: float) -> float | None:
    """The provider's `retry-after` in seconds, at most `cap_s`; None when it gave none.

    Capped because the header is the provider's word, not a promise: a quota reset an
    hour away (or a bogus value) would otherwise hold a member's call, and its slot of
    the shared limit, for that long with nothing in the run saying why.
    """
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        wait = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    if math.isnan(wait):
        return None
    return min(max(0.0, wait), cap_s)


def backoff_s(attempt: int, base_s: float) -> float:
    """Exponential backoff with jitter: base, 2*base, 4*base ... capped at 20 s."""
    return min(20.0, base_s * (2 ** (attempt - 1))) * (0.75 + random.random() * 0.5)


_KNOWN: dict[str, bool] = {}
_NO_TOOLS: dict[str, bool] = {}
_REASONING: dict[str, bool] = {}


def _looked_up_once(cache: dict[str, bool], model: str, lookup: Callable[[], bool]) -> bool:
    """`lookup()` for `model`, asked of litellm's map once per gateway process.

    The map does not change while the gateway runs, and litellm answers these questions
    by searching its map afresh on every call: for a model it does not know, it tries
    several spellings and provider fallbacks before it gives up. Asked per request, that
    search would be paid on every call. A lookup that raises counts as False.
    """
    answer = cache.get(model)
    if answer is None:
        try:
            answer = bool(lookup())
        except Exception:
            answer = False
        cache[model] = answer
    return answer


def known_model(litellm: Any, model: str) -> bool:
    """Whether litellm's local map has the model (its price and capabilities)."""

    def lookup() -> bool:
        litellm.get_model_info(model)
        return True

    return _looked_up_once(_KNOWN, model, lookup)


def price(litellm: Any, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD cost from litellm's local price map; None (unknown) for a model it cannot price."""
    if not known_model(litellm, model):
        return None
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:
        return None
    return float(prompt_cost) + float(completion_cost)


def knows_no_tools(litellm: Any, model: str) -> bool:
    """True only when litellm's map *knows* the model and says it has no function calling."""
    if not known_model(litellm, model):
        return False  # unknown (e.g. a local server): native tool calls stay the default
    return _looked_up_once(
        _NO_TOOLS, model, lambda: not litellm.supports_function_calling(model=model)
    )


def supports_reasoning(litellm: Any, model: str) -> bool:
    """Whether `--thinking` can be sent as `reasoning_effort` to this model.

    False for a model litellm does not know: thinking cannot be mapped, so it is not sent.
    """
    return _looked_up_once(_REASONING, model, lambda: litellm.supports_reasoning(model=model))


def rejects_tools(exc: BaseException) -> bool:
    """A 400-class error saying the provider does not take the `tools` parameter."""
    if status_of(exc) not in (400, 404, 422):
        return False
    text = str(exc).lower()
    return ("tool" in text or "function" in text) and any(
        w in text for w in ("not support", "unsupported", "does not support", "unknown", "invalid")
    )


def usage_of(response: dict[str, Any]) -> tuple[int, int]:
    usage = response.get("usage") or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


@dataclass
class CallOptions:
    """Per-call provider settings resolved by the gateway for one member (from its
    `GatewayConfig`, which holds their defaults)."""

    model: str
    thinking: str
    timeout_s: float
    max_attempts: int
    backoff_base_s: float
    retry_after_max_s: float
    api_base: str | None = None
    api_key: str | None = None
    on_wait: Callable[[float, int], None] | None = field(default=None, repr=False, compare=False)
    """Told of each back-off (its seconds and the status that caused it) before it is
    waited out, so the gateway can tell whose call it holds (`store.activity`)."""


GATEWAY_FIELDS = frozenset({"model", "messages", "tools", "stream", "stream_options", "user"})
"""Request fields the gateway acts on itself: the model it resolves, the conversation, the
tools (native or through the JSON protocol), streaming and whether a streamed reply ends
with usage (the provider is always asked for usage: the budget counts every call), and
`user` (the member, when no `X-Horde-Member` header names it)."""
PROVIDER_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "frequency_penalty",
    "presence_penalty",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "n",
)
"""Chat-completions parameters passed to the provider as given. Any other field of a
request is refused by name (`refused_param`): litellm runs with `drop_params` (the
gateway's own additions must not fail a call), so a parameter it was handed and the
provider does not take would otherwise vanish without a word."""


def refused_param(litellm: Any, model: str, body: dict[str, Any], own: Any = None) -> str | None:
    """The first field of `body` that would not reach `model`'s provider, or None.

    A field the gateway does not know is refused; so is a known parameter the provider
    does not take, by litellm's list for its provider (`own` replaces that list for a
    provider the gateway serves itself, AI Horde). A provider litellm has no list for
    gets every known parameter as sent.
    """
    for name in body:
        if name not in GATEWAY_FIELDS and name not in PROVIDER_PARAMS:
            return name
    asked = [name for name in PROVIDER_PARAMS if name in body]
    if not asked:
        return None
    supported = own
    if supported is None:
        try:
            supported = litellm.get_supported_openai_params(model=model)
        except Exception:
            supported = None
    if supported is None:
        return None
    return next((name for name in asked if name not in supported), None)


def call_kwargs(
    litellm: Any, opts: CallOptions, body: dict[str, Any], member: str
) -> dict[str, Any]:
    """Arguments for `litellm.acompletion` from a member's OpenAI request body."""
    kwargs: dict[str, Any] = {k: body[k] for k in PROVIDER_PARAMS if k in body}
    kwargs.update(
        model=opts.model,
        messages=body.get("messages", []),
        max_retries=0,
        timeout=opts.timeout_s,
        # litellm drops `user` for models outside OpenAI's catalog, so the member is named
        # in a header, which reaches any OpenAI-compatible server unchanged.
        extra_headers={"x-horde-member": member},
    )
    if body.get("tools"):
        kwargs["tools"] = body["tools"]
    if opts.api_base:
        kwargs["api_base"] = opts.api_base
    if opts.api_key:
        kwargs["api_key"] = opts.api_key
    if opts.thinking != "off" and supports_reasoning(litellm, opts.model):
        kwargs["reasoning_effort"] = opts.thinking
    return kwargs


async def _retry_or_raise(
    exc: Exception, attempt: int, opts: CallOptions, limiter: AdaptiveLimiter, request: int
) -> None:
    """Wait out a retryable failure (returning means: try again), else raise it for good.

    `request` is the limiter's number for the attempt that failed, so that a burst of
    429s from requests that were in flight together lowers the limit once.
    """
    no_key = missing_key(_flat(exc))  # however litellm classed it: no attempt can help
    status = 401 if no_key else status_of(exc)
    if status == 429:
        limiter.rate_limited(request)
    if status in RETRY_STATUSES and attempt < opts.max_attempts and retryable(exc):
        wait = retry_after_s(exc, opts.retry_after_max_s)
        wait = wait if wait is not None else backoff_s(attempt, opts.backoff_base_s)
        if opts.on_wait is not None:
            opts.on_wait(wait, status)
        await asyncio.sleep(wait)
        return
    kind = "AuthenticationError" if no_key else type(exc).__name__
    raise ProviderError(status, one_line(exc), kind) from exc


async def complete(
    litellm: Any, kwargs: dict[str, Any], opts: CallOptions, limiter: AdaptiveLimiter
) -> CallResult:
    """A non-streaming call with the gateway's own retries."""
    attempt = 0
    while True:
        attempt += 1
        request = limiter.sent()
        try:
            resp = await litellm.acompletion(**kwargs)
        except Exception as exc:
            await _retry_or_raise(exc, attempt, opts, limiter, request)
            continue
        data = resp.model_dump() if hasattr(resp, "model_dump") else dict(resp)
        prompt, completion = usage_of(data)
        return CallResult(data, prompt, completion, attempt)


async def stream(
    litellm: Any, kwargs: dict[str, Any], opts: CallOptions, limiter: AdaptiveLimiter
) -> AsyncIterator[dict[str, Any]]:
    """A streaming call; retries happen only before the first chunk is out."""
    kwargs = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
    attempt = 0
    while True:
        attempt += 1
        request = limiter.sent()
        try:
            chunks = await litellm.acompletion(**kwargs)
            iterator = chunks.__aiter__()
            first = await iterator.__anext__()
        except StopAsyncIteration:
            return
        except Exception as exc:
            await _retry_or_raise(exc, attempt, opts, limiter, request)
            continue
        yield first.model_dump(exclude_none=True)
        async for chunk in iterator:
            yield chunk.model_dump(exclude_none=True)
        return


_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s+-\s+)+")
"""What litellm puts before a provider's message, e.g.
`litellm.InternalServerError: InternalServerError: OpenAIException - `."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NO_KEY = re.compile(r"missing (?:credentials|[\w ]*api[ _]key)|no (?:api )?key (?:is )?set", re.I)
_KEY_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9_]*_KEY\b")


def one_line(exc: BaseException) -> str:
    """The provider's own message as one line: litellm's long prefixes (its exception
    classes, which mean nothing to a member or the model reading the error, and push
    the provider's words past a truncated status line), ANSI colour and line breaks
    taken out. A missing key, which litellm explains in a paragraph of what may be
    passed and set, becomes the one thing to do (`missing_key`)."""
    text = _flat(exc)
    return missing_key(text) or text[:2000] or type(exc).__name__


def _flat(exc: BaseException) -> str:
    text = " ".join(_ANSI.sub("", str(getattr(exc, "message", None) or exc)).split())
    return _LITELLM_PREFIX.sub("", text) or text


def missing_key(text: str) -> str | None:
    """For a provider's "no key" message, the line naming the variable to set (the
    first one it names); None for any other message."""
    if not _NO_KEY.search(text):
        return None
    names = _KEY_VARIABLE.findall(text)
    if not names:
        return None
    return f"no provider key: set {names[0]} (or give --api-key, or api_key in .horde/config.toml)"
