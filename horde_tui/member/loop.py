"""The member's agent loop: messages -> gateway -> tool calls -> results -> repeat.

Targeted messages from other members (`horde_tui.store.inbox`) are inserted before each
model call as one user message fenced as data; a session whose model stopped calling
tools gets one more turn when new messages arrived, at most `inbox_turns` times. The
supervisor's notices (`horde_tui.store.notices`, a clean stop's wrap-up) are inserted
there too, labelled as the supervisor's and outside any fence.

It ends when the model answers without a tool call (`completed`), when the gateway
fails for good (`model_error`), when the model says nothing at all (`no_output`), when
the parent stops it (`killed`), when the model keeps sending one identical refused
call, or repeating itself, after it was told to stop (`looping`), or at the turn cap `HORDE_MAX_TURNS` while it still
wanted a turn, to call tools or to read messages that arrived (`turns`: the repair
phase's attempts run under such a cap). The loop guard (`store.activity.RepeatGuard`)
also ends it as `looping` for the same call sent with the same result LOOP_EXIT times
in a row, or the same cycle of two or three calls repeated CYCLE_EXIT times. Tool results and peer text enter the context
between the session's fence markers (`horde_tui.common.fence`: a random nonce the text cannot
know, so it cannot close the fence), labelled as data, never as instructions.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common import prompts
from horde_tui.common.fence import Fence
from horde_tui.common.gatewayclient import GatewayClient, GatewayError
from horde_tui.common.inputs import loads
from horde_tui.member.config import MemberConfig
from horde_tui.member.confirm import ConfirmGate
from horde_tui.member.session import (
    StatusStream,
    Transcript,
    interrupted_results,
    load_conversation,
)
from horde_tui.member.tools import (
    GREP_DEFINITION,
    TOOL_DEFINITIONS,
    ToolOutput,
    WorkspaceTools,
)
from horde_tui.protocol import run_action
from horde_tui.protocol.dispatch import READS
from horde_tui.protocol.schema import tool_schema
from horde_tui.sandbox.shell import comparable
from horde_tui.store import inbox, notices
from horde_tui.store.activity import LOOP_EXIT, LOOP_WARN, Repeat, RepeatGuard
from horde_tui.store.causes import MEMBER_EXIT_CAUSES, token_share_spent
from horde_tui.store.lock import LockTimeoutError
from horde_tui.store.paths import HordePaths
from horde_tui.store.runs import sessions_dir
from horde_tui.store.store import HordeStore
from horde_tui.store.transcript import summarize
from horde_tui.store.usage import fold as usage_fold

__all__ = ["LOOP_EXIT", "LOOP_WARN", "Exit", "MemberLoop"]
_REFUSAL = ("refused:", "usage:")
READONLY_TOOLS = ("read", "grep", "horde")
"""A read-only session's tools (helpers, the ask analyst): no writes, no shell."""
NOT_AN_OBJECT = (
    "usage: the horde tool's arguments must be one JSON object and nothing else (no prose, "
    'no code fence), e.g. {"action": "list"}'
)


@dataclass
class LoopState:
    turns: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    last_text: str = ""
    calls_since_reminder: int = 0
    last_reminder: float = field(default_factory=time.monotonic)
    stop_requested: bool = False
    inbox_turns: int = 0
    """Extra turns taken because messages arrived after the model stopped calling tools."""
    repeats: RepeatGuard = field(default_factory=RepeatGuard)
    """How often each call (tool and normalised arguments) repeated (`store.activity`)."""
    looping: str = ""
    """What repeated past the guard's limit, when the session must end (the exit detail)."""


@dataclass
class Exit:
    cause: str
    message: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        # The parent, the report and the member table map these names: a new one must be
        # added to MEMBER_EXIT_CAUSES (and so to them) first.
        if self.cause not in MEMBER_EXIT_CAUSES:
            raise ValueError(f"unknown exit cause {self.cause!r}; known: {MEMBER_EXIT_CAUSES}")


