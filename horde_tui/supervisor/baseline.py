"""Baseline runs: for repeated audits of a changing codebase, what this run found that
the baseline did not (new), what it found again (persisting), and what it did not
reproduce (resolved), with whether the code under the old evidence changed.

The ledgers are shared by every run of a project, so the baseline's findings are in
this run's state. A baseline finding persists when this run re-found it: one of this
run's findings matches it (same concern, the ledgers' identifier-first dedup), a member
reported it again (the tool's `duplicate` or `dropped` outcome names it), or a review
written in this run supports it. It is resolved otherwise; a review of this run that
refutes it says so, and the re-check of its cited lines (`protocol.evidence`) says
whether the code changed under it since it was filed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.protocol.evidence import changed_spans
from horde_tui.store import runs
from horde_tui.store.ledgers.findings import match_text
from horde_tui.store.model import Finding
from horde_tui.store.state import LedgerState
from horde_tui.store.textmatch import TextKey, is_duplicate

LAST = "last"
"""`--baseline last`: the newest finished run on the same task."""
REFOUND_OUTCOMES = ("duplicate", "dropped")


@dataclass
class Delta:
    baseline: str
    new: list[str] = field(default_factory=list)
    persisting: list[tuple[str, str]] = field(default_factory=list)
    """(baseline F#, how this run re-found it)."""
    resolved: list[tuple[str, str]] = field(default_factory=list)
    """(baseline F#, why it is counted resolved and what its evidence shows now)."""
    refound: dict[str, list[str]] = field(default_factory=dict)
    """This run's F# -> the baseline F# it is the same concern as (dedup)."""
    code: dict[str, str] = field(default_factory=dict)
    """Resolved baseline F# -> `code changed`, `code unchanged` or `nothing cited`: what
    the re-check of its evidence says."""
    refuted: dict[str, str] = field(default_factory=dict)
    """Resolved baseline F# -> the review of this run that refutes it."""


def resolve_baseline(horde_dir: Path, state: LedgerState, run: str, asked: str) -> str | None:
    """The run `asked` names (`last`: the newest finished run on this run's task that
    started before it), or None when there is none."""
    if asked != LAST:
        return asked if asked in state.runs and asked != run else None
    this = state.runs.get(run)
    if this is None:
        return None
    earlier = [
        info
        for rid, info in state.runs.items()
        if info.seq < this.seq
        and info.task_sha256 == this.task_sha256
        and runs.run_state(runs.run_dir(horde_dir, rid)) == "finished"
    ]
    return max(earlier, key=lambda i: i.seq).id if earlier else None


def _current(state: LedgerState, run: str) -> list[Finding]:
    found = [f for f in state.findings.values() if f.run == run and not f.superseded_by]
    return sorted(found, key=lambda f: f.seq)


def delta(
    state: LedgerState, run: str, baseline: str, workdir: Path, events: list[dict[str, Any]]
) -> Delta:
    """This run's findings against `baseline`'s (see the module docstring)."""
    out = Delta(baseline)
    old = _current(state, baseline)
    keys = {b.id: TextKey.of(match_text(b)) for b in old}
    how: dict[str, str] = {}
    for f in _current(state, run):
        key = TextKey.of(match_text(f))
        same = [b for b in old if b.concern == f.concern and is_duplicate(key, keys[b.id])]
        for b in same:
            how.setdefault(b.id, f"re-found as {f.id}")
        if same:
            out.refound[f.id] = [b.id for b in same]
        else:
            out.new.append(f.id)
    for ev in events:
        entry = ev.get("entry")
        if ev.get("type") == "outcome" and ev.get("outcome") in REFOUND_OUTCOMES and entry in keys:
            how.setdefault(str(entry), f"reported again by {ev.get('actor')}")
    refuted: dict[str, str] = {}
    for r in state.reviews.values():
        if r.run != run or r.target not in keys:
            continue
        if r.verdict == "refutes":
            refuted.setdefault(r.target, f"refuted by {r.id}")
        else:
            how.setdefault(r.target, f"{r.id} {r.verdict} it")
    for b in old:
        if b.id in how and b.id not in refuted:
            out.persisting.append((b.id, how[b.id]))
            continue
        why = refuted.get(b.id, "not reproduced")
        if b.id in refuted:
            out.refuted[b.id] = refuted[b.id].removeprefix("refuted by ")
        changed = changed_spans(b.spans, workdir)
        if changed:
            out.code[b.id] = "code changed"
            code = "the cited code changed: " + ", ".join(f"{k} {v}" for k, v in changed.items())
        elif b.spans:
            out.code[b.id] = "code unchanged"
            code = "the cited code is unchanged"
        else:
            out.code[b.id] = "nothing cited"
            code = "no cited lines to re-check"
        out.resolved.append((b.id, f"{why}; {code}"))
    return out


def delta_cells(d: Delta) -> tuple[dict[str, str], dict[str, str]]:
    """The Findings tab's baseline column: (this run's F# -> `new` or `persisting F2`,
    baseline F# -> its cell) where the baseline's findings listed are those no finding of
    this run stands for: re-found another way (`persisting: reported again by
    member-1`) or not at all (`resolved: code changed`, `resolved (refuted): ...`)."""
    mine = {ident: "new" for ident in d.new}
    mine |= {ident: "persisting " + ", ".join(old) for ident, old in d.refound.items()}
    stood_for = {b for old in d.refound.values() for b in old}
    theirs = {b: f"persisting: {how}" for b, how in d.persisting if b not in stood_for}
    for b, _why in d.resolved:
        refuted = " (refuted)" if b in d.refuted else ""
        theirs[b] = f"resolved{refuted}: {d.code[b]}"
    return mine, theirs


def delta_lines(d: Delta, state: LedgerState) -> list[str]:
    """REPORT.md's Delta section."""

    def claim(ident: str) -> str:
        return state.findings[ident].claim_line[:160]

    lines = [
        f"Against baseline run {d.baseline}: {len(d.new)} new, {len(d.persisting)} "
        f"persisting, {len(d.resolved)} resolved.",
        "",
    ]
    lines += [f"- new {i}: {claim(i)}" for i in d.new]
    lines += [f"- persisting {i} ({how}): {claim(i)}" for i, how in d.persisting]
    lines += [f"- resolved {i} ({why}): {claim(i)}" for i, why in d.resolved]
    return lines
