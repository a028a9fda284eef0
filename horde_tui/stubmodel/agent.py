"""A scripted *agent* policy for the stub model: plans of tool calls that adapt to results.

Fixed scripts cannot know the ids a run hands out (`#3` or `#5` depends on who wrote
first). A plan item may say `$id` (the id named by the previous tool result, e.g. `ok #3
added`) or `$F` (the newest finding id any result named), and may repeat until the tool
accepts it (`until_ok`), e.g. "validate the answer" while no answer exists yet (each
retry of a `horde` call carries a fresh `requestId`: a new attempt, not a repeat).

A sensible member does not retry a refused call to wait: it reads (`inbox`, `findings`,
`inspect`) until what it waits for is there. An item with `match` (regexes) and
`wait_ms` repeats its read, `wait_ms` apart, until every regex matches the result; the
regexes' groups bind the variables named in `bind` (`$<sql>` = the F# a read showed),
so a plan can cite ids it only learns at run time. `match`/`bind` without `wait_ms`
bind from the item's one result. The position in the plan and the bound variables are
recomputed from the conversation on every request, so a member reset into a fresh
session simply starts its plan again.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from horde_tui.common.fence import find, unfence
from horde_tui.stubmodel.script import Step, ToolCallSpec

_ID = re.compile(r"\b(?:ok|duplicate of|ok answer|ok verification of)\s+(#\d+|[FTCR]\d+)")
_FINDING = re.compile(r"\bF\d+\b")
_REFUSED = ("refused", "usage:", "dropped:")
POLL_TRIES = 150
"""Reads a wait makes before it gives up and moves on; members stop at 200 turns."""


def _result_text(message: Mapping[str, Any]) -> str:
    text = str(message.get("content") or "")
    # Members fence results (`horde_tui.common.fence`); a bare label line is read past too.
    body = unfence(text)
    if body is text and text.startswith("[") and "\n" in text:
        return text.split("\n", 1)[1]
    return body


GATEWAY_REFUSAL = "refused (gateway): "
"""How a text-only model's history marks the gateway's own feedback (a correction)."""


def _text_results(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The results in a text-only conversation (the gateway's JSON protocol): each user
    message right after an assistant turn. A member's result is cut out of the gateway's
    rendering (the text inside the member's fence); anything else is the
    gateway's own feedback on the reply (an unknown tool, a format correction)."""
    results: list[str] = []
    previous = ""
    for message in messages:
        role = str(message.get("role") or "")
        if role == "user" and previous == "assistant":
            text = str(message.get("content") or "")
            if (body := find(text)) is not None:
                results.append(body)
            else:
                results.append(GATEWAY_REFUSAL + text)
        previous = role
    return results


def _ok(text: str) -> bool:
    return not text.lstrip().lower().startswith(_REFUSED)


def _matches(item: Mapping[str, Any], text: str) -> list[str] | None:
    """The groups of every `match` regex in `text`, in order; None if one does not match."""
    groups: list[str] = []
    for pattern in item.get("match", ()):
        m = re.search(str(pattern), text, re.M)
        if m is None:
            return None
        groups += [g or "" for g in m.groups()]
    return groups


def _bound(item: Mapping[str, Any], text: str, variables: dict[str, str]) -> bool:
    """Bind the item's variables from `text`; False when a `match` regex misses."""
    groups = _matches(item, text)
    if groups is None:
        return False
    variables.update(zip(item.get("bind", ()), groups, strict=False))
    return True


def _position(
    plan: Sequence[Mapping[str, Any]],
    results: list[str],
    text_only: bool = False,
    variables: dict[str, str] | None = None,
) -> tuple[int, int]:
    """The plan item due and how many times it was already refused (or, for a wait, how
    many reads did not show what it waits for); fills `variables` with what `bind`
    items bound on the way.

    In a text-only conversation an item marked `gateway_refuses` (a tool that does not
    exist) never reaches the member, so no result of it stays in the history: it counts
    as played once anything follows it, and takes the gateway's correction with it while
    that is still in the request."""
    pos = attempts = index = 0
    while pos < len(plan):
        if text_only and plan[pos].get("gateway_refuses"):
            if index >= len(results):
                break
            if results[index].startswith(GATEWAY_REFUSAL):
                index += 1
            pos, attempts = pos + 1, 0
            continue
        if index >= len(results):
            break
        text = results[index]
        index += 1
        item = plan[pos]
        if "wait_ms" in item:
            found = _bound(item, text, variables if variables is not None else {})
            if found or attempts + 1 >= int(item.get("tries", POLL_TRIES)):
                pos, attempts = pos + 1, 0
            else:
                attempts += 1
            continue
        limit = int(item.get("until_ok", 0))
        if _ok(text) or attempts >= limit:
            if _ok(text) and variables is not None:
                _bound(item, text, variables)
            pos, attempts = pos + 1, 0
        else:
            attempts += 1
    return pos, attempts


_PROSE = "I re-read the code and the board before choosing my next step. "


def _wrapped(text: str, wrap: str | None) -> str:
    """The call's JSON as a sloppy model sends it: in prose or in a code fence."""
    if wrap == "prose":
        return f"Sure! Here is the call you need:\n{text}\nThat should do it."
    if wrap == "fence":
        return f"```json\n{text}\n```"
    return text


