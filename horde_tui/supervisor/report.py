"""REPORT.md: the reconciled account of one run, computed from the ledgers by code.

Written at finalize, after acceptance is frozen and cleanups ran. No model writes any
of it (the deliverable and the post-mortem are separate files), so the same ledgers and
`RunSummary` always give the same report; `horde-tui finalize RUN` can rewrite it later.

The ledgers are shared across runs, so every section keeps this run's entries apart from
entries carried in from earlier runs (see `RunScope`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from horde_tui.protocol.actions.collab_reads import acceptance_line
from horde_tui.protocol.context import PARENT_ACTORS
from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.acceptance import GROUPS as ACCEPTANCE_GROUPS
from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.clusters import Cluster, build_clusters
from horde_tui.store.display import end_label, format_duration, format_time
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.common import one_line, stamp
from horde_tui.store.ledgers.facts import is_provisional
from horde_tui.store.ledgers.findings import classify, current_reviews, label
from horde_tui.store.model import Claim, Entity, Fact, Finding, Idea, Resource
from horde_tui.store.state import LedgerState
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor.baseline import LAST, Delta, delta_lines
from horde_tui.supervisor.citations import ConsistencyWarning, check_findings
from horde_tui.supervisor.forecast import Forecast, finding_yield, spend_lines
from horde_tui.supervisor.summary import (
    RunScope,
    coverage_sentence,
    current_findings,
    last_post,
    member_table,
    model_line,
    outcome_line,
    render_summary,
)

__all__ = ["render_report", "render_summary"]

E = TypeVar("E", bound=Entity)

CARRIED_CAP = 50
"""Carried entries listed per section; the rest are counted (the ledgers have them all)."""
NONE = "_None._"


def render_report(
    state: LedgerState,
    summary: RunSummary,
    workdir: Path,
    cleanups: Mapping[str, str] | None = None,
    delta: Delta | str | None = None,
) -> str:
    """REPORT.md for `summary.run_id`.

    `cleanups` maps R# to the result of its cleanup command, when finalize ran one: the
    status line, then the tail of its output (`cleanup.results`).
    Reads files only to check cited paths under `workdir`. `delta` is the Delta against a
    baseline run (`supervisor.baseline`), or the baseline asked for that was not found.
    """
    scope = RunScope.of(state, summary.run_id)
    findings = current_findings(state, scope)
    clusters = build_clusters(state, findings)
    warnings = check_findings(state, findings, clusters, workdir)
    done = cleanups or {}
    spend = spend_lines(
        summary.members,
        (summary.ended - summary.started) / 60,
        *finding_yield(state, summary.run_id),
        Forecast.from_event(summary.forecast) if summary.forecast else None,
    )
    sections = [
        _header(state, summary, spend),
        _members(state, summary),
        _findings(state, findings, clusters),
        *([_delta(state, delta)] if delta is not None else []),
        _superseded(state, scope),
        _acceptance(state, scope),
        _carried_findings(state, scope),
        _split("Claims", state.claims, scope, lambda c: _claim_line(c, scope)),
        _split("Facts", state.facts, scope, lambda f: _fact_line(state, f, scope)),
        _split("Resources", state.resources, scope, lambda r: _resource_line(r, scope, done)),
        _coverage(state, scope),
        _late_posts(state, summary),
        _warnings(warnings),
    ]
    return "\n".join(sections)


def _delta(state: LedgerState, delta: Delta | str) -> str:
    if isinstance(delta, str):
        missing = (
            "no earlier finished run on this task"
            if delta == LAST
            else f"no run {delta} in these ledgers"
        )
        return _section("Delta", [f"Baseline {delta!r} not found: {missing}."])
    return _section("Delta", delta_lines(delta, state))


def _section(title: str, lines: list[str]) -> str:
    return "\n".join([f"## {title}", "", *(lines or [NONE]), ""])


def _header(state: LedgerState, summary: RunSummary, spend: list[str]) -> str:
    info = state.runs.get(summary.run_id)
    lines = [
        f"# Run {summary.run_id} report: {summary.outcome}",
        "",
        f"Diagnosis: {one_line(summary.diagnosis) or 'none recorded'}",
        "",
        f"- {outcome_line(summary)}",
        f"- Canary: {one_line(summary.canary) or 'unknown'}",
        f"- {model_line(summary)}",
        f"- Time: {format_time(summary.started)} to {format_time(summary.ended)} "
        f"({format_duration(summary.ended - summary.started)})",
        f"- Task: TASK.md sha256 `{info.task_sha256 if info and info.task_sha256 else 'unknown'}`",
        *spend,
    ]
    if summary.layers:
        lines.append(f"- Plan layers: {'; '.join(summary.layers)}")
    if summary.stop_clean_at is not None:
        lines.append(f"- Clean stop began: {format_time(summary.stop_clean_at)}")
    if summary.resumed_at:
        times = ", ".join(format_time(t) for t in summary.resumed_at)
        lines.append(f"- Resumed: {times} (a new supervisor carried the run on)")
    for member, when, ended in summary.continued:
        after = f", after the run had ended ({ended})" if ended else ""
        lines.append(
            f"- Continued: {member}'s session at {format_time(when)}, from its transcript "
            f"(`horde-tui resume {summary.run_id} --member {member}`{after})"
        )
    if summary.sandbox_note:
        lines.append(f"- Sandbox: {summary.sandbox_note} (see SECURITY.md)")
    if summary.lessons:
        lines.append(f"- {summary.lessons}")
    return "\n".join([*lines, ""])


def _members(state: LedgerState, summary: RunSummary) -> str:
    """The member table, then each member's last word (a killed one's from the board)."""
    lines = [*member_table(summary.members), "", "### Final messages", ""]
    for m in summary.members:
        head = f"- {m.name} ({end_label(m)}"
        head += f"; {one_line(m.detail, 200)})" if m.detail.strip() else ")"
        if m.final_message.strip():
            lines.append(f"{head}: {one_line(m.final_message, 400)}")
            continue
        post = last_post(state, summary.run_id, m.name)
        if post is None:
            lines.append(f"{head}: no final message and no board post")
        else:
            lines.append(
                f"{head}: reconstructed from its last board post ({stamp(post.ts)}): "
                f"{one_line(post.text, 400)}"
            )
    if not summary.members:
        lines.append(NONE)
    return _section("Members", lines)


def _coverage_of(state: LedgerState, f: Finding) -> str:
    reviews = current_reviews(state, f.id)
    detail = ", ".join(f"{r.id} {r.verdict} by {r.by}" for r in reviews)
    note = f" (delta of {f.delta_of})" if f.delta_of else ""
    return f"{f.id} {classify(state, f)}" + (f" [{detail}]" if detail else "") + note


def _cluster_lines(state: LedgerState, rank: int, c: Cluster) -> list[str]:
    lead = state.findings[c.lead]
    labels = [
        c.status,
        c.support,
        f"{c.importance or 'no'} importance",
        f"{c.confidence or 'no'} confidence",
        f"{len(c.members)} independent member{'s' if len(c.members) != 1 else ''} "
        f"({', '.join(c.members)})",
    ]
    concerns = ", ".join(f"`{s}`" for s in c.concerns)
    return [
        f"### {rank}. {c.lead}: {one_line(lead.claim_line, 160)}",
        "",
        f"- {' · '.join(labels)}",
        f"- concern{'s' if c.mixed else ''} {concerns}{' (mixed)' if c.mixed else ''} "
        f"· findings {', '.join(c.ids)}",
        "- review coverage: " + "; ".join(_coverage_of(state, state.findings[i]) for i in c.ids),
        "",
    ]


def _findings(state: LedgerState, findings: list[Finding], clusters: list[Cluster]) -> str:
    if not clusters:
        return _section("Findings", ["This run filed no current findings.", ""])
    noun = "finding" if len(findings) == 1 else "findings"
    lines = [
        f"{len(clusters)} distinct cluster{'s' if len(clusters) != 1 else ''} from "
        f"{len(findings)} current {noun} of this run, best first (review status, support, "
        "importance, independent members, confidence).",
        "",
    ]
    for rank, c in enumerate(clusters, start=1):
        lines += _cluster_lines(state, rank, c)
    return _section("Findings", lines[:-1])


def _superseded(state: LedgerState, scope: RunScope) -> str:
    """This run's superseded findings, and carried ones this run's findings corrected."""
    lines = []
    for f in sorted(state.findings.values(), key=lambda f: f.seq):
        new = state.findings.get(f.superseded_by or "")
        if new is None or not (scope.owns(f) or scope.owns(new)):
            continue
        carried = "" if scope.owns(f) else f", carried from run {f.run}"
        lines.append(
            f"- {f.id} (by {f.by}{carried}) superseded by {new.id}: {one_line(f.claim_line, 160)}"
        )
    return _section("Superseded findings", lines)


def _acceptance(state: LedgerState, scope: RunScope) -> str:
    """This run's F# and A# by acceptance at their current revision: the same records
    ACCEPTANCE.md freezes, grouped."""
    items = acceptance_all(state, scope.run)
    if not items:
        return _section("Acceptance", ["This run filed no findings or artifacts."])
    groups: dict[str, list[str]] = {g: [] for g in ACCEPTANCE_GROUPS}
    for acc in items:
        groups[acc.group].append(acceptance_line(acc))
    counts = ", ".join(f"{len(groups[g])} {g}" for g in ACCEPTANCE_GROUPS)
    lines = [
        f"This run's findings and artifacts ({len(items)}) at their current revisions, as "
        f"ACCEPTANCE.md froze them: {counts}.",
    ]
    for g in ACCEPTANCE_GROUPS:
        lines += ["", f"### {g.capitalize()}", "", *(groups[g] or [NONE])]
    return _section("Acceptance", lines)


def _capped(entries: list[str], total: int, what: str) -> list[str]:
    if total > len(entries):
        entries = [*entries, f"- ... and {total - len(entries)} more {what} in the ledgers"]
    return entries


def _own(table: Mapping[str, E], scope: RunScope) -> list[E]:
    return sorted((e for e in table.values() if scope.owns(e)), key=lambda e: e.seq)


def _carried(table: Mapping[str, E], scope: RunScope) -> list[E]:
    return sorted((e for e in table.values() if scope.carried(e)), key=lambda e: e.seq)


def _carried_findings(state: LedgerState, scope: RunScope) -> str:
    current = [f for f in _carried(state.findings, scope) if not f.superseded_by]
    if not current:
        return _section("Findings carried from earlier runs", [])
    lines = [
        f"- {f.id} (run {f.run}) {classify(state, f)} [{label(f)}]: {one_line(f.claim_line, 160)}"
        for f in current[:CARRIED_CAP]
    ]
    intro = ["Current findings of earlier runs, for context; not this run's work.", ""]
    return _section(
        "Findings carried from earlier runs",
        [*intro, *_capped(lines, len(current), "findings")],
    )


def _split(title: str, table: Mapping[str, E], scope: RunScope, render: Callable[[E], str]) -> str:
    """A ledger section with this run's entries and the carried ones under separate heads."""
    carried = _carried(table, scope)
    shown = [render(e) for e in carried[:CARRIED_CAP]]
    lines = ["### This run", "", *([render(e) for e in _own(table, scope)] or [NONE]), ""]
    lines += ["### Carried from earlier runs", ""]
    lines += _capped(shown, len(carried), title.lower()) or [NONE]
    return _section(title, lines)


