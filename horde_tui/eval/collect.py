"""What one finished run left on disk, read for scoring.

Only files are read: the ledger through the store's read API (findings and the run's
proposed answer), ACCEPTANCE.json (which findings were accepted), usage.jsonl (tokens and
cost, one line per model call), events.jsonl (refused tool calls, the outcome) and the
sha256 of MANIFEST.json and ACCEPTANCE.json, which name exactly what was scored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from horde_tui.eval.score import ScoredFinding
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.paths import sha256_file
from horde_tui.store.runs import run_dir as run_path
from horde_tui.store.runs import run_ids
from horde_tui.store.store import HordeStore
from horde_tui.store.usage import fold_record

ACCEPTED = frozenset({"accepted", "accepted-with-limits"})
READER = "eval-reader"
"""The actor name the scorer reads the ledger as (it never writes)."""


@dataclass
class RunFiles:
    """One run's scoring inputs, read from its `.horde/`."""

    run_id: str | None
    findings: list[ScoredFinding] = field(default_factory=list)
    answer: str = ""
    tokens: int = 0
    cost_usd: float | None = 0.0
    refusals: int = 0
    outcome: str | None = None
    diagnosis: str = ""
    manifest_sha256: str | None = None
    acceptance_sha256: str | None = None


@dataclass
class UsageSum:
    """The run's usage, folded by the store's one rule (`store.usage`)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


def find_run_dir(workdir: Path) -> Path | None:
    """The run an eval started in a fresh workdir: its only (else newest) run folder."""
    horde = workdir / ".horde"
    runs = [run_path(horde, r) for r in run_ids(horde)]
    runs = [p for p in runs if (p / "MANIFEST.json").is_file()]
    return runs[-1] if runs else None


def accepted_targets(run_dir: Path) -> set[str]:
    try:
        items = json.loads((run_dir / "ACCEPTANCE.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(items, list):
        return set()
    return {
        str(i.get("target")) for i in items if isinstance(i, dict) and i.get("state") in ACCEPTED
    }


def usage_totals(run_dir: Path) -> tuple[int, float | None]:
    """Tokens and cost of every model call; cost unknown once one call's price was."""
    total = UsageSum()
    for record in JsonlTail(run_dir / "usage.jsonl").read_new():
        fold_record(total, record)
    return total.prompt_tokens + total.completion_tokens, total.cost_usd


def read_run(workdir: Path) -> RunFiles:
    """Everything the scorer needs from the run in `workdir` (empty if it never started)."""
    run_dir = find_run_dir(workdir)
    if run_dir is None:
        return RunFiles(None, cost_usd=None)
    run = run_dir.name
    accepted = accepted_targets(run_dir)
    store = HordeStore(workdir / ".horde", READER)
    store.refresh()
    state = store.state
    current = sorted(
        (f for f in state.findings.values() if f.run == run and not f.superseded_by),
        key=lambda f: f.seq,
    )
    findings = [
        ScoredFinding(f.id, f.concern, f.text, f.evidence, f.id in accepted) for f in current
    ]
    proposals = [p for p in state.proposals.get(run, []) if p.status != "withdrawn"]
    answer = proposals[-1].text if proposals else ""
    if not answer and (run_dir / "DELIVERABLE.md").is_file():
        answer = (run_dir / "DELIVERABLE.md").read_text(encoding="utf-8", errors="replace")
    events = JsonlTail(run_dir / "events.jsonl").read_new()
    refusals = sum(1 for e in events if e.get("type") == "outcome" and e.get("ok") is False)
    ends = [e for e in events if e.get("type") == "lifecycle" and e.get("kind") == "run-end"]
    tokens, cost = usage_totals(run_dir)
    return RunFiles(
        run_id=run,
        findings=findings,
        answer=answer,
        tokens=tokens,
        cost_usd=cost,
        refusals=refusals,
        outcome=str(ends[-1].get("outcome")) if ends else None,
        diagnosis=str(ends[-1].get("diagnosis") or "") if ends else "",
        manifest_sha256=sha256_file(run_dir / "MANIFEST.json"),
        acceptance_sha256=sha256_file(run_dir / "ACCEPTANCE.json"),
    )
