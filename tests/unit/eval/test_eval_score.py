"""The eval grader against hand-made finding sets whose recall and precision are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from horde_tui.eval.score import (
    ScoredFinding,
    Spread,
    grade,
    grade_answers,
    match_findings,
    per_true,
    reply_for,
    score_defects,
)
from horde_tui.eval.taskset import Defect, Question, TaskSetError, load_task, parse_number
from horde_tui.store.pathcite import path_citations

SQLI = Defect("sqli", "app/db.py", 12, 14, "sql-injection", ("injection", "concatenat"))
TRAVERSAL = Defect("traversal", "app/files.py", 30, 30, "path-traversal", ("traversal", ".."))
SECRET = Defect("secret", "settings.py", 3, 3, "hardcoded-secret", ("secret", "api key"))
DEFECTS = (SQLI, TRAVERSAL, SECRET)


def f(ident: str, evidence: str, text: str = "", concern: str = "x", accepted: bool = False):
    return ScoredFinding(ident, concern, text, evidence, accepted)


def test_two_true_one_false_one_duplicate_gives_known_recall_and_precision() -> None:
    findings = [
        f("F1", "app/db.py:13: cur.execute(q)", "query built by concatenation"),
        f("F2", "$ grep -n open app/files.py\napp/files.py:28-31: open(base + name)"),
        f("F3", "app/views.py:5", "XSS in the template"),  # nothing planted there
        f("F4", "app/db.py:12-12", "same injection again"),  # a duplicate of F1
    ]
    score = score_defects(findings, DEFECTS)
    assert [(m.finding, m.defect, m.duplicate) for m in score.matches] == [
        ("F1", "sqli", False),
        ("F2", "traversal", False),
        ("F3", None, False),
        ("F4", "sqli", True),
    ]
    assert (score.found, score.planted) == (2, 3)
    assert score.recall == pytest.approx(2 / 3)
    assert score.precision == pytest.approx(3 / 4)  # duplicates are true, not false
    assert (score.true_findings, score.false_findings, score.duplicates) == (3, 1, 1)


def test_right_file_wrong_line_is_not_a_match_even_with_the_words() -> None:
    score = score_defects([f("F1", "app/db.py:40", "SQL injection in the report query")], DEFECTS)
    assert score.matches[0].defect is None
    assert (score.recall, score.precision) == (0.0, 0.0)


def test_words_match_but_file_does_not_is_not_a_match() -> None:
    finding = f("F1", "app/other.py:13", "SQL injection: the query is built by concatenation")
    assert score_defects([finding], DEFECTS).matches[0].defect is None


def test_a_bare_file_citation_counts_only_with_the_defects_words() -> None:
    with_words = f("F1", "see settings.py", "the API key is committed")
    without = f("F2", "see settings.py", "settings are loaded twice")
    matches = match_findings([with_words, without], DEFECTS)
    assert [(m.defect, m.how) for m in matches] == [("secret", "file+words"), (None, "")]


def test_a_finding_counts_for_one_defect_and_the_words_choose_which() -> None:
    near = Defect("near", "app/db.py", 14, 16, "missing-limit", ("unbounded", "limit"))
    finding = f("F1", "app/db.py:12-16", "no LIMIT: an unbounded result set")
    score = score_defects([finding], (SQLI, near))
    assert [m.defect for m in score.matches] == ["near"]
    assert score.found == 1 and score.precision == 1.0


def test_one_defect_counts_once_however_many_findings_hit_it() -> None:
    findings = [f(f"F{n}", f"app/db.py:{12 + n % 3}", "injection") for n in range(5)]
    score = score_defects(findings, DEFECTS)
    assert (score.found, score.duplicates, score.recall) == (1, 4, pytest.approx(1 / 3))


def test_accepted_recall_counts_only_accepted_findings() -> None:
    findings = [
        f("F1", "app/db.py:13", "injection", accepted=False),
        f("F2", "app/files.py:30", "traversal", accepted=True),
        f("F3", "app/db.py:14", "injection again", accepted=True),
    ]
    score = score_defects(findings, DEFECTS)
    assert (score.found, score.accepted_found) == (2, 2)
    only_first = score_defects(findings[:1], DEFECTS)
    assert (only_first.found, only_first.accepted_found, only_first.accepted_recall) == (1, 0, 0)


def test_no_findings_scores_zero_recall_and_no_precision() -> None:
    score = score_defects([], DEFECTS)
    assert (score.recall, score.precision, score.findings) == (0.0, None, 0)


def test_citations_read_grep_lines_ranges_and_bare_paths() -> None:
    """The scorer reads citations with the report's one path grammar, lines included."""
    text = (
        "app.py:24: q = 'x' + name\nsee ./auth.py:14-16 and README.md, app.py:25 - 3 rows; "
        "db.py:7 – 9, lib/util.js#L3-L5, api.py:40:12 (line 40, column 12), "
        "https://example.com/x/y.py, /etc/passwd.conf"
    )
    got = [(c.path, c.first, c.last) for c in path_citations(text)]
    assert got == [
        ("app.py", 24, 24),
        ("auth.py", 14, 16),
        ("README.md", None, None),
        ("app.py", 25, 25),  # `app.py:25 - 3` is line 25, not a backwards range
        ("db.py", 7, 9),
        ("lib/util.js", 3, 5),
        ("api.py", 40, 40),
    ]


