"""A scripted *agent* policy for the stub model: plans of tool calls that adapt to results.

Fixed scripts cannot know the ids a run hands out (`#3` or `#5` depends on who wrote
first). A plan item may say `$id` (the id named by the previous tool result, e.g. `ok #3
added`) or `$F` (the newest finding id any result named), and may repeat until the tool
accepts it (`until_ok`), e.g. "validate the answer" while no answer exists yet. The
position in the plan is recomputed from the conversation on every request, so a member
reset into a fresh session simply starts its plan again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from horde_tui.fence import unfence
from horde_tui.stubmodel.script import Step, ToolCallSpec

_ID = re.compile(r"\b(?:ok|duplicate of|ok answer|ok verification of)\s+(#\d+|[FTCR]\d+)")
_FINDING = re.compile(r"\bF\d+\b")
_REFUSED = ("refused", "usage:", "dropped:")


def _result_text(message: Mapping[str, Any]) -> str:
    text = str(message.get("content") or "")
    # Members fence results (`horde_tui.fence`); a bare label line is read past too.
    body = unfence(text)
    if body is text and text.startswith("[") and "\n" in text:
        return text.split("\n", 1)[1]
    return body


def _ok(text: str) -> bool:
    return not text.lstrip().lower().startswith(_REFUSED)


def _position(plan: Sequence[Mapping[str, Any]], results: list[str]) -> int:
    pos = attempts = 0
    for text in results:
        if pos >= len(plan):
            break
        limit = int(plan[pos].get("until_ok", 0))
        if _ok(text) or attempts >= limit:
            pos, attempts = pos + 1, 0
        else:
            attempts += 1
    return pos


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
    "delay_ms": d}` (d: wait before each retry) or `{"say": text}` (a final answer); an
    item's `hold_ms` delays the reply itself (a slow model); `when`/`unless` keep an item
    only in sessions whose first message does / does not contain that text (a reset's
    brief, say). `"*"` is the plan of members without their own."""

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
        results = [_result_text(m) for m in messages if m.get("role") == "tool"]
        pos = _position(plan, results)
        if pos >= len(plan):
            return Step(content="Done.")
        item = plan[pos]
        if "say" in item:
            return Step(content=str(item["say"]))
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
        args = _substitute(item.get("args", {}), variables)
        call = ToolCallSpec(name=str(item["tool"]), arguments=json.dumps(args))
        return Step(tool_calls=[call], delay_ms=delay or int(item.get("hold_ms", 0)))
