"""Reading member transcripts (`runs/<id>/sessions/member-N/<session>.jsonl`).

One JSON object per message. The reader tolerates a torn last line (a member killed
mid-write) and reports corrupt lines instead of failing, because a transcript is most
interesting exactly when its member died badly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.inputs import loads
from horde_tui.store.jsonl import NOT_OBJECT, parse_line

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
    else:
        text = name
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


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
    """A member's session transcripts, oldest first (session ids start with their time)."""
    folder = run_dir / "sessions" / member
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".jsonl"))
    except OSError:
        return []
    return [folder / name for name in names]
