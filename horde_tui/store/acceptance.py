"""Acceptance of findings (F#) and artifacts (A#): a pure function of the folded ledger.

The reference's rules, in the order they apply to the target's *current* revision:

- an open (or deferred) blocker or challenge about it -> `blocked` by those Q#;
- a qualifying review -> `accepted`, or `accepted-with-limits` when any supporting review
  of that revision disclosed `limits` (outside the criteria: recorded, never blocking);
- otherwise `open`: a review left gaps `unchecked`, its support level is too weak for the
  kind, or nobody has reviewed this revision yet.

A qualifying review is by someone other than the owner, pins the current revision, says
`supports`, leaves nothing unchecked, and has the support the kind needs: `tested` or
`reproduced` for a runnable artifact; for a document artifact `sourced` or `derived`
(a stronger `tested`/`reproduced` also counts); any review support level for a finding.

The supervisor freezes these results into ACCEPTANCE.json/.md; nothing here writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from horde_tui.store.ledgers.findings import classify, current_reviews, owner_and_revision
from horde_tui.store.ledgers.threads import open_blockers, threads_about
from horde_tui.store.model import Review

if TYPE_CHECKING:
    from horde_tui.store.state import LedgerState

AcceptanceState = Literal["accepted", "accepted-with-limits", "open", "blocked", "superseded"]

GROUPS = ("accepted", "accepted with limits", "open", "refuted", "superseded")
"""REPORT.md's acceptance headings, in order (`Acceptance.group`)."""

RUNNABLE_SUPPORT = frozenset({"tested", "reproduced"})
DOCUMENT_SUPPORT = frozenset({"sourced", "derived", "tested", "reproduced"})
FINDING_SUPPORT = frozenset({"sourced", "derived", "tested", "reproduced"})
NEED = {"runnable": "tested or reproduced", "document": "sourced or derived"}


@dataclass(frozen=True)
class Acceptance:
    """Where one F# or A# stands, and the review and thread ids that decide it."""

    target: str
    revision: int
    owner: str
    state: AcceptanceState
    reason: str
    deciding: tuple[str, ...] = ()
    """V# that settle it (qualifying reviews), or that keep it open (partial reviews)."""
    blockers: tuple[str, ...] = ()
    """Open or deferred Q# blockers and challenges about it."""
    unchecked: tuple[tuple[str, str], ...] = ()
    """(V#, what that review left unchecked) at the current revision."""
    limits: tuple[tuple[str, str], ...] = ()
    """(V#, disclosed limits) of supporting reviews at the current revision."""
    refuting: tuple[str, ...] = ()
    """V# by non-owners that refute the current revision."""

    @property
    def group(self) -> str:
        """Where REPORT.md lists it: accepted, accepted with limits, open, refuted (not
        accepted, and a review refutes this revision), or superseded."""
        if self.state in ("accepted", "accepted-with-limits", "superseded"):
            return self.state.replace("-", " ")
        return "refuted" if self.refuting else "open"

    @property
    def label(self) -> str:
        """`accepted`, `accepted with limits`, `open`, `blocked by Q3, Q5`, `superseded`."""
        if self.state == "blocked":
            return "blocked by " + ", ".join(self.blockers)
        return self.state.replace("-", " ")

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["label"] = self.label
        data["deciding"] = list(self.deciding)
        data["blockers"] = list(self.blockers)
        data["unchecked"] = [{"review": v, "text": t} for v, t in self.unchecked]
        data["limits"] = [{"review": v, "text": t} for v, t in self.limits]
        data["refuting"] = list(self.refuting)
        return data


def required_support(state: LedgerState, target: str) -> frozenset[str]:
    """The review support levels that can accept `target`."""
    art = state.artifacts.get(target)
    if art is None:
        return FINDING_SUPPORT
    return RUNNABLE_SUPPORT if art.kind == "runnable" else DOCUMENT_SUPPORT


def is_qualifying(state: LedgerState, target: str, review: Review) -> bool:
    """A review that accepts the target's current revision on its own."""
    owner, revision = owner_and_revision(state, target)
    return (
        review.by != owner
        and review.revision == revision
        and review.verdict == "supports"
        and review.full_scope
        and review.support in required_support(state, target)
    )


