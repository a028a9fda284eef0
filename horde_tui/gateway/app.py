"""The gateway's HTTP surface: OpenAI chat completions for members, litellm behind it.

Per request: check the run's bearer token, refuse once the cost budget is spent, wait
for a slot of the provider's adaptive limit, call the model (natively, or through the
JSON text protocol for models without tool calls), account tokens and cost, and answer
in OpenAI format, streamed or not. The member never sees which path was taken.

A gateway started `--shared` (one per `horde-tui eval`) also takes runs that join it
(`POST /v1/runs` with its own token): each brings its own token and directory, so its
usage, cost and budget stay its own, while every run's calls wait on the one provider
limit. The import of litellm (seconds) is paid once for all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from horde_tui.common.httpserve import (
    Request,
    Response,
    StreamResponse,
    bearer_token,
    error_body,
    token_matches,
    unauthorized,
)
from horde_tui.common.settings import GatewaySettings
from horde_tui.gateway import aihorde, backend, jsonproto
from horde_tui.gateway.accounting import Accounting
from horde_tui.gateway.backend import CallOptions, LiteLLM, ProviderError
from horde_tui.gateway.limiter import AdaptiveLimiter, LimiterPool
from horde_tui.store.activity import Backoff, clear_backoff, write_backoff

FETCH_TOOLS = frozenset({"links", "sitemap"})
CUT_UNSAFE_TOOLS = frozenset({jsonproto.SHELL_TOOL, "edit", "write", *FETCH_TOOLS})
"""JSON protocol: tools whose cut-off call is sent back to the model, never run.

Half a command or half a file does damage: `rm -rf build/x` cut is `rm -rf b`, and a cut
`write` or `edit` leaves a truncated file. A cut `links` or `sitemap` URL names another
page or another host (`https://exa`): fetching it is a request to a site nobody chose,
and its links would mislead the model (horde.py drops a cut string for the same
reason). A cut `read` or `horde` call is harmless or still useful, so it is repaired
and run.
"""
CUT_ADVICE = {
    jsonproto.SHELL_TOOL: " Use a shorter command.",
    **dict.fromkeys(FETCH_TOOLS, " Send the whole URL, and nothing else in that call."),
}
"""What a cut call's correction asks for, by tool (else: split a long write or edit)."""


@dataclass
class GatewayConfig:
    """Everything the gateway needs to know about the run's models: its part of the
    settings (with the models resolved, `aihorde/<name>` as its provider route), validated
    from its variables and flags by `build_config`, and what this process was started with."""

    token: str
    settings: GatewaySettings = field(default_factory=GatewaySettings)
    usage_path: Path | None = None
    budget_flag: Path | None = None
    """Touched once when the budget is reached, so the supervisor can stop clean."""
    timeout_s: float = 600.0
    max_attempts: int = 4
    shared_limit_dir: Path | None = None
    """Where the limits shared with other runs' gateways live (`SHARED_LIMIT_ENV`)."""
    shared: bool = False
    """Takes runs that join it (`--shared`): their tokens, usage files and budgets."""
    run_dir: Path | None = None
    """Where a back-off of a member's call is noted while it lasts (`BackoffNotes`)."""

    @property
    def model(self) -> str:
        """The run's model: a gateway never starts without one (`build_config`)."""
        return self.settings.model or ""


MIN_RUN_TOKEN = 16
MODEL_ALIAS = "horde"
"""The model name members send (docs/guide/members-gateway.md, "The gateway"): whichever
model the gateway serves the calling member (`--member-model`, else the run's model)."""
JSON_PROTOCOL_REFUSES = ("n", "logprobs", "top_logprobs", "response_format")
"""Parameters the JSON tool protocol cannot honour: it reads one text reply as a tool
call or an answer and rebuilds the message, so more choices, token logprobs or a reply
format of the client's would not survive it."""
UNAUTHORIZED = "missing or wrong bearer token for this run's gateway"
"""The shortest token a joining run may bring (the supervisor's are 43 characters)."""


