"""Finding clusters for the report: one entry per distinct issue, ranked.

Members describe one problem several times: a delta adds a vector to a parent, a
re-report slips past the dedup of its day, an amended text converges with another. The
report lists *issues*, so findings are grouped before ranking: a `deltaOf` link joins a
cluster (followed through supersessions to the current finding), and two findings of
the same concern whose text matches by `textmatch` keys join too.

Clusters rank by review status (full > limited > legacy > unreviewed > disputed), then
the best support, importance, the number of independent members, confidence, and finally ledger
order, so the ranking is total and rendering is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from horde_tui.store.ledgers.findings import classify, independent_reporters, match_text
from horde_tui.store.model import CONFIDENCE, IMPORTANCE, SUPPORT, Finding
from horde_tui.store.state import LedgerState
from horde_tui.store.textmatch import TextKey, is_duplicate

STATUS_ORDER = ("full", "limited", "legacy", "unreviewed", "disputed")
"""Best first. A legacy finding (a `verify` label, no scoped review) was reproduced by
someone, without saying what was checked; a disputed one ranks below an unreviewed one:
someone refuted it."""
_STATUS = {s: i for i, s in enumerate(STATUS_ORDER)}
_SUPPORT = {s: i for i, s in enumerate(SUPPORT)}
_IMPORTANCE = {s: i for i, s in enumerate(IMPORTANCE)}
_CONFIDENCE = {s: i for i, s in enumerate(CONFIDENCE)}


@dataclass(frozen=True)
class Cluster:
    """One distinct issue: its findings, who stands behind it, its best labels."""

    ids: tuple[str, ...]
    """F# ids in ledger order."""
    lead: str
    """The best-ranked finding: its claim line titles the cluster."""
    concerns: tuple[str, ...]
    """Concern slugs in order of first appearance; more than one is a mixed cluster."""
    members: tuple[str, ...]
    """Independent members: reporters, corroborators and verifiers of current revisions."""
    status: str
    """Best review classification among the findings."""
    support: str
    importance: str | None
    confidence: str | None
    classifications: tuple[tuple[str, str], ...]
    """(F#, classification) for every finding: the cluster's review coverage."""

    @property
    def concern(self) -> str:
        return self.concerns[0] if self.concerns else ""

    @property
    def mixed(self) -> bool:
        """A deltaOf chain crossed concerns: the slugs disagree about what the issue is."""
        return len(self.concerns) > 1

    def rank_key(self) -> tuple[int, int, int, int, int]:
        return (
            _STATUS.get(self.status, len(_STATUS)),
            _SUPPORT.get(self.support, len(_SUPPORT)),
            _rank(_IMPORTANCE, self.importance),
            -len(self.members),
            _rank(_CONFIDENCE, self.confidence),
        )


def _rank(order: dict[str, int], value: str | None) -> int:
    """Position of a label; a missing or unknown label sorts after every real one."""
    return order.get(value or "", len(order))


def current_of(state: LedgerState, finding_id: str) -> str:
    """Follow `superseded_by` to the finding that stands now (cycles stop the walk)."""
    seen = {finding_id}
    ident = finding_id
    while (f := state.findings.get(ident)) is not None and f.superseded_by:
        if f.superseded_by in seen:
            break
        ident = f.superseded_by
        seen.add(ident)
    return ident


class _Groups:
    """Union-find over finding ids; the root is always the earliest finding."""

    def __init__(self, findings: list[Finding]) -> None:
        self.order = {f.id: i for i, f in enumerate(findings)}
        self.parent = {f.id: f.id for f in findings}

    def find(self, ident: str) -> str:
        root = ident
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[ident] != root:
            self.parent[ident], ident = root, self.parent[ident]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            first, second = sorted((ra, rb), key=self.order.__getitem__)
            self.parent[second] = first


def group_findings(state: LedgerState, findings: list[Finding]) -> list[list[Finding]]:
    """Partition `findings` (ledger order) into clusters by deltaOf and duplicate text."""
    groups = _Groups(findings)
    for f in findings:
        if f.delta_of:
            parent = current_of(state, f.delta_of)
            if parent in groups.parent and parent != f.id:
                groups.union(f.id, parent)
    by_concern: dict[str, list[Finding]] = {}
    for f in findings:
        by_concern.setdefault(f.concern, []).append(f)
    for same in by_concern.values():
        keys = [state.finding_index.keys.get(f.id) or TextKey.of(match_text(f)) for f in same]
        for i in range(len(same)):
            for j in range(i + 1, len(same)):
                if is_duplicate(keys[i], keys[j]):
                    groups.union(same[i].id, same[j].id)
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(groups.find(f.id), []).append(f)
    return list(out.values())


def _finding_key(state: LedgerState, f: Finding) -> tuple[int, int, int, int, int]:
    return (
        _STATUS.get(classify(state, f), len(_STATUS)),
        _SUPPORT.get(f.support, len(_SUPPORT)),
        _rank(_IMPORTANCE, f.importance),
        _rank(_CONFIDENCE, f.confidence),
        f.seq,
    )


def make_cluster(state: LedgerState, group: list[Finding]) -> Cluster:
    """Summarise one group: best labels across its findings, members in order seen."""
    lead = min(group, key=lambda f: _finding_key(state, f))
    members = [name for f in group for name in independent_reporters(f)]
    statuses = [classify(state, f) for f in group]
    importance = min((f.importance for f in group), key=lambda v: _rank(_IMPORTANCE, v))
    confidence = min((f.confidence for f in group), key=lambda v: _rank(_CONFIDENCE, v))
    return Cluster(
        ids=tuple(f.id for f in group),
        lead=lead.id,
        concerns=tuple(dict.fromkeys(f.concern for f in group)),
        members=tuple(dict.fromkeys(members)),
        status=min(statuses, key=lambda s: _STATUS.get(s, len(_STATUS))),
        support=min((f.support for f in group), key=lambda s: _SUPPORT.get(s, len(_SUPPORT))),
        importance=importance,
        confidence=confidence,
        classifications=tuple(zip((f.id for f in group), statuses, strict=True)),
    )


def build_clusters(state: LedgerState, findings: list[Finding]) -> list[Cluster]:
    """Ranked clusters of `findings` (pass the run's current, non-superseded findings)."""
    ordered = sorted(findings, key=lambda f: f.seq)
    clusters = [make_cluster(state, g) for g in group_findings(state, ordered)]
    first_seq = {c.ids[0]: state.findings[c.ids[0]].seq for c in clusters}
    return sorted(clusters, key=lambda c: (*c.rank_key(), first_seq[c.ids[0]]))
