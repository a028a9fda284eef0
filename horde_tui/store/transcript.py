"""Reading member transcripts (`runs/<id>/sessions/member-N/<session>.jsonl`, the folder
`store.runs.sessions_dir` names).

One JSON object per message. The reader tolerates a torn last line (a member killed
mid-write) and reports corrupt lines instead of failing, because a transcript is most
interesting exactly when its member died badly.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common.inputs import loads
from horde_tui.store.activity import Repeat, warned_since
from horde_tui.store.jsonl import NOT_OBJECT, parse_line, parse_record
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.linefile import LineIndex
from horde_tui.store.runs import sessions_dir
from horde_tui.store.timestamps import epoch
from horde_tui.store.usage import fold_record

SUMMARY_CHARS = 120


@dataclass
class TranscriptEntry:
    index: int
    message: dict[str, Any]


def read_transcript(path: Path) -> Iterator[TranscriptEntry | str]:
    """Entries in order; a string in place of an entry describes a line that did not parse."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            value, error = parse_line(line)
            if error == NOT_OBJECT:
                yield f"line {number}: {NOT_OBJECT}"
            elif error:
                torn = "" if line.endswith("\n") else " (torn last line)"
                yield f"line {number}: not valid JSON{torn}"
            else:
                yield TranscriptEntry(number, value)


def message_text(message: dict[str, Any]) -> str:
    """A message's text, whether `content` is a string or OpenAI content parts."""
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def summarize(name: str, raw_args: Any) -> str:
    """A short argument summary for status lines (`bash: grep -rn x src`, `horde claim #3`)."""
    try:
        args = loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
    except (ValueError, TypeError):
        args = {}
    if not isinstance(args, dict):
        args = {}
    if name == "bash":
        text = f"bash: {args.get('command', '')}"
    elif name == "horde":
        keys = ("action", "id", "target", "idea", "concern")
        text = "horde " + " ".join(str(args[k]) for k in keys if args.get(k))
    elif name in ("read", "edit", "write"):
        text = f"{name} {args.get('path', '')}"
    elif name in ("links", "sitemap"):
        text = f"{name} {args.get('url', '')}"
    elif name == "grep":
        text = f"grep {args.get('pattern', '')} {args.get('path', '.')}"
    else:
        text = name
    return one_line(text, SUMMARY_CHARS)


def format_entry(entry: TranscriptEntry, max_chars: int = 0) -> str:
    """One message as text: a header line, then its content and tool calls."""
    msg = entry.message
    role = str(msg.get("role", "?"))
    header = f"── {entry.index} {role}"
    if role == "tool":
        header += f" ({msg.get('name', '?')}, {msg.get('tool_call_id', '')})"
    usage = msg.get("usage")
    if isinstance(usage, dict) and usage:
        header += f" [{usage.get('prompt_tokens', 0)} in / {usage.get('completion_tokens', 0)} out]"
    body = message_text(msg)
    if max_chars and len(body) > max_chars:
        body = body[:max_chars] + f"\n[... {len(body) - max_chars} more characters]"
    lines = [header]
    if body.strip():
        lines.append(body.rstrip())
    for call in msg.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        lines.append(f"→ {fn.get('name', '?')}({fn.get('arguments', '')})")
    return "\n".join(lines)


def print_transcript(path: Path, max_chars: int = 0) -> int:
    """Print a transcript; exit status 0, or 1 if any line was unreadable."""
    bad = 0
    for item in read_transcript(path):
        if isinstance(item, str):
            bad += 1
            print(f"!! {item}")
        else:
            print(format_entry(item, max_chars))
            print()
    return 1 if bad else 0


def sessions(run_dir: Path, member: str) -> list[Path]:
    """A member's session transcripts, oldest first: by the start second their names
    begin with, then by last write (of two sessions started in one second, a session
    that died at once and its reset, the one still written to is the newer), then by
    name, so the order is the same every time. The one listing: the member table's
    newest session, the member screen's and the session a resume carries on."""
    folder = sessions_dir(run_dir, member)
    found = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".jsonl") and entry.is_file():
                    found.append((entry.name[:_STAMP_CHARS], entry.stat().st_mtime_ns, entry.name))
    except OSError:  # no folder yet, or a file went while listing: the next look sees it
        return []
    return [folder / name for _stamp, _mtime, name in sorted(found)]


_STAMP_CHARS = len("20250101T120000")
"""A session id starts with its start time to the second (`member.session.Transcript`)."""

_TOOL_ROLE = b'"role": "tool"'
"""How a transcript's tool results start (`Transcript.write` keeps json's default
separators): such lines are counted without parsing their often large content."""
_TS = re.compile(rb'^\{"ts": (-?[0-9.]+)')
"""A record's time, its first key (`Transcript.write`), read without parsing the rest."""
_REPEAT = b', "repeat": {'
"""The loop guard's count, the last key of a tool result that repeated a call."""


