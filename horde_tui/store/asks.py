"""`runs/<id>/asks.jsonl`: the questions a person asked about a run, with the answers.

One JSON object per ask (`AskRecord.to_json`), appended once the answer is complete and
checked, so the file holds finished asks only. Appends take an advisory lock on the file
itself (never the ledger's lock: an ask must not delay a member) and settle a torn tail
first, as the ledger's writer does; readers skip a torn tail and corrupt lines
(`jsonl.JsonlTail`). The ledgers are never touched.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import JsonlTail, append_bytes, encode_records, repair_torn_tail
from horde_tui.store.usage import sum_cost

ASKS_FILE = "asks.jsonl"


def asks_path(run_dir: Path) -> Path:
    """Where a run's asks are kept: `runs/<id>/asks.jsonl`."""
    return Path(run_dir) / ASKS_FILE


@dataclass(frozen=True)
class Citation:
    """One id (`F2`, `#3`) or `path:line` citation of an answer, and its check."""

    token: str
    """As the answer wrote it: `F7`, `#2`, `src/app.py:40`."""
    problem: str = ""
    """Why the ledgers or the files do not bear it out; "" when they do."""

    @property
    def ok(self) -> bool:
        return not self.problem

    def to_json(self) -> dict[str, Any]:
        return {"token": self.token, "ok": self.ok, "problem": self.problem}


@dataclass(frozen=True)
class AskRecord:
    """One finished ask: what the pane lists as an earlier ask and `ask --json` prints."""

    question: str
    answer: str
    """The analyst's final message with each problem marked after what it is about
    (` [check: why]`, as the generated documents are marked)."""
    citations: tuple[Citation, ...] = ()
    """Every id and line citation of the answer, in the order they first appear."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    """None when the model is unpriced (unknown, never $0)."""
    model: str = ""
    ts: float = field(default_factory=time.time)
    """When the answer was complete (epoch seconds)."""
    live: bool = False
    """Asked while the run was live: through its gateway, against its budget."""
    ended: str = "completed"
    """How the analyst's session ended (`completed`, `turns`, `model_error`, ...)."""

    @property
    def problems(self) -> list[Citation]:
        return [c for c in self.citations if not c.ok]

    def to_json(self) -> dict[str, Any]:
        return {
            "ts": round(self.ts, 3),
            "question": self.question,
            "answer": self.answer,
            "citations": [c.to_json() for c in self.citations],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "model": self.model,
            "live": self.live,
            "ended": self.ended,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AskRecord:
        """A record as `to_json` wrote it; missing or mistyped fields take their defaults."""
        cites = data.get("citations")
        cost = data.get("cost_usd", 0.0)
        return cls(
            question=str(data.get("question") or ""),
            answer=str(data.get("answer") or ""),
            citations=tuple(
                Citation(str(c.get("token") or ""), str(c.get("problem") or ""))
                for c in (cites if isinstance(cites, list) else [])
                if isinstance(c, dict)
            ),
            prompt_tokens=_int(data.get("prompt_tokens")),
            completion_tokens=_int(data.get("completion_tokens")),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            model=str(data.get("model") or ""),
            ts=float(data["ts"]) if isinstance(data.get("ts"), int | float) else 0.0,
            live=data.get("live") is True,
            ended=str(data.get("ended") or "completed"),
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def append_ask(run_dir: Path, record: AskRecord) -> None:
    """Append one finished ask to the run's `asks.jsonl` (one `write`, fsynced), under
    the file's own lock, after settling a torn tail a killed writer left."""
    path = asks_path(run_dir)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        repair_torn_tail(path)
        append_bytes(path, encode_records([record.to_json()]))
    finally:
        os.close(fd)  # closing releases the lock


def read_asks(run_dir: Path) -> list[AskRecord]:
    """The run's asks, oldest first; none when it has no `asks.jsonl`. A torn last line
    and corrupt lines are left out."""
    return [AskRecord.from_json(r) for r in JsonlTail(asks_path(run_dir)).read_new()]


@dataclass(frozen=True)
class AsksCost:
    """What the run's asks cost, apart from the members' (the cost line shows both)."""

    asks: int
    cost_usd: float | None
    """None once any ask was unpriced."""
    tokens: int


def asks_cost(run_dir: Path, records: Iterable[AskRecord] | None = None) -> AsksCost:
    """The sum over the run's `asks.jsonl` (or over `records` already read): what the
    cost line shows beside the members' spend, which it does not include (the members'
    spend is their own status lines). Live asks are also in the run's `usage.jsonl`
    (member `ask`), as they count against its budget; asks of a finished run are not."""
    kept = list(read_asks(run_dir) if records is None else records)
    return AsksCost(
        asks=len(kept),
        cost_usd=sum_cost(r.cost_usd for r in kept),
        tokens=sum(r.prompt_tokens + r.completion_tokens for r in kept),
    )
