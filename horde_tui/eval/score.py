"""Scoring by code: findings against planted defects, replies against reference answers.

A finding is matched to a defect by where its evidence (and text) points: a citation
`path:line` or `path:first-last` (read by the report's path grammar,
`store.pathcite.path_citations`) on the defect's file whose lines overlap the defect's
is a match. A citation of the defect's file with no line matches only when the finding
also uses one of the defect's words; a citation of the right file at other lines, or the
defect's words with no citation of its file, is no match. When a finding fits several
defects, the one whose words it uses wins, then one not yet found. Findings are taken in
ledger order and one defect counts once: a later finding of a defect already found is a
duplicate (a true finding that adds nothing to recall).

Figures: recall = defects found / defects planted; precision = findings that match a
defect (duplicates included) / findings filed; accepted recall counts only findings
ACCEPTANCE.json calls accepted; $ per true finding = cost / defects found.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from horde_tui.eval.taskset import Defect, Question, parse_number
from horde_tui.store.pathcite import path_citations


@dataclass(frozen=True)
class ScoredFinding:
    """What the scorer needs of one finding (read from the ledger)."""

    id: str
    concern: str
    text: str
    evidence: str
    accepted: bool = False


def same_file(cited: str, file: str) -> bool:
    """A cited path names the defect's file: equal, or one is the other's path tail."""
    return cited == file or cited.endswith("/" + file) or file.endswith("/" + cited)


def uses_words(finding: ScoredFinding, defect: Defect) -> bool:
    text = f"{finding.concern}\n{finding.text}\n{finding.evidence}".casefold()
    return any(word in text for word in defect.words)


def placement(finding: ScoredFinding, defect: Defect) -> str | None:
    """`line` (a citation overlaps the defect's lines), `file` (its file is cited with no
    line), or None (not cited, or cited only at other lines)."""
    bare = False
    for cite in path_citations(f"{finding.evidence}\n{finding.text}"):
        if not same_file(cite.path, defect.file):
            continue
        if cite.first is None:
            bare = True
        elif cite.first <= defect.last and (cite.last or cite.first) >= defect.first:
            return "line"
    return "file" if bare else None


@dataclass
class Match:
    """One finding's verdict: the defect it hit (None: a false finding) and how."""

    finding: str
    defect: str | None
    how: str = ""
    duplicate: bool = False
    accepted: bool = False


def match_findings(findings: Sequence[ScoredFinding], defects: Sequence[Defect]) -> list[Match]:
    """Each finding (in order) matched to at most one defect; one defect counts once."""
    found: set[str] = set()
    out = []
    for finding in findings:
        candidates = []
        for order, defect in enumerate(defects):
            where = placement(finding, defect)
            words = uses_words(finding, defect)
            if where == "line" or (where == "file" and words):
                how = f"{where}+words" if words else where
                candidates.append((not words, defect.id in found, order, defect.id, how))
        if not candidates:
            out.append(Match(finding.id, None, accepted=finding.accepted))
            continue
        _, seen, _, ident, how = min(candidates)
        found.add(ident)
        out.append(Match(finding.id, ident, how, duplicate=seen, accepted=finding.accepted))
    return out


@dataclass
class DefectScore:
    """The defect figures of one run."""

    planted: int
    findings: int
    found: int
    true_findings: int
    false_findings: int
    duplicates: int
    accepted_found: int
    recall: float
    precision: float | None
    accepted_recall: float
    matches: list[Match] = field(default_factory=list)


def score_defects(findings: Sequence[ScoredFinding], defects: Sequence[Defect]) -> DefectScore:
    matches = match_findings(findings, defects)
    hit = {m.defect for m in matches if m.defect}
    accepted = {m.defect for m in matches if m.defect and m.accepted}
    true = sum(1 for m in matches if m.defect)
    planted = len(defects)
    return DefectScore(
        planted=planted,
        findings=len(matches),
        found=len(hit),
        true_findings=true,
        false_findings=len(matches) - true,
        duplicates=sum(1 for m in matches if m.duplicate),
        accepted_found=len(accepted),
        recall=len(hit) / planted if planted else 0.0,
        precision=true / len(matches) if matches else None,
        accepted_recall=len(accepted) / planted if planted else 0.0,
        matches=matches,
    )


_REPLY_PREFIX = r"^[\s>*_`#-]*(?:\*\*)?{id}(?:\*\*)?\s*[:=.)]\s*(?P<reply>.+)$"


def reply_for(question: Question, answer_text: str) -> str | None:
    """The reply to `question` in an answer: the last `<id>: reply` line (the format
    the run's prompt asks for), markdown bullets and bold around the id allowed."""
    pattern = re.compile(_REPLY_PREFIX.format(id=re.escape(question.id)), re.I | re.M)
    replies = [m.group("reply").strip().strip("*`").strip() for m in pattern.finditer(answer_text)]
    return replies[-1] if replies else None


def grade(question: Question, reply: str | None) -> bool:
    """Whether `reply` is right under the question's grader."""
    if reply is None:
        return False
    if question.grader == "exact":
        return reply.strip() == question.answer.strip()
    if question.grader == "casefold":
        return " ".join(reply.split()).casefold() == " ".join(question.answer.split()).casefold()
    if question.grader == "regex":
        return re.search(question.answer, reply, re.I) is not None
    got, want = parse_number(reply), parse_number(question.answer)
    if got is None or want is None:
        return False
    if want == 0:
        return abs(got) <= question.tolerance
    return abs(got - want) <= question.tolerance * abs(want) + 1e-12


@dataclass
class AnswerGrade:
    question: str
    expected: str
    reply: str | None
    correct: bool


def grade_answers(questions: Sequence[Question], answer_text: str) -> list[AnswerGrade]:
    out = []
    for q in questions:
        reply = reply_for(q, answer_text)
        out.append(AnswerGrade(q.id, q.answer, reply, grade(q, reply)))
    return out


def per_true(cost: float | None, found: int) -> float | None:
    """$ per true finding (distinct defect found); None when unknown or nothing found."""
    if cost is None or found == 0:
        return None
    return cost / found


@dataclass(frozen=True)
class Spread:
    """Mean, standard deviation (0 for one value), min and max of one figure."""

    mean: float | None
    sd: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        known = [v for v in values if v is not None and math.isfinite(v)]
        if not known:
            return cls(None, None, None, None, 0)
        sd = statistics.stdev(known) if len(known) > 1 else 0.0
        return cls(statistics.fmean(known), sd, min(known), max(known), len(known))

    def as_json(self) -> dict[str, Any]:
        return asdict(self)
