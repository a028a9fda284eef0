"""`TranscriptReader`: a member's growing session transcript, one message at a time.

A transcript (`runs/<id>/sessions/<member>/<session>.jsonl`, one JSON object per
message, see `member.session`) can reach thousands of messages, and a tool result can be
a whole file. The reader indexes line starts with `LineIndex` (each refresh reads only
the bytes appended since the last one) and turns a line into a `TranscriptMessage` only
when a view asks for it, keeping the last few hundred in an LRU, so the cost of showing
a transcript follows the screen, not the file.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common.fence import unfence
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.linefile import LineIndex
from horde_tui.store.transcript import message_text, summarize

FOLDED_KINDS = frozenset({"system", "calls", "result"})
"""Kinds shown folded to their head line until expanded: the long system prompt, tool
calls and tool results. What the model said and was told stays open."""


@dataclass(frozen=True)
class TranscriptMessage:
    """One transcript line as a view shows it: a head line, and a body when expanded."""

    line: int
    """0-based line number in the session file."""
    role: str
    kind: str
    """system, user, text (an assistant's words), calls (tool calls), result, corrupt."""
    head: str
    """The one-line form: who, and the gist (the tool and its arguments, say)."""
    body: str
    """Everything else, shown when the message is expanded ("" when there is none)."""

    @property
    def folds(self) -> bool:
        """Shown as its head only until expanded."""
        return self.kind in FOLDED_KINDS


def _pretty_arguments(raw: Any) -> str:
    """Tool-call arguments as indented JSON (models send them as a JSON string)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(raw)


def describe(line: int, record: dict[str, Any] | None, error: str = "") -> TranscriptMessage:
    """One parsed transcript line (None: a line that is not a JSON object) as a message."""
    if record is None:
        return TranscriptMessage(line, "?", "corrupt", f"line {line + 1}: {error}", "")
    role = str(record.get("role") or "?")
    text = message_text(record).strip()
    usage = record.get("usage")
    tokens = ""
    if isinstance(usage, dict) and usage:
        tokens = f" [{usage.get('prompt_tokens', 0)} in / {usage.get('completion_tokens', 0)} out]"
    calls = [c for c in record.get("tool_calls") or [] if isinstance(c, dict)]
    if role == "system":
        lines = text.count("\n") + 1 if text else 0
        return TranscriptMessage(line, role, "system", f"system prompt · {lines} lines", text)
    if calls:
        gists = [
            summarize(str(fn.get("name", "?")), fn.get("arguments", ""))
            for fn in (c.get("function") or {} for c in calls)
        ]
        more = f" (+{len(gists) - 1} more)" if len(gists) > 1 else ""
        parts = [text] if text else []
        for call in calls:
            fn = call.get("function") or {}
            parts.append(f"→ {fn.get('name', '?')} {_pretty_arguments(fn.get('arguments', ''))}")
        return TranscriptMessage(
            line, role, "calls", f"→ {gists[0]}{more}{tokens}", "\n".join(parts)
        )
    if role == "tool":
        name = str(record.get("name") or "tool")
        text = unfence(text)  # the fence members put around results
        count = text.count("\n") + 1 if text else 0
        gist = one_line(text, 120) or "(empty)"
        size = f"{count} line{'' if count == 1 else 's'}"
        return TranscriptMessage(line, role, "result", f"← {name} · {size}: {gist}", text)
    kind = "text" if role == "assistant" else "user"
    return TranscriptMessage(line, role, kind, f"{role}{tokens}", text)


class TranscriptReader:
    """One session file, indexed as it grows; messages described on demand (LRU)."""

    def __init__(self, path: Path | str, cache_size: int = 256) -> None:
        # The descriptions are what is kept; the index's own cache of parsed records
        # would hold the same (possibly large) contents twice.
        self.index = LineIndex(path, cache_size=8, transactions=False)
        self.cache_size = cache_size
        self._cache: OrderedDict[int, TranscriptMessage] = OrderedDict()
        self._generation = self.index.generation

    @property
    def path(self) -> Path:
        return self.index.path

    @property
    def generation(self) -> int:
        """Moves on when the file was replaced and every message index changed meaning."""
        return self.index.generation

    def refresh(self) -> int:
        """Index the messages appended since the last call; return how many.

        Meant for a worker thread: growing the index leaves the lines already indexed
        readable meanwhile. A replaced file restarts the index (`generation` moves on;
        `message` then drops the old descriptions and views start over)."""
        return self.index.refresh()

    def __len__(self) -> int:
        return len(self.index)

    def message(self, i: int) -> TranscriptMessage:
        if self.index.generation != self._generation:  # the file was replaced
            self._generation = self.index.generation
            self._cache.clear()
        hit = self._cache.get(i)
        if hit is not None:
            self._cache.move_to_end(i)
            return hit
        if not 0 <= i < len(self.index):
            # The worker re-indexed a replaced file and the view has not heard yet (it
            # starts over on its next `grew`): a frame drawn meanwhile shows this.
            return TranscriptMessage(i, "?", "corrupt", "(the file was replaced)", "")
        message = describe(i, self.index.record(i), self.index.error(i))
        self._cache[i] = message
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return message

    def close(self) -> None:
        self.index.close()
