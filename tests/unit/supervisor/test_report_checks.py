"""Clustering, citation checks and run scoping behind REPORT.md, case by case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Horde

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.clusters import build_clusters
from horde_tui.store.model import Finding
from horde_tui.store.pathcite import path_citations
from horde_tui.supervisor.citations import missing_paths
from horde_tui.supervisor.report import render_report
from horde_tui.supervisor.summary import RunScope, current_findings


def _summary(run: str) -> RunSummary:
    return RunSummary(run, "finished", "all ideas closed", "ok", 0.0, 60.0, "openai/gpt-x")


def _finding_record(ident: str, concern: str, text: str, **extra: Any) -> dict[str, Any]:
    """A raw `finding.add`: what a hand-edited or older ledger may hold, past the tool's rules."""
    return {
        "op": "finding.add",
        "id": ident,
        "idea": "#1",
        "concern": concern,
        "text": text,
        "support": "derived",
        "importance": "low",
        "confidence": "low",
        **extra,
    }


def test_duplicate_text_and_cross_concern_delta_join_one_mixed_cluster(horde: Horde) -> None:
    horde.claimed("member-1", "check the search page")
    assert horde(
        "member-1",
        "finding",
        text="Reflected XSS in search",
        concern="xss",
        concernDef="cross-site scripting",
        support="tested",
        importance="high",
        confidence="high",
        evidence="templates/search.html:4",
    ).ok
    horde.inject(
        "member-2",
        _finding_record("F2", "csrf", "Search form lacks a CSRF token", deltaOf="F1"),
        _finding_record(
            "F3", "xss", "Reflected XSS in search via q", evidence="templates/search.html:4"
        ),
        _finding_record("F4", "xss", "Stored XSS in profile bio", evidence="app/profile.py:9"),
    )
    state = horde.state()
    clusters = build_clusters(state, current_findings(state, RunScope.of(state, "r1")))
    assert [(c.ids, c.concerns, c.mixed) for c in clusters] == [
        (("F1", "F2", "F3"), ("xss", "csrf"), True),
        (("F4",), ("xss",), False),
    ]
    report = render_report(state, _summary("r1"), horde.workdir)
    assert (
        "- concerns `xss`, `csrf` (mixed) · findings F1, F2, F3\n"
        "- review coverage: F1 unreviewed; F2 unreviewed (delta of F1); F3 unreviewed\n"
    ) in report
    assert "- cluster F1, F2, F3 mixes concerns `xss`, `csrf` through deltaOf links\n" in report
    assert "- F4 cites `app/profile.py:9`, which does not exist" in report


def test_a_delta_of_a_superseded_finding_joins_the_correction(horde: Horde) -> None:
    horde.claimed("member-1", "check the login form")
    for fields in (
        {"concern": "sqli", "concernDef": "SQL injection", "text": "SQLi in login"},
        {"deltaOf": "F1", "text": "also in the password field"},
        {"supersedes": "F1", "text": "SQLi in login, username only when quoted"},
    ):
        assert horde("member-1", "finding", importance="high", confidence="low", **fields).ok
    state = horde.state()
    clusters = build_clusters(state, current_findings(state, RunScope.of(state, "r1")))
    assert [c.ids for c in clusters] == [("F2", "F3")]


def test_path_citations_skip_urls_routes_templates_and_non_paths(tmp_path: Path) -> None:
    text = (
        "See src/app.py:12, ./lib/util.js#L3-L9 and `tests/test_x.py::test_y`; bare app.py, "
        "os.path, e.g. this; https://example.com/a/b.py example.com/x/y.js "
        "localhost:8000/api/z.json; /api/users and /api/users.json; out/<id>.json {name}.txt "
        "logs/gate-YYYY-MM-DD.jsonl runs/member-N.log and/or src/ **docs/README.md** "
        f"../outside.py Makefile:3 lib/Makefile:7 *.py {tmp_path}/pkg/mod.py:5 v1.2.3"
    )
    assert [(c.token, c.path) for c in path_citations(text, tmp_path)] == [
        ("src/app.py:12", "src/app.py"),
        ("./lib/util.js#L3-L9", "lib/util.js"),
        ("tests/test_x.py", "tests/test_x.py"),
        ("app.py", "app.py"),
        ("docs/README.md", "docs/README.md"),
        ("lib/Makefile:7", "lib/Makefile"),
        (f"{tmp_path}/pkg/mod.py:5", "pkg/mod.py"),
    ]


def test_missing_paths_accept_partial_paths_that_end_a_real_file(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "store").mkdir(parents=True)
    (tmp_path / "pkg" / "store" / "state.py").write_text("x\n")
    finding = Finding(
        id="F1",
        by="member-1",
        run="r1",
        seq=1,
        ts="",
        text="fold bug",
        evidence="store/state.py:1, state.py, pkg/store/state.py:1, pkg/nope.py, ghost.py",
    )
    assert [w.text for w in missing_paths([finding], tmp_path)] == [
        "F1 cites `pkg/nope.py`, which does not exist in the working directory",
        "F1 cites `ghost.py`, which does not exist in the working directory",
    ]


def test_an_earlier_run_reports_without_entries_of_later_runs(horde: Horde) -> None:
    horde.claimed("member-1", "check the cache headers")
    assert horde(
        "member-1",
        "finding",
        text="No Cache-Control on /account",
        concern="caching",
        concernDef="cache headers",
        importance="low",
        confidence="high",
    ).ok
    assert horde("member-2", "fact", run="r2", text="The CDN strips Vary headers").ok
    assert horde("member-2", "idea", run="r2", text="check the CDN config").ok
    state = horde.state()
    report = render_report(state, _summary("r1"), horde.workdir)
    assert "CDN" not in report
    assert "## Facts\n\n### This run\n\n_None._\n\n### Carried from earlier runs\n\n_None._\n" in (
        report
    )
    later = render_report(state, _summary("r2"), horde.workdir)
    assert "- F1 (run r1) unreviewed [low/high/speculative]: No Cache-Control on /account" in later
    assert "Review coverage: this run filed no current findings." in later
    assert "Ideas of this run: 1 (1 still open).\n- still open: #2\n" in later


def test_an_answers_citations_are_all_listed_with_their_check_ideas_included(
    horde: Horde,
) -> None:
    """`document_citations` (an ask's answer): every id once and every line citation, ok
    or not; ideas count as `#N` and `IN`, as the ledger keys them `#N`."""
    from horde_tui.supervisor.citations import document_citations, document_problems

    idea = horde.claimed("member-1", "check the login")
    (horde.workdir / "app.py").write_text("def login(user):\n    return True\n")
    text = (
        f"Idea {idea} (I1) led to nothing; #7 and I7 do not exist; F3 neither. "
        "See app.py:2 `return True`, app.py:1 `return False` and app.py:9; F3 again."
    )
    found = document_citations(text, horde.state(), horde.workdir, {})
    assert [(c.token, c.why) for c in found] == [
        ("#1", ""),
        ("I1", ""),
        ("#7", "no such idea in the ledgers"),
        ("I7", "no such idea in the ledgers"),
        ("F3", "no such finding in the ledgers"),
        ("app.py:2", ""),
        ("app.py:1", "the quoted code is not on those lines"),
        ("app.py:9", "app.py has fewer than 9 lines"),
    ]
    problems = document_problems(text, horde.state(), horde.workdir, {})
    assert problems == [c for c in found if c.why]