def budget_refusal(config: GatewayConfig, litellm: Any) -> str | None:
    """Why a cost budget cannot be enforced with these models, or None when it can.

    litellm has no price for some models (local servers, models newer than its map): their
    calls cost "unknown", which never adds up to a budget. A budget the user set as a
    spending cap that can never trip is worse than none, since it looks like protection;
    so the gateway refuses to start (or a run to join) rather than run unguarded. Costs
    nothing to refuse: no call has been made yet.
    """
    models = sorted({config.model, *config.settings.member_models.values()})
    unpriced = [m for m in models if backend.price(litellm, m, 1, 1) is None]
    if not unpriced:
        return None
    return (
        f"refused --max-cost-usd {config.settings.max_cost_usd:g} (HORDE_MAX_COST_USD): litellm has "
        f"no price for {', '.join(unpriced)}, so the cost of its calls is unknown and the "
        "budget could never be reached; unset the budget, or use a model litellm prices"
    )


class BackoffNotes:
    """The back-offs of members' calls, noted in the run folder while they last.

    A member waits on its one call in flight and cannot hear of a back-off, so the
    gateway tells its readers instead: the supervisor, which must not take a member the
    provider holds back for a silent one, and the member table (`store.activity`)."""

    def __init__(self, run_dir: Path | None) -> None:
        self.run_dir = run_dir
        self.since: dict[str, float] = {}
        """Member -> when its call in flight was first backed off."""

    def hook(self, member: str) -> Callable[[float, int], None] | None:
        """What the backend calls before each back-off of `member`'s call."""
        if self.run_dir is None:
            return None
        run_dir = self.run_dir

        def note(wait_s: float, status: int) -> None:
            now = time.time()
            since = self.since.setdefault(member, now)
            with contextlib.suppress(OSError):  # a note lost only shows less, never more
                write_backoff(run_dir, member, Backoff(since, now + wait_s, status))

        return note

    def queued(self, member: str, limit: float) -> None:
        """`member`'s call waits for a slot under the provider's limit (`limit` calls)."""
        if self.run_dir is None:
            return
        now = time.time()
        since = self.since.setdefault(member, now)
        with contextlib.suppress(OSError):
            write_backoff(self.run_dir, member, Backoff(since, now, 429, max(1, int(limit))))

    def admitted(self, member: str) -> None:
        """The queued call got its slot: it goes to the provider now."""
        self.done(member)

    def done(self, member: str) -> None:
        """The member's call ended (answered or failed for good)."""
        if self.since.pop(member, None) is not None and self.run_dir is not None:
            with contextlib.suppress(OSError):
                clear_backoff(self.run_dir, member)


