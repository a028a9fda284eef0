"""Finalize's acceptance freeze: ACCEPTANCE.json/.md, COLLABORATION.md and snapshot/.

Acceptance is a pure function of the ledgers, so it could be recomputed at any time;
freezing it at finalize records what the run ended with, before a later run's reviews
or amendments move the same entries on. The snapshot keeps the markdown ledgers as
they stood, so a report can be read against exactly what the members saw.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from horde_tui.protocol.actions.collab_reads import (
    acceptance_line,
    artifact_line,
    evidence_line,
    review_line,
    thread_line,
)
from horde_tui.protocol.evidence import changed_spans
from horde_tui.store import runs
from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.paths import LEDGER_FILES, atomic_write_text
from horde_tui.store.state import LedgerState


def _section(title: str, lines: list[str]) -> str:
    return f"## {title}\n\n" + ("\n".join(lines) if lines else "_None._") + "\n"


def collaboration_md(state: LedgerState, run: str) -> str:
    """Threads, reviews, evidence, artifacts and acceptance of one run, one line each."""
    threads = [thread_line(t) for t in state.threads.values() if t.run == run]
    reviews = [review_line(r) for r in state.reviews.values() if r.run == run]
    evidence = [evidence_line(e) for e in state.evidence.values() if e.run == run]
    artifacts = [artifact_line(state, a) for a in state.artifacts.values() if a.run == run]
    accepted = [acceptance_line(a) for a in acceptance_all(state, run)]
    parts = [f"# Collaboration (run {run})\n"]
    parts += [
        _section("Threads", threads),
        _section("Reviews", reviews),
        _section("Evidence", evidence),
        _section("Artifacts", artifacts),
        _section("Acceptance", accepted),
    ]
    return "\n".join(parts)


def _scored(state: LedgerState, item: dict[str, Any]) -> dict[str, Any]:
    """An artifact's acceptance plus the sha256 and path of the revision it is about, so a
    scorer can tell which bytes were accepted (the copy under `revisions/<sha256>` keeps
    them after a later republish)."""
    art = state.artifacts.get(item["target"])
    if art is None:
        return item
    rev = next((r for r in art.revisions if r.n == item["revision"]), art.current)
    return item | {"sha256": rev.sha256, "path": f"artifacts/{art.name}"}


def _evidence_note(changed: dict[str, str] | None) -> str:
    """What ACCEPTANCE.md adds to a finding whose cited lines are not as it was filed."""
    if not changed:
        return ""
    return " · evidence " + ", ".join(f"{label} {state}" for label, state in changed.items())


def freeze(horde_dir: Path, state: LedgerState, run: str) -> dict[str, int]:
    """Write the frozen acceptance files and the snapshot; return counts by label."""
    run_dir = runs.run_dir(horde_dir, run)
    items = acceptance_all(state, run)
    workdir = horde_dir.parent
    changed = {
        a.target: changed_spans(state.findings[a.target].spans, workdir)
        for a in items
        if a.target in state.findings
    }
    scored = [
        _scored(state, a.as_json())
        | ({"evidence": changed[a.target]} if changed.get(a.target) else {})
        for a in items
    ]
    atomic_write_text(run_dir / "ACCEPTANCE.json", json.dumps(scored, indent=2) + "\n")
    lines = [f"# Acceptance (run {run})", ""]
    lines += [acceptance_line(a) + _evidence_note(changed.get(a.target)) for a in items] or [
        "_Nothing to accept: no findings or artifacts._"
    ]
    limited = [a for a in items if a.limits]
    if limited:
        lines += ["", "## Accepted with limits", ""]
        lines += [f"- {a.target}: " + "; ".join(f"{v}: {t}" for v, t in a.limits) for a in limited]
    atomic_write_text(run_dir / "ACCEPTANCE.md", "\n".join(lines) + "\n")
    atomic_write_text(run_dir / "COLLABORATION.md", collaboration_md(state, run))
    snapshot = run_dir / "snapshot"
    snapshot.mkdir(exist_ok=True)
    for name in LEDGER_FILES.values():
        source = horde_dir / name
        if source.exists():
            shutil.copyfile(source, snapshot / name)
    for name in ("ACCEPTANCE.json", "ACCEPTANCE.md", "COLLABORATION.md"):
        shutil.copyfile(run_dir / name, snapshot / name)
    counts: dict[str, int] = {}
    for a in items:
        counts[a.state] = counts.get(a.state, 0) + 1
    return counts
