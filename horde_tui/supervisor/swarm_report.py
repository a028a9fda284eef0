"""A swarm's documents by code: SWARM.md (rewritten with SWARM.json) and REPORT.md.

REPORT.md puts the hordes side by side (members, turns, tokens, cost, findings,
acceptance, outcome) from their run summaries and their own ledgers; each horde's own
REPORT.md keeps the detail. Deterministic: no model writes any of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.display import format_cost, format_duration, format_time
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.members import MemberState
from horde_tui.store.model import Finding
from horde_tui.store.runs import Workstream
from horde_tui.store.state import LedgerState
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.summary import (
    RunScope,
    coverage_sentence,
    current_findings,
    member_table,
    tokens,
    total_cost,
)


class HordeDirs(Protocol):
    """Where a horde of the swarm keeps its ledgers and its run."""

    @property
    def horde_dir(self) -> Path: ...

    @property
    def run_dir(self) -> Path: ...


class ReportedSwarm(Protocol):
    """What REPORT.md reads of a swarm (`swarm.SwarmSupervisor` is one), so this module
    does not import the supervisor that calls it."""

    @property
    def swarm_id(self) -> str: ...

    @property
    def swarm_dir(self) -> Path: ...

    @property
    def request(self) -> RunRequest: ...

    @property
    def count(self) -> int: ...

    @property
    def started(self) -> float: ...

    @property
    def partition(self) -> Sequence[Workstream]: ...

    @property
    def summaries(self) -> Mapping[str, RunSummary]: ...

    @property
    def hordes(self) -> Mapping[str, HordeDirs]: ...

    @property
    def helpers(self) -> list[MemberState]: ...

    def as_json(self) -> dict[str, Any]: ...


def render_swarm_md(data: dict[str, Any]) -> str:
    """SWARM.md from SWARM.json's data: prompt, partition, hordes, or why not started."""
    lines = [
        f"# Swarm {data['id']}",
        "",
        str(data["prompt"]).strip(),
        "",
        f"- hordes: {data['hordes']} of {data['members']} members",
        f"- model: {data['model']}{' (demo model: scripted, not a real LLM)' if data['demo'] else ''}",
        f"- state: {data['state']}"
        + (f" ({data['outcome']})" if data["outcome"] not in (None, data["state"]) else ""),
    ]
    if data["layers"]:
        lines.append(f"- layers: {'; '.join(data['layers'])}")
    if data["state"] == "not started":
        lines += ["", "## Not started", "", data["diagnosis"] or "unknown reason"]
    lines += ["", "## Partition", ""]
    lines += [
        f"- {w['horde']}: {w['workstream']}\n  - acceptance: {w['criterion']}"
        for w in data["partition"]
    ] or ["_Not partitioned yet._"]
    lines += ["", "## Hordes", ""]
    lines += [f"- {h}: {run}" for h, run in data["runs"].items()] or ["_None started yet._"]
    return "\n".join(lines) + "\n"


def render_report(swarm: ReportedSwarm) -> str:
    """The swarm's REPORT.md."""
    data = swarm.as_json()
    ended = [s.ended for s in swarm.summaries.values()]
    lines = [
        f"# Swarm report {swarm.swarm_id}",
        "",
        f"Outcome: **{data['outcome']}**: {data['diagnosis']}",
        "",
        f"- Task: {one_line(swarm.request.prompt, 300)}",
        f"- Hordes: {swarm.count} of {swarm.request.count} members; model "
        f"`{data['model']}`{' (demo model)' if swarm.request.demo else ''}",
        f"- Started {format_time(swarm.started)}"
        + (f", hordes done after {format_duration(max(ended) - swarm.started)}" if ended else ""),
        f"- Merge: {data['merge']} (DELIVERABLE.md)",
        "",
        "| horde | outcome | members | turns | tokens | cost | findings | accepted | workstream |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    sections: list[str] = []
    for share in swarm.partition:
        name = share.horde
        summary = swarm.summaries.get(name)
        if summary is None:
            lines.append(f"| {name} | not started | | | | | | | {_cell(share.workstream)} |")
            sections += ["", f"## {name}: not started", "", f"Workstream: {share.workstream}"]
            continue
        sup = swarm.hordes[name]
        store = HordeStore(sup.horde_dir, "parent")
        store.refresh()
        findings = current_findings(store.state, RunScope.of(store.state, summary.run_id))
        labels = Counter(a.state for a in acceptance_all(store.state, summary.run_id))
        accepted = labels.get("accepted", 0)
        members = summary.members
        lines.append(
            f"| {name} | {_cell(summary.outcome)} | {len(members)} | "
            f"{sum(m.turns for m in members)} | {sum(tokens(m) for m in members):,} | "
            f"{format_cost(total_cost(members))} | {len(findings)} | {accepted} | "
            f"{_cell(share.workstream)} |"
        )
        sections += _horde_section(swarm, name, summary, store.state, findings, labels)
    helpers = ["", "## Swarm helpers (planner, merge)", "", *member_table(swarm.helpers)]
    return "\n".join(lines + sections + helpers) + "\n"


def _horde_section(
    swarm: ReportedSwarm,
    name: str,
    summary: RunSummary,
    state: LedgerState,
    findings: list[Finding],
    labels: Counter[str],
) -> list[str]:
    share = next(w for w in swarm.partition if w.horde == name)
    rel = swarm.hordes[name].run_dir.relative_to(swarm.swarm_dir)
    acceptance = ", ".join(f"{n} {label}" for label, n in sorted(labels.items())) or "nothing"
    out = [
        "",
        f"## {name}: {summary.outcome}",
        "",
        f"- Workstream: {share.workstream}",
        f"- Acceptance criterion: {share.criterion}",
        f"- Run: {summary.run_id} ({rel}/REPORT.md, {rel}/DELIVERABLE.md)",
        f"- Diagnosis: {summary.diagnosis}",
        f"- Acceptance: {acceptance}",
        f"- {coverage_sentence(state, RunScope.of(state, summary.run_id))}",
        "",
        *member_table(summary.members),
        "",
        "Findings:",
        "",
    ]
    out += [f"- [{name} {f.id}] {one_line(f.claim_line, 160)}" for f in findings] or ["_None._"]
    return out


def _cell(text: str) -> str:
    return one_line(text, 120).replace("|", "\\|")