class MemberLoop:
    """One session of one member."""

    def __init__(
        self,
        config: MemberConfig,
        client: GatewayClient,
        status: StatusStream | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.status = status or StatusStream()
        self.state = LoopState()
        self.store = HordeStore(config.horde_dir, config.name)
        gate = ConfirmGate(config.run_dir, config.name) if config.settings.confirm else None
        self.tools = WorkspaceTools(
            config.workdir, HordePaths(config.horde_dir).top, sandbox=config.sandbox, confirm=gate
        )
        self.definitions = [*TOOL_DEFINITIONS, tool_schema()]
        if config.readonly:
            self.definitions = [
                d
                for d in [*TOOL_DEFINITIONS, GREP_DEFINITION, tool_schema()]
                if d["function"]["name"] in READONLY_TOOLS
            ]
        sessions = config.sessions_dir or sessions_dir(config.run_dir)
        self.transcript = (
            Transcript.resume(config.resume_session)
            if config.resume_session
            else Transcript(sessions, config.name)
        )
        task_file = config.task_file or config.run_dir / "TASK.md"
        self.task = _read(task_file) or "(no TASK.md found for this run)"
        self.messages: list[dict[str, Any]] = []
        self.fence = Fence()
        """This session's fence around untrusted text (tool results, peer messages)."""
        self.notices = notices.NoticeReader(
            HordePaths(config.horde_dir).notices(config.run), config.name
        )

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> Exit:
        if self.config.resume_session:
            self._resume(self.config.resume_session)
        else:
            self._open()
        while True:
            if self.state.stop_requested:
                return Exit("killed", self.state.last_text, "stopped by the parent")
            if self.state.turns >= self.config.settings.max_turns:
                return self._capped("the model was still calling tools")
            if self.config.max_tokens and self._tokens() >= self.config.max_tokens:
                return Exit(
                    "killed", self.state.last_text, token_share_spent(self.config.max_tokens)
                )
            self.deliver_notices()
            self.deliver_inbox()
            self.state.turns += 1
            self.status.emit("turn-start", turn=self.state.turns)
            try:
                streamed = {"on_delta": self._delta} if self.config.stream else {}
                response = self.client.chat(self.messages, self.definitions, **streamed)
            except GatewayError as exc:
                return Exit("model_error", self.state.last_text, exc.message[:2000])
            message = self._take_reply(response)
            calls = message.get("tool_calls") or []
            if not calls:
                text = (message.get("content") or "").strip()
                if not text and self.state.tool_calls == 0:
                    return Exit("no_output", "", "the model returned neither text nor a tool call")
                if self._inbox_turn():
                    continue
                if self.state.turns >= self.config.settings.max_turns and self._mail_waiting():
                    return self._capped("messages were still waiting to be read")
                return Exit("completed", text or self.state.last_text)
            for call in calls:
                if self.state.stop_requested:
                    return Exit("killed", self.state.last_text, "stopped by the parent")
                self._run_call(call)
                if self.state.looping:
                    return Exit("looping", self.state.last_text, self.state.looping)

    def _open(self) -> None:
        system = _read(self.config.run_dir / "SYSTEM.md") or prompts.SYSTEM_PROMPT
        if not self.config.readonly:  # helpers are not the run's members: no persona
            system = prompts.with_persona(system, self.config.run_dir, self.config.name)
        first = prompts.first_message(
            self.task, self.config.name, self.config.role, self.config.workdir, self.config.layer
        )
        self._add({"role": "system", "content": system})
        if self.config.brief:
            first += "\n\n" + self.config.brief
        self._add({"role": "user", "content": first})

    def _resume(self, path: Path) -> None:
        """Carry on the session in `path` after its process ended (the supervisor was
        restarted): the model gets the conversation so far, calls that never reported a
        result answered as interrupted, and a notice that the session was resumed. The
        turn cap counts the turns already taken."""
        conv = load_conversation(path)
        self.messages = conv.messages
        for result in interrupted_results(conv.unanswered):
            self._add(result)
        self._add({"role": "user", "content": prompts.RESUMED_NOTICE})
        st = self.state
        st.turns, st.tool_calls, st.last_text = conv.turns, conv.tool_calls, conv.last_text
        st.prompt_tokens, st.completion_tokens = conv.prompt_tokens, conv.completion_tokens
        st.cost_usd = conv.cost_usd
        self.status.emit(
            "resumed", turns=conv.turns, messages=len(conv.messages), transcript=str(path)
        )

    def deliver_notices(self) -> None:
        """Insert the supervisor's notices written since the last turn, one user message
        each, outside any fence. Helpers (read-only sessions) are not the run's members."""
        if self.config.readonly:
            return
        try:
            texts = self.notices.read_new()
        except OSError:
            return  # read again at the next turn boundary
        for text in texts:
            self._add({"role": "user", "content": text})
            self.status.emit("notice", chars=len(text))

    def deliver_inbox(self) -> bool:
        """Insert undelivered targeted messages as one user message; True when any came.

        Helpers (read-only sessions) cannot answer, so they get none. A store that is busy
        or unwritable only delays delivery to the next turn boundary.
        """
        if self.config.readonly:
            return False
        try:
            text = inbox.deliver(self.store, self.config.run, self.config.name, self.fence)
        except (LockTimeoutError, OSError):
            return False
        if not text:
            return False
        self._add({"role": "user", "content": text})
        self.status.emit("inbox", chars=len(text))
        return True

    def _inbox_turn(self) -> bool:
        """One more turn for messages that arrived after the model stopped calling tools,
        within `inbox_turns` per session and the turn budget."""
        if self.state.inbox_turns >= self.config.settings.inbox_turns:
            return False
        if self.state.turns >= self.config.settings.max_turns or self.state.stop_requested:
            return False
        if not self.deliver_inbox():
            return False
        self.state.inbox_turns += 1
        return True

    def _mail_waiting(self) -> bool:
        """Undelivered thread traffic for this member (helpers get none)."""
        if self.config.readonly:
            return False
        try:
            self.store.refresh()
        except OSError:
            return False
        return bool(inbox.pending(self.store.state, self.config.name))

    def _tokens(self) -> int:
        return self.state.prompt_tokens + self.state.completion_tokens

    def _capped(self, why: str) -> Exit:
        return Exit(
            "turns",
            self.state.last_text,
            f"turn cap of {self.config.settings.max_turns} reached; {why}",
        )

    def _delta(self, text: str) -> None:
        """A piece of a streamed answer, told as it arrives (the whole still follows as
        the `message` status line)."""
        self.status.emit("delta", text=text)

    def _take_reply(self, response: dict[str, Any]) -> dict[str, Any]:
        choice = (response.get("choices") or [{}])[0]
        message = dict(choice.get("message") or {})
        usage = response.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        cost = usage.get("horde_cost_usd")
        usage_fold(self.state, prompt, completion, cost)
        self.status.emit(
            "usage",
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost,
            total_prompt_tokens=self.state.prompt_tokens,
            total_completion_tokens=self.state.completion_tokens,
        )
        kept = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            kept["tool_calls"] = [
                {"id": c.get("id"), "type": "function", "function": c.get("function", {})}
                for c in message["tool_calls"]
            ]
        self._add(
            kept, usage={"prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": cost}
        )
        text = (message.get("content") or "").strip()
        if text:
            self.state.last_text = text
            self.status.emit("message", text=text[:4000])
        return kept

    def _run_call(self, call: dict[str, Any]) -> None:
        fn = call.get("function") or {}
        name = str(fn.get("name") or "")
        raw_args = fn.get("arguments") or "{}"
        started = time.monotonic()
        self.status.emit("tool-start", tool=name, summary=summarize(name, raw_args))
        output = self._dispatch(name, raw_args)
        self.state.tool_calls += 1
        self.state.calls_since_reminder += 1
        repeat = self._count_repeat(name, raw_args, output)
        text = self.fence.wrap(f"{name} result", _with_notice(output.text, repeat))
        reminder = self._reminder_due()
        if reminder:
            text += "\n\n" + reminder
        # The count goes with the result into the transcript, where the screens read it,
        # and into the status line, where the supervisor does (`store.activity`).
        counted = {"repeat": repeat.to_json()} if repeat.count > 1 else {}
        self._add(
            {"role": "tool", "tool_call_id": call.get("id"), "name": name, "content": text},
            **counted,
        )
        self.status.emit(
            "tool-end",
            tool=name,
            ok=output.ok,
            ms=round((time.monotonic() - started) * 1000, 1),
            **counted,
        )

    def _count_repeat(self, name: str, raw_args: Any, output: ToolOutput) -> Repeat:
        """Count the call in the loop guard; at its limit the session is marked looping.

        A refusal counts however far apart its repeats are; any other call only when
        sent with the same result in a row (a failing test command run after each edit
        is not a loop), and a ledger read never (it is how a member waits for another).
        """
        refused = not output.ok and output.text.startswith(_REFUSAL)
        wait = name == "horde" and not refused and _action(raw_args) in READS
        key = f"{name} {_normalised(raw_args)}"
        result = comparable(output.text) if name == "bash" else output.text
        repeat = self.state.repeats.see(key, summarize(name, raw_args), result, refused, wait)
        if repeat.count >= repeat.limit:
            self.state.looping = repeat.describe()
        return repeat

    def _dispatch(self, name: str, raw_args: Any) -> ToolOutput:
        offered = {d["function"]["name"] for d in self.definitions}
        if name not in offered:
            return ToolOutput(
                False,
                f"refused: tool {name!r} is not available in this session (tools: "
                f"{', '.join(sorted(offered))}); use one of those",
                name,
            )
        if name != "horde":
            return self.tools.dispatch(name, raw_args)
        try:
            args = loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
        except (ValueError, TypeError):
            args = None
        if not isinstance(args, dict):
            return ToolOutput(False, NOT_AN_OBJECT, "horde ?")
        if self.config.readonly and args.get("action") not in READS:
            return ToolOutput(
                False,
                f"refused: this session is read-only (helper rule); the horde actions it may "
                f"use are {', '.join(sorted(READS))}",
                summarize(name, args),
            )
        result = run_action(
            self.store,
            args,
            run=self.config.run,
            role=self.config.role,
            siblings=self.config.siblings,
        )
        if result.ok and result.event:
            self.config.heartbeat.touch()
        return ToolOutput(result.ok, result.text, summarize(name, args))

    def _reminder_due(self) -> str:
        cfg, st = self.config, self.state
        by_calls = (
            cfg.settings.remind_calls > 0 and st.calls_since_reminder >= cfg.settings.remind_calls
        )
        by_time = (
            cfg.settings.remind_ms > 0
            and (time.monotonic() - st.last_reminder) * 1000 >= cfg.settings.remind_ms
        )
        if not (by_calls or by_time):
            return ""
        st.calls_since_reminder = 0
        st.last_reminder = time.monotonic()
        self.store.refresh()
        claimed = [
            i.id
            for i in self.store.state.ideas.values()
            if i.status == "claimed" and i.owner == cfg.name
        ]
        return prompts.reminder(self.task, cfg.name, cfg.role, claimed)

    def _add(self, message: dict[str, Any], **extra: Any) -> None:
        self.messages.append(message)
        self.transcript.write({**message, **extra})


def _with_notice(text: str, repeat: Repeat) -> str:
    """The result, with a stop notice on its first line once the call repeated past the
    guard's warning (the same line: a refusal stays one line)."""
    if repeat.count < repeat.warn:
        return text
    if repeat.count >= repeat.limit:
        ending = "this session ends now"
    else:
        ending = f"at {repeat.limit} this session ends"
    if repeat.kind == "refused":
        did = f"you sent this identical refused call {repeat.count} times"
    elif repeat.kind == "same":
        did = f"you sent this identical call {repeat.count} times in a row and got the same result"
    else:
        did = f"you repeated the same {repeat.period} calls {repeat.count} times in a row"
    first, *rest = text.split("\n", 1)
    notice = f" ({did}; stop sending it and do something else: {ending})"
    return "\n".join([first + notice, *rest])


def _action(raw_args: Any) -> str:
    """The `horde` call's action, or "" when its arguments are not an object."""
    try:
        args = loads(raw_args) if isinstance(raw_args, str) else raw_args
    except (ValueError, TypeError):
        return ""
    return str(args.get("action") or "") if isinstance(args, dict) else ""


def _normalised(raw_args: Any) -> str:
    """Arguments as one canonical string, so key order and spacing do not hide a repeat."""
    try:
        args = loads(raw_args) if isinstance(raw_args, str) else raw_args
        return json.dumps(args, sort_keys=True, ensure_ascii=False)
    except (ValueError, TypeError):
        return str(raw_args)


def _read(path: Any) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