def acceptance(state: LedgerState, target: str) -> Acceptance:
    """The acceptance of one F# or A# (KeyError when it does not exist)."""
    owner, revision = owner_and_revision(state, target)
    base: dict[str, Any] = {"target": target, "revision": revision, "owner": owner}
    f = state.findings.get(target)
    if f is not None and f.superseded_by:
        return Acceptance(**base, state="superseded", reason=f"superseded by {f.superseded_by}")
    reviews = current_reviews(state, target)
    kept = [r for r in reviews if r.verdict != "refutes"]
    unchecked = tuple((r.id, r.unchecked.strip()) for r in kept if not r.full_scope)
    limits = tuple((r.id, r.limits.strip()) for r in kept if r.limits.strip())
    refuting = tuple(r.id for r in reviews if r.verdict == "refutes")
    base |= {"unchecked": unchecked, "limits": limits, "refuting": refuting}
    blockers = tuple(t.id for t in open_blockers(state, target))
    if blockers:
        return Acceptance(
            **base, state="blocked", reason="open blocker or challenge", blockers=blockers
        )
    qualifying = tuple(r.id for r in reviews if is_qualifying(state, target, r))
    if qualifying:
        settled: AcceptanceState = "accepted-with-limits" if limits else "accepted"
        return Acceptance(
            **base, state=settled, reason=f"r{revision} reviewed full-scope", deciding=qualifying
        )
    return Acceptance(**base, state="open", **_open_reason(state, target, revision, reviews))


def _open_reason(
    state: LedgerState, target: str, revision: int, reviews: list[Review]
) -> dict[str, Any]:
    """Why a target without a blocker is not accepted yet, naming the reviews concerned."""
    partial = [r for r in reviews if r.verdict != "refutes" and not r.full_scope]
    if partial:
        gaps = "; ".join(f"{r.id} left unchecked: {r.unchecked.strip()}" for r in partial)
        return {"reason": gaps, "deciding": tuple(r.id for r in partial)}
    weak = [r for r in reviews if r.verdict == "supports"]
    if weak:
        # Only artifacts get here: any review support level accepts a finding.
        kind = state.artifacts[target].kind if target in state.artifacts else "finding"
        return {
            "reason": f"{', '.join(f'{r.id} is {r.support}' for r in weak)}; a {kind} "
            f"artifact needs a full-scope {NEED.get(kind, 'supporting')} review",
            "deciding": tuple(r.id for r in weak),
        }
    refuting = [r for r in reviews if r.verdict == "refutes"]
    if refuting:
        return {
            "reason": f"refuted by {', '.join(r.id for r in refuting)}; no supporting review",
            "deciding": tuple(r.id for r in refuting),
        }
    f = state.findings.get(target)
    if f is not None and classify(state, f) == "legacy":
        names = dict.fromkeys(v.by for v in f.verifications if v.revision == revision)
        by = ", ".join(n for n in names if n != f.by)
        return {"reason": f"legacy: verified by {by} with no scoped review of r{revision} yet"}
    return {"reason": f"no qualifying review of r{revision} yet"}


def acceptance_all(state: LedgerState, run: str | None = None) -> list[Acceptance]:
    """Every F# and A# (of `run`, when given) in id order: findings, then artifacts."""
    items = [f.id for f in state.findings.values() if run is None or f.run == run]
    items += [a.id for a in state.artifacts.values() if run is None or a.run == run]
    return [acceptance(state, ident) for ident in items]


def prior_reviewers(state: LedgerState, target: str) -> list[str]:
    """Members who reviewed an earlier revision of `target`, most recent first: a re-review
    goes to them first (they can `reattest` what did not change)."""
    _owner, revision = owner_and_revision(state, target)
    earlier = [
        state.reviews[rid]
        for rid in state.reviews_by_target.get(target, [])
        if state.reviews[rid].revision < revision
    ]
    earlier.sort(key=lambda r: r.seq, reverse=True)
    return list(dict.fromkeys(r.by for r in earlier))


def awaiting_review(state: LedgerState, run: str | None = None) -> list[str]:
    """A# (of `run`) whose current revision has no qualifying review, no open blocker, and
    no open review-request about it: what the supervisor's review assignment hands out."""
    out = []
    for art in state.artifacts.values():
        if run is not None and art.run != run:
            continue
        if acceptance(state, art.id).state != "open":
            continue
        requested = any(
            t.kind == "review-request" and not t.closed and not t.repin
            for t in threads_about(state, art.id)
        )
        if not requested:
            out.append(art.id)
    return out
