"""SUMMARY.md, plus the pieces REPORT.md shares with it.

SUMMARY.md is the short page: how each member ended and what it used, the outcome, and
one coverage sentence computed from the review records. REPORT.md repeats the member
table and the sentence, so both live here and the two files can never disagree.

Everything is a pure function of `LedgerState` and `RunSummary`: no clock, no file
reads, no set iteration in output order, so finalizing a run twice (or later from disk)
writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.display import (
    MemberRow,
    called,
    format_cost,
    format_count,
    format_duration,
    format_time,
)
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.ledgers.findings import classify
from horde_tui.store.members import MemberState
from horde_tui.store.model import Entity, Finding, Post
from horde_tui.store.state import LedgerState
from horde_tui.store.usage import sum_cost

DEMO_MODEL = "demo model (scripted, not a real LLM)"


@dataclass(frozen=True)
class RunScope:
    """Which ledger entries belong to the run being reported, which were carried in.

    The ledgers are shared by every run of a project, so "this run's" is `entity.run`,
    and "carried" is an entry of another run written *before* this run started (by
    ledger seq). Entries of runs that started later are neither: re-finalizing an old
    run must not pull in work that did not exist yet.
    """

    run: str
    start: int
    """Seq of this run's `run.start` record (entries before it are carried)."""
    end: float
    """Seq of the next run's `run.start`, or infinity: changes in [start, end) are ours."""

    @classmethod
    def of(cls, state: LedgerState, run: str) -> RunScope:
        info = state.runs.get(run)
        if info is None:
            return cls(run, state.seq + 1, float("inf"))
        later = [r.seq for r in state.runs.values() if r.seq > info.seq]
        return cls(run, info.seq, min(later) if later else float("inf"))

    def owns(self, entity: Entity) -> bool:
        return entity.run == self.run

    def carried(self, entity: Entity) -> bool:
        return entity.run != self.run and entity.seq < self.start

    def during(self, seq: int) -> bool:
        """Whether a change with this ledger seq happened while this run was the latest."""
        return self.start <= seq < self.end


def current_findings(state: LedgerState, scope: RunScope) -> list[Finding]:
    """This run's findings that nothing superseded, in ledger order."""
    found = [f for f in state.findings.values() if scope.owns(f) and not f.superseded_by]
    return sorted(found, key=lambda f: f.seq)


def coverage_sentence(state: LedgerState, scope: RunScope) -> str:
    """One sentence from the V# review records, naming every unreviewed F# of the run."""
    findings = current_findings(state, scope)
    if not findings:
        return "Review coverage: this run filed no current findings."
    by_status: dict[str, list[str]] = {}
    for f in findings:
        by_status.setdefault(classify(state, f), []).append(f.id)
    parts = []
    for status, word in (("full", "full-scope"), ("limited", "limited"), ("disputed", "disputed")):
        ids = by_status.get(status, [])
        parts.append(f"{len(ids)} {word}" + (f" ({', '.join(ids)})" if ids else ""))
    legacy = by_status.get("legacy", [])
    if legacy:
        parts.append(
            f"{len(legacy)} legacy ({', '.join(legacy)}: a verify label, no scoped review)"
        )
    unreviewed = by_status.get("unreviewed", [])
    tail = f"unreviewed: {', '.join(unreviewed)}" if unreviewed else "none unreviewed"
    noun = "finding" if len(findings) == 1 else "findings"
    return f"Review coverage of {len(findings)} current {noun}: {', '.join(parts)}; {tail}."


def model_line(summary: RunSummary) -> str:
    """A demo run says so plainly: its output must never pass for a real model's."""
    if summary.demo:
        return f"Model: {DEMO_MODEL}" + (f", `{summary.model}`" if summary.model else "")
    return f"Model: `{summary.model or 'unknown'}`"


def tokens(member: MemberState) -> int:
    return member.prompt_tokens + member.completion_tokens


def total_cost(members: list[MemberState]) -> float | None:
    """Sum of member costs; unknown as soon as one member's cost is unknown."""
    return sum_cost(m.cost_usd for m in members)


def member_table(members: list[MemberState]) -> list[str]:
    """The per-member table with a total row, shared by SUMMARY.md and REPORT.md."""
    if not members:
        return ["_No members ran._"]
    lines = [
        "| member | role | end | turns | tokens in | tokens out | cost | resets |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for m in members:
        row = MemberRow.of(m)  # the row the app's table and the pages show
        role = m.role + (f" ({'; '.join(m.layers)})" if m.layers else "")
        lines.append(
            f"| {m.name} | {_cell(role)} | {_cell(row.end)} | {m.turns} | "
            f"{format_count(m.prompt_tokens)} | {format_count(m.completion_tokens)} | "
            f"{row.cost} | {m.resets} |"
        )
    cost = format_cost(total_cost(members), any(map(called, members)))
    lines.append(
        f"| total | | | {sum(m.turns for m in members)} | "
        f"{format_count(sum(m.prompt_tokens for m in members))} | "
        f"{format_count(sum(m.completion_tokens for m in members))} | {cost} | "
        f"{sum(m.resets for m in members)} |"
    )
    return lines


def _cell(text: str) -> str:
    """A table cell: one line, pipes escaped so the row keeps its columns."""
    return one_line(text).replace("|", "\\|")


def last_post(state: LedgerState, run: str, member: str) -> Post | None:
    """The member's last board post in the run: a killed member's last words."""
    posts = [p for p in state.posts if p.run == run and p.by == member]
    return max(posts, key=lambda p: p.seq) if posts else None


def outcome_line(summary: RunSummary) -> str:
    return f"Outcome: **{summary.outcome}** (exit code {summary.exit_code})"


def render_summary(state: LedgerState, summary: RunSummary) -> str:
    """SUMMARY.md: per-member status and usage, the outcome, the review coverage."""
    scope = RunScope.of(state, summary.run_id)
    lines = [
        f"# Run {summary.run_id} summary",
        "",
        f"- {outcome_line(summary)}",
        f"- Diagnosis: {one_line(summary.diagnosis) or 'none recorded'}",
        f"- Canary: {one_line(summary.canary) or 'unknown'}",
        f"- {model_line(summary)}",
        f"- Time: {format_time(summary.started)} to {format_time(summary.ended)} "
        f"({format_duration(summary.ended - summary.started)})",
        "",
        "## Members",
        "",
        *member_table(summary.members),
        "",
        "## Coverage",
        "",
        coverage_sentence(state, scope),
        "",
    ]
    return "\n".join(lines)