NUMERIC = Question("q1", "Current ratio?", "1.85", "numeric", 0.01)


@pytest.mark.parametrize(
    ("reply", "correct"),
    [
        ("1.85", True),
        ("about 1.86 (current assets / current liabilities)", True),  # 0.5% off
        ("1.87", False),  # 1.1% off: outside the 1% tolerance
        ("1.83", False),
        ("n/a", False),
        (None, False),
    ],
)
def test_numeric_answer_within_and_outside_the_tolerance(reply: str | None, correct: bool) -> None:
    assert grade(NUMERIC, reply) is correct


def test_exact_casefold_and_regex_graders() -> None:
    exact = Question("q1", "Ticker?", "ACME", "exact")
    folded = Question("q2", "Auditor?", "Smith & Co", "casefold")
    pattern = Question("q3", "Year?", r"\b2023\b", "regex")
    assert grade(exact, " ACME ") and not grade(exact, "acme")
    assert grade(folded, "smith  &  CO") and not grade(folded, "Smith and Co")
    assert grade(pattern, "fiscal 2023") and not grade(pattern, "20231")


def test_replies_are_read_from_id_lines_in_the_answer() -> None:
    questions = [NUMERIC, Question("q2", "Revenue?", "1,200", "numeric", 0.0)]
    answer = "Here are the replies.\n- **q1**: 1.85\n* Q2: $1,200 thousand\nq1: 1.9 (rechecked)"
    grades = grade_answers(questions, answer)
    assert [(g.question, g.reply, g.correct) for g in grades] == [
        ("q1", "1.9 (rechecked)", False),  # the last reply counts
        ("q2", "$1,200 thousand", True),
    ]
    assert reply_for(Question("q3", "?", "1", "exact"), answer) is None


def test_parse_number_reads_money_percent_and_parentheses() -> None:
    assert parse_number("$1,234.50") == 1234.5
    assert parse_number("(12)") == -12
    assert parse_number("margin 4.5%") == 4.5
    assert parse_number("none") is None


def test_dollars_per_true_finding_and_spread() -> None:
    assert per_true(0.30, 3) == pytest.approx(0.10)
    assert per_true(0.30, 0) is None and per_true(None, 2) is None
    spread = Spread.of([0.5, 1.0, None])
    assert (spread.mean, spread.low, spread.high, spread.n) == (0.75, 0.5, 1.0, 2)
    assert spread.sd == pytest.approx(0.353553, rel=1e-4)
    assert Spread.of([None]).mean is None


def _task(tmp_path: Path, truth: str) -> Path:
    task = tmp_path / "t1"
    (task / "material").mkdir(parents=True)
    (task / "material" / "a.py").write_text("x = 1\n")
    (task / "prompt.md").write_text("Review a.py")
    (task / "truth.toml").write_text(truth)
    return task


@pytest.mark.parametrize(
    ("truth", "rule"),
    [
        ('[[defect]]\nid="d"\nfile="a.py"\nlines=[3,1]\nconcern="c"\nwords=["w"]', "lines"),
        ('[[defect]]\nid="d"\nfile="b.py"\nlines=[1]\nconcern="c"\nwords=["w"]', "not a file"),
        ('[[defect]]\nid="d"\nfile="a.py"\nlines=[1]\nconcern="c"\nword=["w"]', "unknown key"),
        ('[[question]]\nid="q1"\nquestion="?"\nanswer="x"\ngrader="numeric"', "number"),
        ('[[question]]\nid="q1"\nquestion="?"\nanswer="1"\ngrader="fuzzy"', "grader"),
        ("", "truth is empty"),
    ],
)
def test_bad_truth_is_one_line_naming_the_rule(tmp_path: Path, truth: str, rule: str) -> None:
    with pytest.raises(TaskSetError, match=rule) as info:
        load_task(_task(tmp_path, truth))
    assert "\n" not in str(info.value)