class Gateway:
    """The request handler; one per gateway process."""

    def __init__(self, config: GatewayConfig, litellm: LiteLLM | None = None) -> None:
        self.config = config
        models = [config.model, *config.settings.member_models.values()]
        self.litellm = litellm or LiteLLM(setup=lambda module: aihorde.register(module, models))
        aihorde.CLIENT.deadline_s = config.settings.aihorde_deadline_s
        aihorde.CLIENT.allow_downgrade = config.settings.allow_downgrade
        self.accounting = Accounting(
            config.usage_path, config.settings.max_cost_usd, budget_flag=config.budget_flag
        )
        self.runs: dict[str, Accounting] = {}
        """Shared: the runs that joined, by token, each with its own accounting."""
        self.limiters = LimiterPool(
            maximum=config.settings.max_in_flight, shared=config.shared_limit_dir
        )
        self.json_models: set[str] = set()
        """Models switched to the JSON protocol after rejecting `tools` (recorded once)."""
        self.started = time.time()
        self.backoffs = BackoffNotes(config.run_dir)
        self.joined_backoffs: dict[Path, BackoffNotes] = {}
        """Shared: each joined run's notes, in its own folder (member names repeat)."""

    # -- routing -------------------------------------------------------------------------

    def authorize(self, req: Request) -> Response | None:
        """The token check, on the head alone: the server calls it before reading a body,
        so a process without the token cannot make the gateway buffer one."""
        if req.path == "/health" or self._caller(req) is not None:
            return None
        return unauthorized(UNAUTHORIZED, "horde-gateway", req.headers)

    async def handle(self, req: Request) -> Response | StreamResponse:
        if req.path == "/health":
            return Response(200, {"ok": True, "litellm_ready": self.litellm.ready})
        account = self._caller(req)
        if account is None:
            return unauthorized(UNAUTHORIZED, "horde-gateway", req.headers)
        if req.method == "GET" and req.path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "horde-tui"} for m in self.models]
            return Response(200, {"object": "list", "data": data})
        if req.method == "GET" and req.path == "/v1/usage":
            summary = account.summary()
            summary["json_protocol_models"] = sorted(self.json_models)
            summary["litellm_import_s"] = self.litellm.import_seconds
            summary["limiters"] = self.limiters.snapshot()
            if account is self.accounting and self.config.shared:
                summary["runs"] = len(self.runs)
            return Response(200, summary)
        if req.method == "POST" and req.path == "/v1/chat/completions":
            return await self._chat(req, account)
        if req.method == "POST" and req.path in ("/v1/runs", "/v1/runs/end"):
            return await self._runs(req, account)
        return _error(404, f"no route {req.method} {req.path}", "not_found")

    def _caller(self, req: Request) -> Accounting | None:
        """The accounting of the run whose token the request carries: the gateway's own,
        or (shared) a run that joined it; None for any other token."""
        given = bearer_token(req.headers)
        if token_matches(given, self.config.token):
            return self.accounting
        for token, account in self.runs.items():
            if token_matches(given, token):
                return account
        return None

    @property
    def models(self) -> list[str]:
        """The models this gateway serves, as `/v1/models` lists them."""
        return sorted({self.config.model, *self.config.settings.member_models.values()})

    def _model(self, asked: Any, member: str) -> str | Response:
        """The model a request names: the alias (or none) is the member's own; any other
        must be one the gateway serves, else an OpenAI-shaped 404 `model_not_found`."""
        if asked is None or asked == MODEL_ALIAS:
            return self.config.settings.member_models.get(member, self.config.model)
        if not isinstance(asked, str):
            return _error(400, "'model' must be a string", "invalid_request_error", "model")
        if asked in self.models:
            return asked
        if aihorde.aihorde_model(asked) in self.models:
            return aihorde.aihorde_model(asked)
        served = ", ".join(self.models)
        return Response(
            404,
            error_body(
                f"The model `{asked[:200]}` is not served by this gateway; it serves "
                f"{served} (or `{MODEL_ALIAS}` for the member's own model)",
                "invalid_request_error",
                "model_not_found",
                "model",
            ),
        )

    # -- runs joining a shared gateway ---------------------------------------------------

    async def _runs(self, req: Request, account: Accounting) -> Response:
        """`/v1/runs` joins a run (its token, directory, budget); `/v1/runs/end` lets one
        go (its token is refused from then on) and answers with its figures."""
        if not self.config.shared:
            return _error(
                404,
                "this gateway serves one run; a gateway started with --shared takes others "
                "(horde-tui eval starts one)",
                "not_found",
            )
        if account is not self.accounting:
            return _error(
                403, "only the shared gateway's own token joins or ends runs", "auth_error"
            )
        try:
            body = req.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _error(400, "body must be a JSON object", "invalid_request_error")
        if req.path == "/v1/runs/end":
            token = body.get("token")
            ended = self.runs.pop(token, None) if isinstance(token, str) else None
            if ended is None:
                return _error(404, "no run on this gateway has that token", "not_found")
            return Response(200, ended.summary())
        joined = await self._joining(body)
        if isinstance(joined, Response):
            return joined
        self.runs[body["token"]] = joined
        return Response(200, {"ok": True, "pid": os.getpid(), "model": self.config.model})

    async def _joining(self, body: dict[str, Any]) -> Accounting | Response:
        """The accounting of the run `body` describes, or why it may not join (one line)."""
        token, folder, budget = body.get("token"), body.get("dir"), body.get("max_cost_usd")
        if not isinstance(token, str) or len(token) < MIN_RUN_TOKEN:
            return _error(
                400,
                f"'token' must be a string of {MIN_RUN_TOKEN} characters or more",
                "invalid_request_error",
            )
        if token in self.runs or token == self.config.token:
            return _error(409, "refused: that token already names a run here", "conflict")
        if (
            not isinstance(folder, str)
            or not Path(folder).is_absolute()
            or not Path(folder).is_dir()
        ):
            return _error(
                400,
                f"'dir' is not a directory (an absolute path): {folder!r}",
                "invalid_request_error",
            )
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, int | float)
            or not math.isfinite(budget)
            or budget <= 0
        ):
            return _error(
                400,
                "'max_cost_usd' must be a positive number, or null for none",
                "invalid_request_error",
            )
        for name, mine in (
            ("model", self.config.model),
            ("api_base", self.config.settings.api_base),
        ):
            asked = body.get(name) or None
            if name == "model" and isinstance(asked, str):
                asked = aihorde.aihorde_model(asked)  # as this gateway named its own
            if asked is not None and asked != mine:
                return _error(
                    409,
                    f"refused: this shared gateway serves {name} {mine or 'unset'}; the run "
                    f"asks for {asked}; run it with the eval's settings",
                    "conflict",
                )
        if budget is not None:
            refusal = budget_refusal(
                replace(
                    self.config,
                    settings=self.config.settings.model_copy(
                        update={"max_cost_usd": float(budget)}
                    ),
                ),
                await self.litellm.module(),
            )
            if refusal:
                return _error(409, refusal, "conflict")
        path = Path(folder)
        return Accounting(
            path / "usage.jsonl",
            None if budget is None else float(budget),
            budget_flag=path / ".budget-reached",
        )

    # -- chat completions ------------------------------------------------------------------

    async def _chat(self, req: Request, account: Accounting) -> Response | StreamResponse:
        try:
            body = req.json()
        except ValueError:
            return _error(400, "request body is not valid JSON", "invalid_request_error")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(
                400, "body must be an object with a 'messages' list", "invalid_request_error"
            )
        # Checked here because the JSON protocol reads every message and tool as an
        # object: a malformed one would otherwise be a 500, or reach the provider.
        if not all(isinstance(m, dict) for m in body["messages"]):
            return _error(400, "each of 'messages' must be an object", "invalid_request_error")
        tools = body.get("tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
        ):
            return _error(400, "'tools' must be a list of objects", "invalid_request_error")
        member = req.headers.get("x-horde-member") or str(body.get("user") or "unknown")
        model = self._model(body.get("model"), member)
        if isinstance(model, Response):
            return model
        if account.budget_reached:
            return _error(402, account.budget_message(), "budget_exceeded")
        notes = self._backoffs(account)
        opts = replace(self._options(member, notes), model=model)
        work = self._answer(body, member, opts, account, notes)
        if aihorde.is_aihorde(opts.model) and req.gone is not None:
            # An AI Horde job nobody will read spends a volunteer worker's time and the
            # user's kudos for minutes: it is cancelled as soon as the member is gone.
            # Other providers' calls run to their end, so their usage is still accounted.
            work = _until_gone(work, req.gone)
        try:
            return await work
        except ProviderError as exc:
            return _error(exc.status, exc.message, exc.kind, exc.param)
        finally:
            notes.done(member)

    def _backoffs(self, account: Accounting) -> BackoffNotes:
        """Where the back-offs of `account`'s calls are noted: its own run folder."""
        if account is self.accounting or account.path is None:
            return self.backoffs
        folder = account.path.parent
        return self.joined_backoffs.setdefault(folder, BackoffNotes(folder))

    async def _answer(
        self,
        body: dict[str, Any],
        member: str,
        opts: CallOptions,
        account: Accounting,
        notes: BackoffNotes,
    ) -> Response | StreamResponse:
        litellm = await self.litellm.module()
        own = aihorde.SENT_PARAMS if aihorde.is_aihorde(opts.model) else None
        refused = backend.refused_param(litellm, opts.model, body, own)
        if refused is not None:
            known = refused in backend.PROVIDER_PARAMS
            why = f"{opts.model} does not take it" if known else "the gateway does not know it"
            raise ProviderError(
                400,
                f"unsupported parameter '{refused[:100]}': {why}, and the gateway passes "
                "every parameter on or refuses it; leave it out",
                "invalid_request_error",
                refused[:100],
            )
        if body.get("stream") and not self._json_mode(litellm, opts.model):
            return await self._stream_native(litellm, body, member, opts, account, notes)
        result = await self._complete(litellm, body, member, opts, account, notes)
        if body.get("stream"):
            return StreamResponse(_sse(_as_chunks(result, _wants_usage(body))))
        return Response(200, result)

    def _options(self, member: str, notes: BackoffNotes) -> CallOptions:
        c = self.config
        return CallOptions(
            model=c.settings.member_models.get(member, c.model),
            api_base=c.settings.api_base,
            api_key=c.settings.api_key,
            thinking=c.settings.thinking,
            timeout_s=c.timeout_s,
            max_attempts=c.max_attempts,
            backoff_base_s=c.settings.gateway_backoff_ms / 1000,
            retry_after_max_s=c.settings.retry_after_max_ms / 1000,
            on_wait=notes.hook(member),
        )

    def _json_mode(self, litellm: Any, model: str) -> bool:
        mode = self.config.settings.tool_protocol
        if mode == "json" or model in self.json_models:
            return True
        return mode == "auto" and backend.knows_no_tools(litellm, model)

    def _may_switch(self, body: dict[str, Any], exc: ProviderError) -> bool:
        """Switch to the JSON protocol after a `tools` refusal, unless the user forced
        native tool calls (`--tool-protocol native`): then the provider's error stands."""
        return (
            bool(body.get("tools"))
            and self.config.settings.tool_protocol != "native"
            and backend.rejects_tools(exc.__cause__ or exc)
        )

    def _limiter_key(self, opts: CallOptions) -> str:
        return f"{opts.model.split('/', 1)[0]}@{opts.api_base or ''}"

    async def _complete(
        self,
        litellm: Any,
        body: dict[str, Any],
        member: str,
        opts: CallOptions,
        account: Accounting,
        notes: BackoffNotes,
    ) -> dict[str, Any]:
        limiter = self.limiters.for_provider(self._limiter_key(opts))
        started = time.perf_counter()
        if limiter.would_wait():
            notes.queued(member, limiter.limit)
        async with limiter.slot():
            notes.admitted(member)
            if self._json_mode(litellm, opts.model) and body.get("tools"):
                result, prompt, completion = await self._json_protocol(
                    litellm, body, member, opts, limiter
                )
            else:
                kwargs = backend.call_kwargs(litellm, opts, body, member)
                try:
                    call = await backend.complete(litellm, kwargs, opts, limiter)
                except ProviderError as exc:
                    if not self._may_switch(body, exc):
                        raise
                    # The provider refused `tools`: switch this model to the JSON protocol
                    # once, record it, and answer this same request that way.
                    self.json_models.add(opts.model)
                    result, prompt, completion = await self._json_protocol(
                        litellm, body, member, opts, limiter
                    )
                else:
                    result, prompt, completion = (
                        call.response,
                        call.prompt_tokens,
                        call.completion_tokens,
                    )
            limiter.succeeded()
        cost = self._account(litellm, account, member, opts.model, prompt, completion, started)
        # Members report cost in their status lines without knowing any price map.
        result["usage"] = {**(result.get("usage") or {}), "horde_cost_usd": cost}
        result["model"] = opts.model  # the id /v1/models lists, not the provider's spelling
        return result

    async def _json_protocol(
        self,
        litellm: Any,
        body: dict[str, Any],
        member: str,
        opts: CallOptions,
        limiter: AdaptiveLimiter,
    ) -> tuple[dict[str, Any], int, int]:
        """Translate tools to a text protocol and the model's JSON reply back to a tool call."""
        refused = next((p for p in JSON_PROTOCOL_REFUSES if p in body), None)
        if refused is None and body.get("tool_choice") not in (None, "auto"):
            refused = "tool_choice"
        if refused is not None:
            raise ProviderError(
                400,
                f"unsupported parameter '{refused}': {opts.model}'s tools go through the "
                "JSON text protocol, which cannot honour it; leave it out",
                "invalid_request_error",
                refused,
            )
        tools = body.get("tools") or []
        names = {t.get("function", {}).get("name", "") for t in tools} - {""}
        messages = body["messages"]
        compact = await self._compact_tokens(opts, messages)
        if compact:
            text_messages = jsonproto.compact_messages(
                messages, tools, jsonproto.chars_for_tokens(compact)
            )
        else:
            text_messages = jsonproto.to_text_messages(messages, tools)
        plain = {k: v for k, v in body.items() if k not in ("tools", "tool_choice", "stream")}
        prompt_total = completion_total = 0
        content = ""
        for _ in range(1 + jsonproto.MAX_FORMAT_RETRIES):
            kwargs = backend.call_kwargs(
                litellm, opts, {**plain, "messages": text_messages}, member
            )
            call = await backend.complete(litellm, kwargs, opts, limiter)
            prompt_total += call.prompt_tokens
            completion_total += call.completion_tokens
            content = _content(call.response)
            # Off the event loop: a long reply that does not parse costs tens of ms of
            # repair, and every member's requests share this loop.
            reply = await asyncio.to_thread(jsonproto.parse_reply, content, names)
            if reply.kind == "tool" and reply.tool is not None:
                if reply.truncated and reply.tool in CUT_UNSAFE_TOOLS:
                    shell = reply.tool == jsonproto.SHELL_TOOL
                    cut = "the reply was cut off mid-" + ("command" if shell else "call")
                    feedback = jsonproto.correction_message(
                        jsonproto.Reply("invalid", error=cut), names
                    ) + CUT_ADVICE.get(
                        reply.tool, " Send less per call: split a long write or edit."
                    )
                elif reply.tool == jsonproto.SHELL_TOOL and jsonproto.repeat_of(
                    reply.tool, reply.args, messages
                ):
                    # Only shell commands are refused on exact repeat: re-reading a file
                    # or a ledger after a change is legitimate.
                    feedback = jsonproto.repeat_message(reply.tool, reply.args)
                else:
                    call_id = f"call_{uuid.uuid4().hex[:24]}"
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [jsonproto.to_tool_call(reply, call_id)],
                    }
                    return (
                        _completion(
                            opts.model, message, "tool_calls", prompt_total, completion_total
                        ),
                        prompt_total,
                        completion_total,
                    )
            elif reply.kind == "answer":
                message = {"role": "assistant", "content": reply.answer or ""}
                return (
                    _completion(opts.model, message, "stop", prompt_total, completion_total),
                    prompt_total,
                    completion_total,
                )
            else:
                feedback = jsonproto.correction_message(reply, names)
            text_messages = [
                *text_messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": feedback},
            ]
        # Out of corrections: hand the model's own words back as its final answer, so the
        # member stops instead of looping on a model that cannot follow the format.
        message = {"role": "assistant", "content": content}
        return (
            _completion(opts.model, message, "stop", prompt_total, completion_total),
            prompt_total,
            completion_total,
        )

    async def _compact_tokens(
        self, opts: CallOptions, messages: list[dict[str, Any]]
    ) -> int | None:
        """The compact-mode budget: the setting, or for an AI Horde model what its key and
        live workers allow (the smaller when both say)."""
        budgets = [self.config.settings.compact_tokens]
        if aihorde.is_aihorde(opts.model):
            budgets.append(
                await aihorde.CLIENT.compact_tokens(
                    opts.model, opts.api_base, opts.api_key, messages
                )
            )
        given = [b for b in budgets if b]
        return min(given) if given else None

    async def _stream_native(
        self,
        litellm: Any,
        body: dict[str, Any],
        member: str,
        opts: CallOptions,
        account: Accounting,
        notes: BackoffNotes,
    ) -> Response | StreamResponse:
        limiter = self.limiters.for_provider(self._limiter_key(opts))
        kwargs = backend.call_kwargs(litellm, opts, body, member)
        started = time.perf_counter()
        wants_usage = _wants_usage(body)

        async def chunks() -> AsyncIterator[dict[str, Any]]:
            prompt = completion = 0
            async with limiter.slot():
                async for chunk in backend.stream(litellm, kwargs, opts, limiter):
                    chunk = {**chunk, "model": opts.model}
                    usage = chunk.pop("usage", None)
                    if usage:
                        prompt = int(usage.get("prompt_tokens") or 0)
                        completion = int(usage.get("completion_tokens") or 0)
                        # The same field a non-streamed reply carries (priced on the
                        # spot; the usage chunk is the last one with data).
                        cost = backend.price(litellm, opts.model, prompt, completion)
                        usage = {**usage, "horde_cost_usd": cost}
                    if wants_usage:
                        chunk["usage"] = usage
                    elif not chunk.get("choices"):
                        # Usage nobody asked for: the budget has it; a client reading
                        # `choices[0]` of every chunk (OpenAI's quickstart) must not
                        # meet a chunk without choices.
                        continue
                    yield chunk
                limiter.succeeded()
            self._account(litellm, account, member, opts.model, prompt, completion, started)

        agen = chunks()
        try:
            first = await agen.__anext__()
        except StopAsyncIteration:
            first = None
        except ProviderError as exc:
            if not self._may_switch(body, exc):
                raise
            # As in `_complete`: the provider refused `tools`, so this model switches to
            # the JSON protocol, whose finished reply is sent as synthesized chunks.
            self.json_models.add(opts.model)
            result = await self._complete(litellm, body, member, opts, account, notes)
            return StreamResponse(_sse(_as_chunks(result, wants_usage)))
        return StreamResponse(_sse(_prepend(first, agen)))

    def _account(
        self,
        litellm: Any,
        account: Accounting,
        member: str,
        model: str,
        prompt: int,
        completion: int,
        started: float,
    ) -> float | None:
        """Price the call and record it in the calling run's accounting; the run's budget
        flag is written the moment its budget is reached."""
        cost = backend.price(litellm, model, prompt, completion)
        latency_ms = (time.perf_counter() - started) * 1000
        was_reached = account.budget_reached
        account.record(member, model, prompt, completion, cost, latency_ms)
        flag = account.budget_flag
        if flag is not None and account.budget_reached and not was_reached:
            flag.write_text(json.dumps(account.summary()) + "\n")
        return cost


