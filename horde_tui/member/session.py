"""What a member tells the world: status lines on stdout and its transcript on disk.

Status: one JSON object per line on stdout (`turn-start`, `tool-start`, `tool-end`,
`message`, `usage`, `exit`), so the parent knows status, current tool, turns, tokens and
cost without reading transcripts. Transcript: `runs/<id>/sessions/<name>/<session>.jsonl`,
one JSON object per message, flushed per message so a killed member loses at most the
message in flight.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from horde_tui.common.prompts import INTERRUPTED_RESULT
from horde_tui.store.transcript import read_transcript
from horde_tui.store.usage import fold_record


class StatusStream:
    def __init__(self, out: IO[str] | None = None) -> None:
        self._out = out or sys.stdout

    def emit(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"type": kind, "ts": round(time.time(), 3), **fields}, ensure_ascii=False)
        try:
            self._out.write(line + "\n")
            self._out.flush()
        except (BrokenPipeError, ValueError):
            pass  # the parent stopped reading; the transcript still has everything


class Transcript:
    """Append-only JSONL of one session's messages.

    A resumed session (`HORDE_RESUME_SESSION`) continues its own file rather than
    starting a new one: the member screen follows a member's newest session file and
    `horde-tui transcript` prints one file, so both show the whole conversation, and the
    member's session count stays the number of sessions it really had.
    """

    def __init__(self, sessions_dir: Path, name: str, session_id: str | None = None) -> None:
        self.session_id = session_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        folder = sessions_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{self.session_id}.jsonl"
        torn = self.path.is_file() and not _ends_a_line(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")
        if torn:  # a member killed mid-write: start on a line of our own
            self._fh.write("\n")

    @classmethod
    def resume(cls, path: Path) -> Transcript:
        """Continue the session file at `path` (<sessions>/<name>/<id>.jsonl)."""
        return cls(path.parent.parent, path.parent.name, path.stem)

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(
            json.dumps({"ts": round(time.time(), 3), **record}, ensure_ascii=False) + "\n"
        )
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
"""What a transcript record keeps of a chat message (it adds `ts` and `usage`)."""


@dataclass
class Conversation:
    """A session rebuilt from its transcript, ready to send to the model again."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    unanswered: list[tuple[str, str]] = field(default_factory=list)
    """(id, tool) of the last answer's tool calls with no result in the transcript: the
    session stopped while running them; they must be answered before the next call."""
    turns: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    last_text: str = ""


def load_conversation(path: Path) -> Conversation:
    """The messages of a transcript, valid for the chat API: a tool result with no call
    before it is dropped, and calls left unanswered in the middle (a corrupt line lost
    their results) are answered as interrupted here; the last answer's are left in
    `unanswered` for the caller to answer in the transcript too. Raises OSError."""
    conv = Conversation()
    for item in read_transcript(path):
        if isinstance(item, str):
            continue
        record = item.message
        role = record.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            continue
        message = {k: record[k] for k in MESSAGE_KEYS if k in record}
        if role == "tool":
            ids = [ident for ident, _tool in conv.unanswered]
            if record.get("tool_call_id") in ids:
                del conv.unanswered[ids.index(record.get("tool_call_id"))]
                conv.messages.append(message)
                conv.tool_calls += 1
            continue
        conv.messages += interrupted_results(conv.unanswered)
        conv.unanswered = []
        conv.messages.append(message)
        if role == "assistant":
            _count_answer(conv, record)
    return conv


def _count_answer(conv: Conversation, record: dict[str, Any]) -> None:
    conv.turns += 1
    fold_record(conv, record.get("usage"))
    calls = record.get("tool_calls") or []
    conv.unanswered = [
        (str(c.get("id")), str((c.get("function") or {}).get("name") or "?"))
        for c in calls
        if isinstance(c, dict)
    ]
    text = record.get("content")
    if isinstance(text, str) and text.strip():
        conv.last_text = text.strip()


def interrupted_results(calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Tool results for calls that never reported one (the session stopped in them)."""
    return [
        {"role": "tool", "tool_call_id": ident, "name": tool, "content": INTERRUPTED_RESULT}
        for ident, tool in calls
    ]