def _claim_line(claim: Claim, scope: RunScope) -> str:
    out = f"- {claim.id} **{claim.status}** {one_line(claim.text, 200)} (by {claim.by}"
    out += "" if scope.owns(claim) else f", run {claim.run}"
    for word, names in (("confirmed", claim.confirmers), ("contested", claim.contesters)):
        if names:
            out += f"; {word} by {', '.join(dict.fromkeys(names))}"
    if claim.superseded_by:
        out += f"; superseded by {claim.superseded_by}"
    changed = [n for n in claim.history if scope.during(n.seq)]
    if changed and not scope.owns(claim):
        out += "; this run: " + ", ".join(f"{n.what} by {n.by}" for n in changed)
    return out + ")"


def _fact_line(state: LedgerState, fact: Fact, scope: RunScope) -> str:
    out = f"- {fact.id} {one_line(fact.text, 240)} (by {fact.by}"
    out += "" if scope.owns(fact) else f", run {fact.run}"
    if fact.delta_of:
        out += f"; extends {fact.delta_of}"
    if fact.corroborators:
        out += f"; confirmed by {', '.join(fact.corroborators)}"
    out += ")"
    if is_provisional(state, fact):
        out += f" **provisional on {fact.provisional_on}**"
    return out


def _resource_line(res: Resource, scope: RunScope, cleanups: Mapping[str, str]) -> str:
    out = f"- {res.id} `{res.name}`: owner {res.by}"
    out += "" if scope.owns(res) else f" (run {res.run})"
    out += f"; reused by {', '.join(res.reusers)}" if res.reusers else "; no reusers"
    if res.path:
        out += f"; path `{res.path}`"
    if res.cleanup:
        status, *tail = cleanups.get(res.id, "not run").split("\n")
        out += f"; cleanup `{one_line(res.cleanup, 200)}`: {one_line(status, 300)}"
        out += "".join(f"\n    | {one_line(line, 200)}" for line in tail)
    elif scope.owns(res):
        out += "; no cleanup command"
    return out


