"""What one finished run left on disk, read for scoring.

Only files are read: the ledger through the store's read API (findings and the run's
proposed answer), ACCEPTANCE.json (which findings were accepted), usage.jsonl (tokens and
cost, one line per model call), events.jsonl (refused tool calls, the outcome) and the
sha256 of MANIFEST.json and ACCEPTANCE.json, which name exactly what was scored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.eval.score import ScoredFinding
from horde_tui.store.store import HordeStore

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


def sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """Every JSON object line of a file; a torn or foreign line is skipped."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def find_run_dir(workdir: Path) -> Path | None:
    """The run an eval started in a fresh workdir: its only (else newest) run folder."""
    runs = sorted(
        p for p in (workdir / ".horde" / "runs").glob("*") if (p / "MANIFEST.json").is_file()
    )
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
    tokens, cost, unknown = 0, 0.0, False
    for record in _jsonl(run_dir / "usage.jsonl"):
        tokens += int(record.get("prompt_tokens") or 0) + int(record.get("completion_tokens") or 0)
        price = record.get("cost_usd")
        if isinstance(price, int | float):
            cost += float(price)
        else:
            unknown = True
    return tokens, (None if unknown else cost)


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
    events = _jsonl(run_dir / "events.jsonl")
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
        manifest_sha256=sha256_of(run_dir / "MANIFEST.json"),
        acceptance_sha256=sha256_of(run_dir / "ACCEPTANCE.json"),
    )
