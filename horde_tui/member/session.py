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
from pathlib import Path
from typing import IO, Any

EXIT_CAUSES = ("completed", "turns", "model_error", "no_output", "killed", "exit_nonzero")
"""How a member session can end, as its `exit` status line names it. `turns`: stopped at
the turn cap while it still wanted a turn (a normal end, not a failure: the parent
neither resets it nor marks its work partial)."""


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
    """Append-only JSONL of one session's messages."""

    def __init__(self, sessions_dir: Path, name: str, session_id: str | None = None) -> None:
        self.session_id = session_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        folder = sessions_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{self.session_id}.jsonl"
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(
            json.dumps({"ts": round(time.time(), 3), **record}, ensure_ascii=False) + "\n"
        )
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