def _idea_lines(state: LedgerState, scope: RunScope) -> list[str]:
    """This run's ideas by end state: done, ruled out, released, still open or claimed."""
    own = _own(state.ideas, scope)
    groups: dict[str, list[str]] = {}
    for idea in own:
        state_word, text = _idea_end(idea)
        groups.setdefault(state_word, []).append(f"{idea.id}{text}")
    order = ("done", "ruled out", "released", "still claimed", "still open")
    counts = ", ".join(f"{len(groups[w])} {w}" for w in order if w in groups)
    lines = [f"Ideas of this run: {len(own)}" + (f" ({counts})." if counts else ".")]
    lines += [f"- {w}: " + "; ".join(groups[w]) for w in order if w in groups]
    worked = [
        f"- {i.id} (run {i.run}): " + ", ".join(f"{n.what} by {n.by}" for n in notes)
        for i in _carried(state.ideas, scope)
        if (notes := [n for n in i.history if scope.during(n.seq)])
    ]
    if worked:
        lines += ["", "Carried ideas worked in this run:", *worked]
    return lines


def _idea_end(idea: Idea) -> tuple[str, str]:
    if idea.status == "done":
        return "done", f" by {idea.owner or idea.by}: {one_line(idea.result, 160)}"
    if idea.status == "ruled-out":
        return "ruled out", f" by {idea.owner or idea.by}: {one_line(idea.result, 160)}"
    if idea.status == "claimed":
        return "still claimed", f" by {idea.owner}"
    released = [n for n in idea.history if n.what in ("dropped", "released")]
    if released:
        return "released", f" ({released[-1].what} by {released[-1].by})"
    return "still open", ""


