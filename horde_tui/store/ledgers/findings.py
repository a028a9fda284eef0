"""FINDINGS.md: findings with metadata, evidence, corroborators, reviews and revisions.

A finding's *revision* starts at 1 and moves on each `amend`. Reviews (V#) pin the
revision they checked, so the classification of the current revision only counts
reviews of that revision.
"""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.board import run_heading
from horde_tui.store.ledgers.common import indented, one_line
from horde_tui.store.model import Classification, Finding, HistoryNote, Review, Verification
from horde_tui.store.tables import Fold, LedgerTables

HEADER = (
    "# Findings\n\n"
    "Each finding: `F#` [importance/confidence/support] claim line, then its idea, concern,\n"
    "reporter, revision and review status (full, limited, disputed, unreviewed, legacy,\n"
    "superseded).\n"
    "Written only through the `horde` tool; regenerated from ledger.jsonl.\n"
)


def match_text(f: Finding) -> str:
    """What dedup compares: the prose and the evidence (evidence carries the paths)."""
    return f"{f.text}\n{f.evidence}"


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    f = Finding(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        idea=rec.get("idea", ""),
        concern=rec["concern"],
        text=rec["text"],
        evidence=rec.get("evidence", ""),
        support=rec.get("support", "speculative"),
        importance=rec.get("importance"),
        confidence=rec.get("confidence"),
        delta_of=rec.get("deltaOf"),
        supersedes=rec.get("supersedes"),
        spans=list(rec.get("spans") or []),
    )
    f.claim_lines.append(f.claim_line)
    state.findings[f.id] = f
    state.touch("findings", f)
    if f.supersedes and f.supersedes in state.findings:
        old = state.findings[f.supersedes]
        state.touch("findings", old)
        old.superseded_by = f.id
    state.finding_index.add_text(f.id, match_text(f))


def _corroborate(state: LedgerTables, rec: dict[str, Any]) -> None:
    f = state.findings[rec["id"]]
    if rec["actor"] not in f.corroborators and rec["actor"] != f.by:
        state.touch("findings", f)
        f.corroborators.append(rec["actor"])


def _verify(state: LedgerTables, rec: dict[str, Any]) -> None:
    f = state.findings[rec["id"]]
    state.touch("findings", f)
    f.verifications.append(
        Verification(rec["actor"], rec["support"], rec.get("text", ""), f.revision, rec["seq"])
    )


def _amend(state: LedgerTables, rec: dict[str, Any]) -> None:
    """New prose, new revision; verifications become history; corroborators are dropped."""
    f = state.findings[rec["id"]]
    state.touch("findings", f)
    for v in f.verifications:
        f.history.append(
            HistoryNote(v.seq, "", v.by, f"verified r{v.revision} ({v.support})", v.text)
        )
    f.history.append(
        HistoryNote(
            rec["seq"],
            rec["ts"],
            rec["actor"],
            f"amended to r{f.revision + 1}",
            rec.get("note", ""),
        )
    )
    f.verifications = []
    f.corroborators = []
    f.amended_from.add(f.revision)
    f.text = rec["text"]
    f.revision += 1
    f.claim_lines.append(f.claim_line)
    state.finding_index.add_text(f.id, match_text(f))


def _review(state: LedgerTables, rec: dict[str, Any]) -> None:
    review = Review(
        id=rec["id"],
        target=rec["target"],
        revision=int(rec["revision"]),
        by=rec["actor"],
        verdict=rec["verdict"],
        support=rec.get("support", ""),
        checked=rec.get("checked", ""),
        unchecked=rec.get("unchecked", ""),
        limits=rec.get("limits", ""),
        evidence=rec.get("evidence", ""),
        run=rec["run"],
        seq=rec["seq"],
        evidence_id=rec.get("evidenceId", ""),
        reattests=rec.get("reattests", ""),
        spans=list(rec.get("spans") or []),
    )
    # A review is listed under its target and moves the target's status; a target that
    # does not exist yet shows it once added.
    changed = [review.target]
    if review.id in state.reviews:
        # A V# added twice (only in a hand-edited ledger) replaces the review every
        # earlier target lists: the one place the fold looks beyond the record's entries.
        changed += [t for t, rids in state.reviews_by_target.items() if review.id in rids]
    for target_id in changed:
        target = state.findings.get(target_id)
        if target is not None:
            state.touch("findings", target)
    state.reviews[review.id] = review
    state.reviews_by_target.setdefault(review.target, []).append(review.id)