@dataclass
class SessionStats:
    """How far one session got, from its transcript, read incrementally."""

    path: Path
    turns: int = 0
    """Model answers (assistant messages): one per turn."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    """None once any answer was unpriced: the total is then unknown."""
    last_ts: float | None = None
    last_text: str = ""
    pending_tools: list[str] = field(default_factory=list)
    """Tools the last answer called whose results are not in the transcript yet."""
    pending_summaries: list[str] = field(default_factory=list)
    """Those calls as the member's status lines summarize them (`summarize`)."""
    last_tool: str = ""
    """The newest tool any answer called."""
    last_summary: str = ""
    """Its call, summarized: the member table shows it, dimmed, between tools."""
    call_since: float | None = None
    """A model call in flight since then: the last record was a tool's result or a user
    message and no call is pending (the member calls the model right after them)."""
    tool_since: float | None = None
    """The running tool started then: with the answer that called it, or with the
    previous tool's result (a session runs its calls one after another)."""
    repeat: Repeat | None = None
    """The loop guard's count after the latest tool result (None: a new call)."""
    repeat_since: float | None = None
    _index: LineIndex | None = field(default=None, repr=False, compare=False)
    _generation: int = field(default=0, repr=False, compare=False)

    def refresh(self) -> bool:
        """Fold the messages appended since the last call; True if any were."""
        if self._index is None:
            self._index = LineIndex(self.path, transactions=False)
        start = len(self._index)
        added = self._index.refresh()
        if self._index.generation != self._generation:  # rewritten: start over
            self._generation, start = self._index.generation, 0
            self.turns = self.prompt_tokens = self.completion_tokens = 0
            self.cost_usd, self.last_ts, self.last_text, self.pending_tools = 0.0, None, "", []
            self.pending_summaries, self.last_tool, self.last_summary = [], "", ""
            self.call_since = self.tool_since = self.repeat = self.repeat_since = None
        elif not added:
            return False
        for raw in self._index.raw_lines(start, len(self._index)):
            self._fold(raw)
        return True

    def _fold(self, raw: bytes) -> None:
        if _TOOL_ROLE in raw[:64]:
            stamp = _TS.match(raw)
            self._tool_done(float(stamp.group(1)) if stamp else self.last_ts, _repeat_of(raw))
            return
        msg, _error = parse_record(raw)
        if msg is None:
            return
        self.last_ts = epoch(msg.get("ts")) or self.last_ts
        role = msg.get("role")
        if role == "tool":
            self._tool_done(self.last_ts, Repeat.from_json(msg.get("repeat")))
            return
        if role in ("user", "system"):
            if not self.pending_tools:
                self.call_since = self.last_ts
            return
        if role != "assistant":
            return
        self.turns += 1
        fold_record(self, msg.get("usage"))
        calls = msg.get("tool_calls")
        functions = [c.get("function") or {} for c in calls or () if isinstance(c, dict)]
        functions = [f for f in functions if isinstance(f, dict)]
        self.pending_tools = [str(f.get("name", "?")) for f in functions]
        self.pending_summaries = [
            summarize(str(f.get("name", "?")), f.get("arguments") or "{}") for f in functions
        ]
        self.call_since = None
        self.tool_since = self.last_ts if self.pending_tools else None
        if self.pending_tools:
            self.last_tool, self.last_summary = self.pending_tools[-1], self.pending_summaries[-1]
        content = msg.get("content")
        if isinstance(content, str) and content.strip():
            self.last_text = one_line(content, 200)

    def _tool_done(self, ts: float | None, repeat: Repeat | None) -> None:
        self.last_ts = ts or self.last_ts
        self.repeat_since = warned_since(self.repeat, self.repeat_since, repeat, ts)
        self.repeat = repeat
        if self.pending_tools:
            self.pending_tools.pop(0)
            self.pending_summaries.pop(0)
        if self.pending_tools:
            self.tool_since = ts
        else:
            self.tool_since, self.call_since = None, ts

    def close(self) -> None:
        if self._index is not None:
            self._index.close()

    @property
    def current_tool(self) -> str:
        return self.pending_tools[0] if self.pending_tools else ""

    @property
    def current_summary(self) -> str:
        """The running call as the member's status line says it (`bash: pytest -q`)."""
        return self.pending_summaries[0] if self.pending_summaries else ""


def _repeat_of(raw: bytes) -> Repeat | None:
    """The `repeat` key at the end of a tool result's line, read without parsing the
    (often large) content before it."""
    at = raw.rfind(_REPEAT, max(0, len(raw) - 400))
    if at < 0:
        return None
    value = raw[at + len(_REPEAT) - 1 :].rstrip()
    try:
        return Repeat.from_json(json.loads(value[:-1]))  # less the record's closing brace
    except ValueError:
        return None
