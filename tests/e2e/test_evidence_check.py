"""Evidence checked by code: a quote must be on the lines it cites (issue 19, item 1).

Real files in the working directory, the real `horde` tool; the span records and the
finalize re-check (`span_state`) read the same files after they are edited or removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from horde_tui.protocol.evidence import span_state
from horde_tui.store import pathcite
from horde_tui.store.store import HordeStore

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


def run_editing_its_evidence(tmp_path: Path, helpers: dict[str, Any]) -> Any:
    """A real one-member run whose member files F1 quoting app.py:1, then rewrites that
    line from its own shell; `helpers` plays the synthesis and post-mortem. Its supervisor."""
    from support.plans import APP, horde, run_supervisor, settings

    from horde_tui.stubmodel import StubThread
    from horde_tui.stubmodel.agent import AgentPolicy
    from horde_tui.supervisor.setup import RunRequest

    (tmp_path / "app.py").write_text(APP)
    plans = {
        "member-1": [
            horde("idea", text="Check app.py for a hard-coded password"),
            horde("claim", id="$id"),
            horde(
                "finding",
                concern="secrets",
                concernDef="secrets in source",
                text="app.py hard-codes the password",
                evidence="app.py:1 `PASSWORD = 'hunter2'`",
                support="tested",
                importance="high",
                confidence="high",
            ),
            {"tool": "bash", "args": {"command": "sed -i 's/hunter2/from-env/' app.py"}},
            horde("done", id="$I", result="filed $F"),
            {"say": "Done."},
        ],
        **helpers,
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, allow_unverified=True)
        summary, sup, _ = run_supervisor(
            tmp_path, RunRequest("Review app.py", 1, verifier=False), cfg
        )
    assert summary.exit_code == 0, summary.diagnosis
    return sup


@pytest.mark.slow  # a whole real run: `pytest -m slow`
@pytest.mark.e2e
def test_evidence_edited_between_discovery_and_finalize_is_reported_stale(tmp_path: Path) -> None:
    """A real one-member run: the member files a finding quoting app.py:1, then its own
    shell rewrites that line. Finalize re-checks the span: REPORT.md warns that the
    evidence is stale and ACCEPTANCE marks it."""
    from support.plans import HELPERS

    sup = run_editing_its_evidence(tmp_path, HELPERS)
    store = HordeStore(tmp_path / ".horde", "reader")
    store.refresh()
    (span,) = store.state.findings["F1"].spans
    assert (span["path"], span["first"], span["quoted"]) == ("app.py", 1, True)
    report = (sup.run_dir / "REPORT.md").read_text()
    assert "F1's evidence app.py:1 is stale: the cited lines changed since it was filed" in report
    assert "· evidence app.py:1 stale" in (sup.run_dir / "ACCEPTANCE.md").read_text()
    accepted = json.loads((sup.run_dir / "ACCEPTANCE.json").read_text())
    assert [a.get("evidence") for a in accepted if a["target"] == "F1"] == [{"app.py:1": "stale"}]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab ", max_size=5), max_size=12),
    newline_at_end=st.booleans(),
    first=st.integers(1, 14),
    extra=st.integers(0, 3),
    chunk=st.sampled_from([1, 2, 3, 7, 64]),
)
def test_cited_lines_reads_what_a_whole_split_would(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    newline_at_end: bool,
    first: int,
    extra: int,
    chunk: int,
) -> None:
    """Counting a chunk at a time gives the lines a naive split gives, at any chunk edge."""
    text = "\n".join(lines) + ("\n" if newline_at_end and lines else "")
    file = tmp_path_factory.mktemp("cite") / "f.txt"
    file.write_text(text)
    last = first + extra
    have = text.split("\n")[:-1] if text.endswith("\n") else (text.split("\n") if text else [])
    expected = "\n".join(have[first - 1 : last]).encode() if len(have) >= last else None
    old = pathcite.CHUNK
    pathcite.CHUNK = chunk
    try:
        assert pathcite.cited_lines(file, first, last) == expected
    finally:
        pathcite.CHUNK = old


@pytest.mark.slow  # a whole real run: `pytest -m slow`
@pytest.mark.e2e
def test_generated_documents_are_checked_marked_and_listed_in_the_report(
    tmp_path: Path,
) -> None:
    """Issue 32: ids and `path:line` citations in DELIVERABLE.md, SUMMARY.md and
    POSTMORTEM.md are checked at finalize like finding evidence: an unknown F#/T#/R#/A#,
    a line the file does not have, a quote not on its line and a line changed since a
    finding cited it are marked where they stand and listed in REPORT.md."""
    helpers = {
        "synthesis": [
            {"say": "# Deliverable\n\nThe password is hard-coded (F1, app.py:1); see F7 and T9."}
        ],
        "postmortem": [
            {
                "say": "# Post-mortem\n\nR4 was never claimed; A2 neither. The login is at "
                "app.py:400 and app.py:4 `def logout(user):`; F1 held."
            }
        ],
    }
    sup = run_editing_its_evidence(tmp_path, helpers)
    deliverable = (sup.run_dir / "DELIVERABLE.md").read_text()
    assert "(F1, app.py:1 [check: the lines changed since F1 cited them]); " in deliverable
    assert (
        "see F7 [check: no such finding in the ledgers] and T9 [check: no such fact" in deliverable
    )
    postmortem = (sup.run_dir / "POSTMORTEM.md").read_text()
    assert "R4 [check: no such resource in the ledgers] was never claimed" in postmortem
    assert "A2 [check: no such artifact in the ledgers] neither" in postmortem
    assert "app.py:400 [check: app.py has fewer than 400 lines]" in postmortem
    assert "`def logout(user):` [check: the quoted code is not on those lines]" in postmortem
    assert "F1 held." in postmortem  # a known id is left alone
    summary_md = (sup.run_dir / "SUMMARY.md").read_text()
    assert "[check:" not in summary_md  # written by code from the ledgers: nothing to mark
    report = (sup.run_dir / "REPORT.md").read_text()
    listed = report.split("## Generated documents\n", 1)[1]
    for line in (
        "- DELIVERABLE.md: `app.py:1`: the lines changed since F1 cited them",
        "- DELIVERABLE.md: `F7`: no such finding in the ledgers",
        "- DELIVERABLE.md: `T9`: no such fact in the ledgers",
        "- POSTMORTEM.md: `R4`: no such resource in the ledgers",
        "- POSTMORTEM.md: `A2`: no such artifact in the ledgers",
        "- POSTMORTEM.md: `app.py:400`: app.py has fewer than 400 lines",
        "- POSTMORTEM.md: `app.py:4`: the quoted code is not on those lines",
    ):
        assert line in listed, listed
    assert listed.count("\n- ") == 7, listed


def test_checking_the_documents_twice_marks_and_lists_each_problem_once(
    auditor, tmp_path: Path
) -> None:
    """Finalize checks the documents once SUMMARY.md is written and again after the
    helpers: the second pass changes nothing, and a known id or a good line is not marked."""
    from horde_tui.supervisor.finalize import check_documents

    assert file_finding(auditor, "src/api/users.py:47 `cursor.execute(`").ok
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "REPORT.md").write_text("# Report\n\n## Consistency warnings\n\n_None._\n")
    (run_dir / "DELIVERABLE.md").write_text(
        "F1 holds (`src/api/users.py:47`); F2 and src/api/users.py:48 `return none` do not.\n"
    )
    state = auditor.state()
    check_documents(run_dir, state, auditor.workdir)
    once = [(run_dir / n).read_text() for n in ("DELIVERABLE.md", "REPORT.md")]
    check_documents(run_dir, state, auditor.workdir)
    assert [(run_dir / n).read_text() for n in ("DELIVERABLE.md", "REPORT.md")] == once
    assert once[0] == (
        "F1 holds (`src/api/users.py:47`); F2 [check: no such finding in the ledgers] and "
        "src/api/users.py:48 `return none` [check: the quoted code is not on those lines] "
        "do not.\n"
    )
    assert once[1].startswith("# Report\n\n## Consistency warnings\n\n_None._\n\n")
    assert once[1].count("## Generated documents") == 1
    assert once[1].endswith(
        "\n- DELIVERABLE.md: `F2`: no such finding in the ledgers\n"
        "- DELIVERABLE.md: `src/api/users.py:48`: the quoted code is not on those lines\n"
    )