OPS: dict[str, Fold] = {
    "finding.add": _add,
    "finding.corroborate": _corroborate,
    "finding.verify": _verify,
    "finding.amend": _amend,
    "review.add": _review,
}


def current_reviews(state: LedgerTables, target: str) -> list[Review]:
    """Reviews of an F# or A#'s current revision by anyone but its owner, in ledger order."""
    owner, revision = owner_and_revision(state, target)
    return [
        r
        for rid in state.reviews_by_target.get(target, [])
        if (r := state.reviews[rid]).revision == revision and r.by != owner
    ]


def owner_and_revision(state: LedgerTables, target: str) -> tuple[str, int]:
    """Owner and current revision of an F# or A# (KeyError for anything else)."""
    if target in state.findings:
        f = state.findings[target]
        return f.by, f.revision
    art = state.artifacts[target]
    return art.by, art.revision


def classify(state: LedgerTables, f: Finding) -> Classification:
    """The review status of the finding's current revision (see the reference)."""
    if f.superseded_by:
        return "superseded"
    reviews = current_reviews(state, f.id)
    if any(r.verdict == "refutes" for r in reviews):
        return "disputed"
    if any(r.verdict == "supports" and not r.unchecked.strip() for r in reviews):
        return "full"
    if reviews:
        return "limited"
    if any(v.by != f.by and v.revision == f.revision for v in f.verifications):
        # A `verify` label says someone reproduced it, not what they checked.
        return "legacy"
    return "unreviewed"


def pending_reviews(state: LedgerTables, reviewer: str, run: str) -> list[str]:
    """Other members' current findings of `run` that `reviewer` has not reviewed (a V#,
    not a `verify` label) at their current revision: what a verifier owes."""
    pending = []
    for f in state.findings.values():
        if f.run != run or f.by == reviewer or f.superseded_by:
            continue
        if not any(r.by == reviewer for r in current_reviews(state, f.id)):
            pending.append(f.id)
    return pending


def independent_reporters(f: Finding) -> list[str]:
    """The reporter plus everyone who reproduced or re-reported it at this revision."""
    names = [f.by, *f.corroborators]
    names += [v.by for v in f.verifications if v.revision == f.revision]
    return list(dict.fromkeys(names))


def is_settled(state: LedgerTables, f: Finding) -> bool:
    """Corroborated by someone else, or reviewed full-scope: a re-report adds nothing."""
    return len(independent_reporters(f)) > 1 or classify(state, f) == "full"


def label(f: Finding) -> str:
    parts = [f.importance or "?", f.confidence or "?", f.support]
    return "/".join(parts)


def render_finding(state: LedgerTables, f: Finding) -> str:
    lines = [f"### {f.id} [{label(f)}] {one_line(f.claim_line)}", ""]
    meta = [
        f"idea {f.idea or '-'}",
        f"concern `{f.concern}`",
        f"by {f.by}",
        f"r{f.revision}",
        f"status {classify(state, f)}",
    ]
    lines.append("- " + " · ".join(meta))
    if f.delta_of:
        lines.append(f"- delta of {f.delta_of}")
    if f.supersedes:
        lines.append(f"- supersedes {f.supersedes}")
    if f.superseded_by:
        lines.append(f"- superseded by {f.superseded_by}")
    if f.corroborators:
        lines.append(f"- corroborated by {', '.join(f.corroborators)}")
    for v in f.verifications:
        lines.append(
            f"- verified by {v.by} at r{v.revision} ({v.support}): {one_line(v.text, 200)}"
        )
    for r in (state.reviews[rid] for rid in state.reviews_by_target.get(f.id, [])):
        lines.append(f"- {r.id} {r.verdict} r{r.revision} by {r.by}")
    body = f.text.strip().splitlines()[1:]
    if body:
        lines += ["", "\n".join(body).strip()]
    if f.evidence.strip():
        lines += ["", "Evidence:", "", indented(f.evidence, "    ")]
    for note in f.history:
        if note.what.startswith("amended"):
            lines.append(f"\n_{note.what} by {note.by}: {one_line(note.text, 200)}_")
    return "\n".join(lines) + "\n"


def render(state: LedgerTables) -> str:
    parts = [HEADER]
    for run_id, findings in state.entry_texts_by_run("findings"):
        info = state.runs.get(run_id)
        parts.append("\n" + (run_heading(info) if info else f"## Run {run_id}\n") + "\n")
        parts.append("\n".join(findings))
    if not state.findings:
        parts.append("\n_No findings yet._\n")
    return "".join(parts)
