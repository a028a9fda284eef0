"""Consistency checks for the report: metadata, R# citations, cited paths, mixed clusters.

A report is only as good as what its findings point at. These checks flag what a reader
would trip over: a finding without importance or confidence, an `R#` that no resource
has, a file path that is not in the working directory, a cluster whose deltaOf chain
crosses concerns. They warn; they never change the ledgers.

The grammar of a cited path is `store/pathcite.py`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from horde_tui.protocol.evidence import changed_spans
from horde_tui.store.clusters import Cluster
from horde_tui.store.model import Finding
from horde_tui.store.pathcite import PathIndex, path_citations
from horde_tui.store.state import LedgerState

_RESOURCE_REF = re.compile(r"\bR([0-9]{1,18})\b")


@dataclass(frozen=True)
class ConsistencyWarning:
    """One thing a reader of the report should double-check."""

    kind: str
    """missing-metadata, unknown-resource, missing-path, stale-evidence, missing-evidence,
    mixed-concern or skipped-record."""
    subject: str
    """The F# (or cluster ids) the warning is about."""
    text: str


def missing_metadata(findings: Iterable[Finding]) -> list[ConsistencyWarning]:
    """Findings without importance or confidence (deltas inherit their parent's)."""
    out = []
    for f in findings:
        missing = [n for n in ("importance", "confidence") if getattr(f, n) is None]
        if missing and not f.delta_of:
            out.append(
                ConsistencyWarning(
                    "missing-metadata", f.id, f"{f.id} has no {' and no '.join(missing)}"
                )
            )
    return out


def unknown_resources(state: LedgerState, findings: Iterable[Finding]) -> list[ConsistencyWarning]:
    """R# ids cited in a finding's text or evidence that no resource has."""
    out = []
    for f in findings:
        refs = [f"R{int(m.group(1))}" for m in _RESOURCE_REF.finditer(f"{f.text}\n{f.evidence}")]
        for ref in dict.fromkeys(refs):
            if ref not in state.resources:
                out.append(
                    ConsistencyWarning(
                        "unknown-resource", f.id, f"{f.id} cites {ref}, which is not a resource"
                    )
                )
    return out


def missing_paths(findings: Iterable[Finding], workdir: Path) -> list[ConsistencyWarning]:
    """Paths cited in a finding's text or evidence that the working directory lacks."""
    index = PathIndex(workdir)
    out = []
    for f in findings:
        for cite in path_citations(f"{f.text}\n{f.evidence}", workdir):
            if not index.exists(cite.path):
                out.append(
                    ConsistencyWarning(
                        "missing-path",
                        f.id,
                        f"{f.id} cites `{cite.token}`, which does not exist in the working "
                        "directory",
                    )
                )
    return out


def changed_evidence(findings: Iterable[Finding], workdir: Path) -> list[ConsistencyWarning]:
    """Cited lines that changed (`stale`) or went (`missing`) since the finding was filed:
    its evidence no longer shows what it showed the members who checked it."""
    out = []
    for f in findings:
        for label, state in changed_spans(f.spans, workdir).items():
            why = "the cited lines changed" if state == "stale" else "the file is gone or shorter"
            out.append(
                ConsistencyWarning(
                    f"{state}-evidence",
                    f.id,
                    f"{f.id}'s evidence {label} is {state}: {why} since it was filed",
                )
            )
    return out


def mixed_concerns(clusters: Iterable[Cluster]) -> list[ConsistencyWarning]:
    out = []
    for c in clusters:
        if c.mixed:
            ids = ", ".join(c.ids)
            slugs = ", ".join(f"`{s}`" for s in c.concerns)
            out.append(
                ConsistencyWarning(
                    "mixed-concern",
                    ids,
                    f"cluster {ids} mixes concerns {slugs} through deltaOf links",
                )
            )
    return out


def check_findings(
    state: LedgerState, findings: list[Finding], clusters: list[Cluster], workdir: Path
) -> list[ConsistencyWarning]:
    """Every warning for a run: per finding in ledger order, then clusters, then the ledger."""
    ordered = sorted(findings, key=lambda f: f.seq)
    per_finding = [
        *missing_metadata(ordered),
        *unknown_resources(state, ordered),
        *missing_paths(ordered, workdir),
        *changed_evidence(ordered, workdir),
    ]
    rank = {f.id: i for i, f in enumerate(ordered)}
    per_finding.sort(key=lambda w: rank.get(w.subject, len(rank)))
    skipped = [ConsistencyWarning("skipped-record", "ledger", s) for s in state.skipped]
    return [*per_finding, *mixed_concerns(clusters), *skipped]
