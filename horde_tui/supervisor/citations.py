"""Consistency checks for the report: metadata, R# citations, cited paths, mixed clusters,
and the ids and line citations of the documents generated at finalize.

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

from horde_tui.protocol.evidence import changed_spans, cite_state, span_label
from horde_tui.store.clusters import Cluster
from horde_tui.store.model import Finding
from horde_tui.store.pathcite import PathCitation, PathIndex, path_citations
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


DOCUMENTS = ("DELIVERABLE.md", "SUMMARY.md", "POSTMORTEM.md")
"""The generated documents whose ids and line citations finalize checks."""
_DOCUMENT_ID = re.compile(r"(?<![\w#-])([RFTAI]|#)([0-9]{1,18})\b(?!-\w)")
"""R#, F#, T#, A#, and an idea as `#N` or `IN` (the ledger keys ideas `#N`)."""
_KINDS = {"R": "resources", "F": "findings", "T": "facts", "A": "artifacts", "I": "ideas"}
MARK = " [check: "
"""How a checked problem is marked in the document, right after what it is about."""


@dataclass(frozen=True)
class DocumentProblem:
    """An id or a line citation of a generated document that the ledgers or the files
    do not bear out."""

    token: str
    """As written: `F7`, `app.py:40`."""
    why: str
    after: str
    """The text the mark goes after: the token, or the code quoted after it."""


def document_problems(
    text: str, state: LedgerState, workdir: Path, stale: dict[str, str]
) -> list[DocumentProblem]:
    """Unknown R#/F#/T#/A# and idea ids and line citations whose lines are not there, do
    not hold the quoted code, or changed since a finding cited them (`stale`, labels from
    `stale_spans`), in the order they first appear."""
    return [c for c in document_citations(text, state, workdir, stale) if c.why]


def document_citations(
    text: str, state: LedgerState, workdir: Path, stale: dict[str, str]
) -> list[DocumentProblem]:
    """Every id (once each) and every line citation of `text`, ids first, each with why
    it does not hold (`why` "" when it does): what an ask's answer records."""
    out: list[DocumentProblem] = []
    for m in _DOCUMENT_ID.finditer(text):
        if any(p.token == m.group(0) for p in out):
            continue
        kind = "I" if m.group(1) == "#" else m.group(1)
        ident = f"{'#' if kind == 'I' else kind}{int(m.group(2))}"
        table = _KINDS[kind]
        known = ident in getattr(state, table)
        why = "" if known else f"no such {table.removesuffix('s')} in the ledgers"
        out.append(DocumentProblem(m.group(0), why, m.group(0)))
    index = PathIndex(workdir)
    for cite in path_citations(text, workdir):
        if cite.first is None:
            continue
        why = _cite_problem(cite, workdir, index, stale)
        quoted = f"`{cite.quote}`" if cite.quote and f"`{cite.quote}`" in text else ""
        out.append(DocumentProblem(cite.token, why, quoted or cite.token))
    return out


def stale_spans(findings: Iterable[Finding], workdir: Path) -> dict[str, str]:
    """`path:lines` -> the first finding whose evidence there changed since it was filed."""
    out: dict[str, str] = {}
    for f in findings:
        for label in changed_spans(f.spans, workdir):
            out.setdefault(label, f.id)
    return out


def _cite_problem(
    cite: PathCitation, workdir: Path, index: PathIndex, stale: dict[str, str]
) -> str:
    state, file, _ = cite_state(cite, workdir, index)
    if state == "absent":
        return f"{cite.path} is not a file in the working directory"
    if state == "short":
        return f"{cite.path} has fewer than {cite.last} lines"
    if state == "misquoted":
        return "the quoted code is not on those lines"
    if file is not None and state == "ok":
        label = span_label(
            {"path": file.relative_to(workdir).as_posix(), "first": cite.first, "last": cite.last}
        )
        if label in stale:
            return f"the lines changed since {stale[label]} cited them"
    return ""


def mark_document(text: str, problems: Iterable[DocumentProblem]) -> str:
    """`text` with each problem marked after every place it stands (` [check: why]`, after
    a closing backtick); a place already marked is left as it is, so marking twice is
    marking once (a mark never repeats what it marks)."""
    for problem in problems:
        pattern = re.compile(rf"(?<![\w/.]){re.escape(problem.after)}`?(?![\w-]|:\w)")
        mark = f"{MARK}{problem.why}]"

        def marked(m: re.Match[str], mark: str = mark) -> str:
            if m.string.startswith(MARK, m.end()):
                return m.group(0)
            return m.group(0) + mark

        text = pattern.sub(marked, text)
    return text