async def _until_gone(
    work: Coroutine[Any, Any, Response | StreamResponse], gone: asyncio.Event
) -> Response | StreamResponse:
    """`work`'s answer, or `work` cancelled once the client's connection is closed (the
    provider's cancel path runs: an AI Horde job is deleted). The answer then goes
    nowhere; it is a 499 for the record."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(gone.wait())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the gateway is stopping: the call ends with it
        task.cancel()
        raise
    finally:
        watch.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return _error(499, "the member closed its request; the call was cancelled", "client_gone")


def _error(status: int, message: str, kind: str, param: str | None = None) -> Response:
    return Response(status, error_body(message, kind, str(status), param))


def _wants_usage(body: dict[str, Any]) -> bool:
    """The client asked for a streamed reply's usage (`stream_options.include_usage`)."""
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _content(response: dict[str, Any]) -> str:
    try:
        return response["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return ""


def _completion(
    model: str, message: dict[str, Any], finish: str, prompt: int, completion: int
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _as_chunks(result: dict[str, Any], with_usage: bool) -> AsyncIterator[dict[str, Any]]:
    """A finished completion re-sent as stream chunks (for the JSON protocol path), each
    choice in its own chunks; the usage chunk only when the client asked for it."""

    async def gen() -> AsyncIterator[dict[str, Any]]:
        base = {
            "id": result.get("id"),
            "object": "chat.completion.chunk",
            "created": result.get("created"),
            "model": result.get("model"),
        }
        for n, choice in enumerate(result.get("choices") or [{}]):
            index = choice.get("index", n)
            message = choice.get("message") or {}
            delta: dict[str, Any] = {"role": "assistant"}
            if message.get("content"):
                delta["content"] = message["content"]
            if message.get("tool_calls"):
                calls = message["tool_calls"]
                delta["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(calls)]
            opening = {"index": index, "delta": delta, "finish_reason": None}
            if choice.get("logprobs") is not None:
                opening["logprobs"] = choice["logprobs"]
            yield {**base, "choices": [opening]}
            closing = {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
            yield {**base, "choices": [closing]}
        if with_usage:
            yield {**base, "choices": [], "usage": result.get("usage")}

    return gen()


async def _prepend(
    first: dict[str, Any] | None, rest: AsyncIterator[dict[str, Any]]
) -> AsyncIterator[dict[str, Any]]:
    if first is not None:
        yield first
    async for item in rest:
        yield item


async def _sse(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        yield b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"