def _padding(chars: int) -> str:
    """`chars` characters of chatter a model wrote around its call."""
    return (_PROSE * (chars // len(_PROSE) + 1))[:chars] if chars > 0 else ""


def _substitute(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, replacement in variables.items():
            value = value.replace(name, replacement)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    return value


class AgentPolicy:
    """`plans[member]` is a list of items: `{"tool": name, "args": {...}, "until_ok": n,
    "delay_ms": d}` (d: wait before each retry), a wait `{"tool": ..., "match": [regex],
    "bind": [var], "wait_ms": d, "tries": n}`, or `{"say": text}` (a final answer); an
    item's `hold_ms` delays the reply itself (a slow model); `when`/`unless` keep an item
    only in sessions whose first message does / does not contain that text (a reset's
    brief, say). `{"brief": [regex], "bind": [var]}` is not played: it binds variables
    from the session's first message (the paths a helper's brief names), and a `say` may
    cite any bound variable. `"*"` is the plan of members without their own.

    A sloppy model's habits, for tests of what members and the gateway forgive: `wrap`
    (`"prose"` or `"fence"`) sends the call's JSON inside prose or a code fence, `pad`
    adds that many characters of chatter to the reply, `gateway_refuses` marks a call the
    gateway itself refuses under the JSON protocol (a tool that does not exist). When the
    gateway speaks the JSON protocol to the stub (`--tool-protocol json`), calls and
    answers are written as the protocol's JSON text and results are read from the text
    conversation (not from `--compact-tokens` renderings)."""

    def __init__(self, plans: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        self.plans = {k: list(v) for k, v in plans.items()}

    def __call__(self, member: str, body: dict[str, Any]) -> Step | None:
        plan = self.plans.get(member, self.plans.get("*"))
        if plan is None:
            return None
        messages = body.get("messages") or []
        first_user = next(
            (str(m.get("content") or "") for m in messages if m.get("role") == "user"), ""
        )
        plan = [
            item
            for item in plan
            if item.get("when") is None or str(item["when"]) in first_user
            if item.get("unless") is None or str(item["unless"]) not in first_user
        ]
        bound: dict[str, str] = {}
        for item in plan:
            if "brief" in item:
                _bound({"match": item["brief"], "bind": item.get("bind", ())}, first_user, bound)
        plan = [item for item in plan if "brief" not in item]
        text_only = _text_protocol(body)
        if text_only:
            results = _text_results(messages)
        else:
            results = [_result_text(m) for m in messages if m.get("role") == "tool"]
        pos, attempts = _position(plan, results, text_only, bound)
        if pos >= len(plan):
            return Step(content=_answer("Done.", text_only))
        item = plan[pos]
        if "say" in item:
            return Step(content=_answer(_substitute(str(item["say"]), bound), text_only))
        if "wait_ms" in item:
            delay = int(item["wait_ms"]) if attempts else 0
        else:
            delay = int(item.get("delay_ms", 0)) if results and not _ok(results[-1]) else 0
        variables: dict[str, str] = {}
        if results:
            if m := _ID.search(results[-1]):
                variables["$id"] = m.group(1)
        findings = [f for text in results for f in _FINDING.findall(text)]
        if findings:
            variables["$F"] = findings[-1]
        ideas = [
            m.group(1) for text in results for m in _ID.finditer(text) if m.group(1).startswith("#")
        ]
        if ideas:
            variables["$I"] = ideas[-1]
        variables.update(bound)
        args = _substitute(item.get("args", {}), variables)
        if (
            attempts
            and "wait_ms" not in item
            and item["tool"] == "horde"
            and isinstance(args, dict)
        ):
            # A poll is a deliberate wait, not a stuck model: each retry is a new request
            # (its own requestId), so the member's guard against identical refused calls
            # (`looping`) leaves it alone.
            args = {**args, "requestId": f"poll-{uuid.uuid4().hex[:12]}"}
        hold = delay or int(item.get("hold_ms", 0))
        pad = _padding(int(item.get("pad", 0)))
        wrap = item.get("wrap")
        name = str(item["tool"])
        if text_only:
            call_text = _wrapped(json.dumps({"tool": name, "args": args}), wrap)
            return Step(content=f"{pad}\n{call_text}" if pad else call_text, delay_ms=hold)
        call = ToolCallSpec(name=name, arguments=_wrapped(json.dumps(args), wrap))
        return Step(content=pad or None, tool_calls=[call], delay_ms=hold)


def _text_protocol(body: Mapping[str, Any]) -> bool:
    """The gateway speaks its JSON protocol to this "model": no `tools` in the request,
    and a system message that teaches the `{"tool": ...}` reply."""
    if body.get("tools"):
        return False
    return any(
        m.get("role") == "system" and '{"tool"' in str(m.get("content") or "")
        for m in body.get("messages") or []
    )


def _answer(text: str, text_only: bool) -> str:
    """A final answer; in the JSON protocol, the answer object."""
    return json.dumps({"answer": text, "done": True}) if text_only else text
