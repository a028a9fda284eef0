"""Evidence checked by code: a quote must be on the lines it cites (issue 19, item 1).

Real files in the working directory, the real `horde` tool; the span records and the
finalize re-check (`span_state`) read the same files after they are edited or removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from horde_tui.protocol.evidence import span_state

USERS = "\n".join(
    [f"# line {n}" for n in range(1, 47)]
    + [
        '    cursor.execute(f"SELECT * FROM users WHERE id = {uid}")',
        "    return cursor.fetchone()",
    ]
)
"""src/api/users.py: the injectable query is on line 47."""


@pytest.fixture
def auditor(horde):
    """member-1 holds #1; the working directory has src/api/users.py."""
    src = horde.workdir / "src" / "api"
    src.mkdir(parents=True)
    (src / "users.py").write_text(USERS + "\n")
    horde.claimed("member-1", "Audit src/api/users.py")
    horde.claimed("member-2", "Audit src/api/admin.py")
    return horde


def file_finding(horde, evidence: str, actor: str = "member-1"):
    return horde(
        actor,
        "finding",
        text="SQL injection in the user lookup",
        evidence=evidence,
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    )


def test_a_quote_on_another_line_is_refused_with_where_it_is(auditor) -> None:
    result = file_finding(auditor, 'src/api/users.py:42 `cursor.execute(f"SELECT * FROM users`')
    assert not result.ok
    assert result.text.startswith(
        "refused: quote not at src/api/users.py:42; found at :47; cite src/api/users.py:47 "
        "(evidence rule"
    ), result.text
    assert "F1" not in auditor.state().findings


def test_a_quote_that_is_nowhere_is_refused(auditor) -> None:
    result = file_finding(auditor, "src/api/users.py:47 `db.raw(query)`")
    assert not result.ok
    assert "quote not at src/api/users.py:47; it is nowhere in src/api/users.py" in result.text


def test_a_quote_on_its_lines_is_accepted_ignoring_whitespace_and_its_span_recorded(
    auditor,
) -> None:
    result = file_finding(
        auditor, 'src/api/users.py:46-48: cursor.execute( f"SELECT *  FROM users WHERE id'
    )
    assert result.ok, result.text
    (span,) = auditor.state().findings["F1"].spans
    assert (span["path"], span["first"], span["last"], span["quoted"]) == (
        "src/api/users.py",
        46,
        48,
        True,
    )
    assert span_state(span, auditor.workdir) == "ok"


def test_a_suffix_citation_is_checked_against_the_one_file_it_names(auditor) -> None:
    assert file_finding(auditor, "api/users.py:47 `cursor.execute(`").ok
    assert auditor.state().findings["F1"].spans[0]["path"] == "src/api/users.py"


def test_urls_command_output_and_unquoted_paths_are_not_checked(auditor) -> None:
    evidence = (
        "$ curl http://localhost:8000/api/users.py:3 `500 Internal Server Error`\n"
        "see docs/missing.py:9 and src/api/users.py:1"
    )
    result = file_finding(auditor, evidence)
    assert result.ok, result.text
    (span,) = auditor.state().findings["F1"].spans  # the existing file's line, unquoted
    assert (span["path"], span["first"], "quoted" in span) == ("src/api/users.py", 1, False)


def test_a_quote_of_a_file_that_is_not_there_is_refused(auditor) -> None:
    result = file_finding(auditor, "src/api/orders.py:3 `SELECT`")
    assert not result.ok
    assert "src/api/orders.py is not a file in the working directory" in result.text


def test_a_review_quoting_the_wrong_line_is_refused(auditor) -> None:
    assert file_finding(auditor, "src/api/users.py:47 `cursor.execute(`").ok
    review = auditor(
        "member-2",
        "review",
        target="F1",
        verdict="supports",
        support="reproduced",
        checked="the query",
        evidenceText="src/api/users.py:48 `cursor.execute(`",
    )
    assert not review.ok
    assert "quote not at src/api/users.py:48; found at :47" in review.text
    good = auditor(
        "member-2",
        "review",
        target="F1",
        verdict="supports",
        support="reproduced",
        checked="the query",
        evidenceText="src/api/users.py:47 `cursor.execute(`",
    )
    assert good.ok, good.text
    (review_id,) = auditor.state().reviews
    assert auditor.state().reviews[review_id].spans[0]["first"] == 47


def test_spans_go_stale_when_the_file_changes_and_missing_when_it_is_gone(auditor) -> None:
    assert file_finding(auditor, "src/api/users.py:47 `cursor.execute(`").ok
    (span,) = auditor.state().findings["F1"].spans
    users: Path = auditor.workdir / "src" / "api" / "users.py"
    users.write_text(USERS.replace("# line 3\n", "# line three\n") + "\n")
    assert span_state(span, auditor.workdir) == "ok", "a change elsewhere is not stale"
    users.write_text(USERS.replace("SELECT *", "SELECT id") + "\n")
    assert span_state(span, auditor.workdir) == "stale"
    users.unlink()
    assert span_state(span, auditor.workdir) == "missing"
