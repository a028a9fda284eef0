"""The Findings tab's baseline column, for a run started with `--baseline RUN|last`.

The cells come from the Delta REPORT.md prints (`supervisor.baseline.delta`, one copy
of the matching): this run's findings are `new` or `persisting F2`; the baseline's
findings no finding of this run stands for get rows of their own, `persisting: reported
again by member-1` or `resolved: code changed` (the re-check of their cited lines).

A baseline finding can be re-found without a ledger write (the tool's `duplicate` and
`dropped` outcomes name it in `events.jsonl`), so the run's event log is tailed too,
parsing only the lines that carry such an outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from horde_tui.store import runs
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.paths import HordePaths
from horde_tui.store.state import LedgerState
from horde_tui.supervisor import baseline

_REFOUND = tuple(f'"outcome":"{o}"'.encode() for o in baseline.REFOUND_OUTCOMES)


def _skim(line: bytes) -> dict[str, Any] | None:
    """Parse (None) only the lines that may re-find a finding; the rest count as `{}`."""
    return None if any(mark in line for mark in _REFOUND) else {}


class BaselineColumn:
    """The column's cells for `run` against the baseline `asked` (a run id or `last`),
    recomputed by `update` when `moved` says they may have changed."""

    def __init__(self, horde_dir: Path, run: str, asked: str) -> None:
        self.horde_dir = Path(horde_dir)
        self.run = run
        self.asked = asked
        self.workdir = HordePaths(self.horde_dir).workdir
        self._tail = JsonlTail(runs.run_dir(self.horde_dir, run) / "events.jsonl", skim=_skim)
        self._events: list[dict[str, Any]] = []
        """The run's events that re-report a finding (all `delta` reads of the log)."""
        self._seq = -1
        self.found: str | None = None
        """The baseline run `asked` resolved to at the last `update` (None: not found)."""
        self.mine: dict[str, str] = {}
        """This run's F# -> its cell."""
        self.theirs: dict[str, str] = {}
        """Baseline F# shown as rows of their own -> their cell."""

    def moved(self, state: LedgerState) -> bool:
        """Take in the re-reports appended to the event log; whether the cells may have
        changed since the last `update` (they did if the ledger or the log moved)."""
        added = [ev for ev in self._tail.read_new() if ev]
        self._events += added
        return bool(added) or state.seq != self._seq

    def update(self, state: LedgerState) -> None:
        self._seq = state.seq
        self.found = baseline.resolve_baseline(self.horde_dir, state, self.run, self.asked)
        if self.found is None:
            self.mine, self.theirs = {}, {}
            return
        d = baseline.delta(state, self.run, self.found, self.workdir, self._events)
        self.mine, self.theirs = baseline.delta_cells(d)

    def cell(self, ident: str) -> str:
        """The cell of this run's `ident` (`""` for a superseded one)."""
        if self.found is None:
            return f"baseline {self.asked} not found"
        return self.mine.get(ident, "")

    @property
    def group(self) -> str:
        """The heading over the baseline's own rows."""
        return f"baseline run {self.found}: findings not filed again in this run"