def _answer_line(state: LedgerState, run: str) -> str:
    prop = answers.current(state, run)
    if prop is None:
        return "Answer: none proposed in this run."
    status = {
        "pending": "proposed, never validated",
        "validated": f"validated by {prop.validated_by}",
        "contested": f"contested by {prop.contested_by}: {one_line(prop.contest_text, 200)}",
        "withdrawn": f"withdrawn: {one_line(prop.withdrawn_reason, 200)}",
    }[prop.status]
    changed = answers.changed_citations(state, prop)
    if changed and prop.status != "withdrawn":
        status += f"; changed since pinned: {', '.join(changed)}"
    requests = answers.open_requests(state, run)
    if requests:
        status += "; open requests about it: " + ", ".join(
            f"{t.id} {t.kind} from {t.by} to {t.to} ({t.state})" for t in requests
        )
    reopened = answers.reopened_note(state, prop)
    if reopened:
        status += f"; {reopened}"
    cites = ", ".join(prop.cites) or "nothing"
    line = (
        f"Answer (round {prop.round}, by {prop.by}): {status}. Cites {cites}. "
        f"{one_line(prop.text, 300)}"
    )
    bank = answers.banked(state, run)
    if bank is None:
        return line
    # --until-stop: a later round that is not validated leaves the banked answer standing.
    return (
        f"Banked answer (round {bank.round}, by {bank.by}): validated by {bank.validated_by}; "
        f"it stands. Cites {', '.join(bank.cites) or 'nothing'}. {one_line(bank.text, 300)}\n"
        f"Later {line[0].lower()}{line[1:]}"
    )


def _coverage(state: LedgerState, scope: RunScope) -> str:
    lines = [*_idea_lines(state, scope), "", _answer_line(state, scope.run), ""]
    return _section("Coverage", [*lines, coverage_sentence(state, scope)])


def _late_posts(state: LedgerState, summary: RunSummary) -> str:
    """Member posts after the clean stop began: work the wind-down may not have used."""
    if summary.stop_clean_at is None:
        return _section("Late board posts", ["No clean stop, so no late posts."])
    late = [
        p
        for p in state.posts
        if p.run == summary.run_id
        and p.by not in PARENT_ACTORS
        and (when := epoch(p.ts)) is not None
        and when > summary.stop_clean_at
    ]
    lines = [f"- {stamp(p.ts)} **{p.by}**: {one_line(p.text, 300)}" for p in late]
    return _section("Late board posts", lines)


def _warnings(warnings: list[ConsistencyWarning]) -> str:
    return _section("Consistency warnings", [f"- {w.text}" for w in warnings])
