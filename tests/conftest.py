"""Shared fixtures: a `.horde/` in a temp dir and a transcript-style call helper.

`horde(actor, action, **fields)` runs one `horde` tool call as `actor`, so a test reads
like the transcript of a run: who did what, and what the tool answered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from horde_tui.protocol import ToolResult, run_action
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision, HordeStore


class Horde:
    """One `.horde/` directory with one `HordeStore` per actor, created on first use."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.root = workdir / ".horde"
        self.stores: dict[str, HordeStore] = {}

    def store(self, actor: str = "member-1") -> HordeStore:
        if actor not in self.stores:
            self.stores[actor] = HordeStore(self.root, actor, fsync_projections=False)
        return self.stores[actor]

    def __call__(
        self, actor: str, action: str, role: str = "member", run: str = "r1", **fields: Any
    ) -> ToolResult:
        return run_action(self.store(actor), {"action": action, **fields}, run=run, role=role)

    def state(self, actor: str = "member-1") -> LedgerState:
        """The folded state as `actor` sees it after catching up with the file."""
        store = self.store(actor)
        store.refresh()
        return store.state

    def claimed(self, actor: str, text: str) -> str:
        """Add an idea as `actor` and claim it; return its id."""
        ident = self(actor, "idea", text=text).id
        assert self(actor, "claim", id=ident).ok
        return str(ident)

    def inject(self, actor: str, *records: dict[str, Any], run: str = "r1") -> None:
        """Append raw ledger records through the locked write path, with no rule applied.

        For state the tool cannot reach by itself: V# reviews, parent seeding.
        """
        receipt = self.store(actor).transact(
            run, "test-inject", {}, lambda _state: Decision(True, "ok", None, list(records))
        )
        assert receipt.ok

    def events(self, run: str = "r1") -> list[dict[str, Any]]:
        path = self.root / "runs" / run / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def ledger_bytes(self) -> bytes:
        path = self.root / "ledger.jsonl"
        return path.read_bytes() if path.exists() else b""


@pytest.fixture
def horde(tmp_path: Path) -> Horde:
    return Horde(tmp_path)
