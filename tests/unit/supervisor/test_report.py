"""REPORT.md and SUMMARY.md from ledgers written through the real `horde` tool.

One scenario, two runs: r1 leaves a finding, a fact, a claim and a resource behind; r2 is
the reported run, with a full-scope reviewed finding, an unreviewed reproduced one with a
delta, a finding missing its metadata and citing an unknown R9 and a missing file, a
superseded finding, a disputed one, a provisional fact, a validated answer, a killed
verifier and a post after the clean stop. The assertions quote the report exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from conftest import Horde

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store.clusters import build_clusters
from horde_tui.store.ledgers.common import stamp
from horde_tui.store.members import MemberState
from horde_tui.store.state import LedgerState
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.report import render_report, render_summary
from horde_tui.supervisor.summary import RunScope, current_findings


@dataclass
class Scenario:
    horde: Horde
    state: LedgerState
    summary: RunSummary
    workdir: Path

    def report(self, **kwargs: Any) -> str:
        return render_report(self.state, self.summary, self.workdir, **kwargs)


def _ok(horde: Horde, actor: str, action: str, **fields: Any) -> str | None:
    result = horde(actor, action, run=fields.pop("run", "r2"), **fields)
    assert result.ok, result.text
    return result.id


def _review(horde: Horde, reviewer: str, vid: str, target: str, verdict: str) -> None:
    horde.inject(
        reviewer,
        {
            "op": "review.add",
            "id": vid,
            "target": target,
            "revision": 1,
            "verdict": verdict,
            "support": "tested",
            "checked": "the cited lines",
            "unchecked": "",
        },
        run="r2",
    )


def _run_r1(h: Horde) -> None:
    _ok(h, "member-1", "idea", run="r1", text="audit the session cookie flags")
    _ok(h, "member-1", "claim", run="r1", id="#1")
    _ok(
        h,
        "member-1",
        "finding",
        run="r1",
        text="Session cookie lacks the Secure flag",
        concern="cookie-flags",
        concernDef="cookie attributes",
        support="tested",
        importance="medium",
        confidence="high",
        evidence="src/app.py:2",
    )
    _ok(h, "member-1", "done", run="r1", id="#1", result="F1")
    _ok(h, "member-1", "fact", run="r1", text="The service listens on port 8080")
    _ok(h, "member-1", "assert", run="r1", text="Deploys run under gunicorn")
    _ok(h, "member-1", "resource", run="r1", name="fixtures-db", text="sqlite fixtures")


def _findings_r2(h: Horde) -> None:
    _ok(h, "member-1", "idea", text="check login SQL building")
    _ok(h, "member-1", "claim", id="#2")
    _ok(h, "member-2", "idea", text="check XSS in the search page")
    _ok(h, "member-2", "claim", id="#3")
    _ok(
        h,
        "member-1",
        "finding",
        text="SQL injection in the login query via username",
        concern="sqli",
        concernDef="SQL injection",
        support="reproduced",
        importance="critical",
        confidence="high",
        evidence="src/app.py:10",
    )
    _ok(
        h,
        "member-2",
        "finding",
        text="Reflected XSS in the search page q parameter",
        concern="xss",
        concernDef="cross-site scripting",
        support="tested",
        importance="high",
        confidence="medium",
        evidence="templates/search.html:4",
    )
    _ok(
        h,
        "member-3",
        "finding",
        text="The password field is injectable too",
        deltaOf="F2",
        support="derived",
        evidence="src/app.py:12",
    )
    _ok(
        h,
        "member-2",
        "finding",
        idea="#3",
        text="Search errors leak a stack trace",
        concern="info-leak",
        concernDef="information disclosure",
        evidence="see src/nope.py:3 via route /api/users; logs in logs/x-YYYY-MM-DD.log; "
        "harness R9 and R1",
    )
    for supersedes, text in ((None, "Login has no rate limit"), ("F6", "Login allows 1000/min")):
        fields = {"supersedes": supersedes} if supersedes else {"concern": "rate-limit"}
        _ok(
            h,
            "member-1",
            "finding",
            idea="#2",
            text=text,
            concernDef="missing rate limiting",
            support="derived",
            importance="low",
            confidence="low",
            **fields,
        )
    _review(h, "member-3", "V1", "F3", "supports")
    _review(h, "member-3", "V2", "F7", "refutes")


def _rest_r2(h: Horde) -> float:
    _ok(h, "member-2", "fact", text="The search page renders q without escaping (#3)")
    _ok(h, "member-1", "fact", text="The login handler is in src/app.py")
    _ok(h, "member-2", "assert", text="The login query is built by string formatting")
    _ok(h, "member-3", "confirm", id="C2")
    _ok(h, "member-3", "contest", id="C1", text="the Dockerfile runs uvicorn")
    _ok(h, "member-1", "resource", name="sqlmap-harness", cleanup="docker rm -f sqlmap")
    _ok(h, "member-2", "resource", name="sqlmap-harness")
    _ok(h, "member-3", "resource", name="fixtures-db")
    _ok(h, "member-1", "done", id="#2", result="F2 and F7")
    _ok(h, "member-3", "idea", text="check CSRF tokens on forms")
    _ok(h, "member-3", "claim", id="#4")
    _ok(h, "member-3", "drop", id="#4", reason="out of time")
    _ok(h, "member-1", "idea", text="check the admin panel")
    _ok(h, "member-3", "idea", text="check the FTP service")
    _ok(h, "member-3", "claim", id="#6")
    _ok(h, "member-3", "rule-out", id="#6", reason="no FTP service exists")
    _ok(h, "member-1", "solved", text="SQL injection F2 is the main issue", cites=["F2"])
    _ok(h, "member-2", "confirm-solved")
    _ok(h, "member-3", "post", text="halfway through the CSRF review")
    _ok(h, "member-2", "post", text="working on XSS")
    stop_clean_at = time.time()
    time.sleep(0.01)
    _ok(h, "member-2", "post", text="late: two more XSS vectors in search")
    return stop_clean_at


def _members() -> list[MemberState]:
    """Two completed members and a verifier killed mid-work with no known cost."""
    done = {"exit_cause": "completed"}
    return [
        MemberState("member-1", "member", turns=12, prompt_tokens=12000, completion_tokens=3400,
                    cost_usd=0.0421, final_message="Filed F2 and F7; answer validated.", **done),
        MemberState("member-2", "member", turns=9, prompt_tokens=9000, completion_tokens=2100,
                    cost_usd=0.031, final_message="XSS in search (F3).", **done),
        MemberState("member-3", "verifier", turns=4, prompt_tokens=3000, completion_tokens=800,
                    cost_usd=None, exit_cause="killed", resets=1, detail="clean-stop deadline"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    workdir = tmp_path_factory.mktemp("target")
    (workdir / "src").mkdir()
    (workdir / "src" / "app.py").write_text("line\n" * 20)
    (workdir / "templates").mkdir()
    (workdir / "templates" / "search.html").write_text("<p>\n" * 5)
    h = Horde(workdir)
    _run_r1(h)
    _findings_r2(h)
    stop_clean_at = _rest_r2(h)
    summary = RunSummary(
        run_id="r2",
        outcome="solved",
        diagnosis="member-1's answer was validated by member-2",
        canary="ok after a retry",
        started=1764450000.0,
        ended=1764450725.0,
        model="stub/horde-demo",
        demo=True,
        members=_members(),
        stop_clean_at=stop_clean_at,
    )
    return Scenario(h, h.state("parent"), summary, workdir)


def _section(report: str, title: str) -> str:
    """The body of `## title`, up to the next `## ` heading."""
    start = report.index(f"\n## {title}\n") + len(title) + 5
    end = report.find("\n## ", start)
    return report[start : end if end != -1 else len(report)].strip()


def test_clusters_rank_review_status_first_and_deltas_join_their_parent(
    scenario: Scenario,
) -> None:
    state = scenario.state
    clusters = build_clusters(state, current_findings(state, RunScope.of(state, "r2")))
    assert [(c.ids, c.status, c.support, c.members) for c in clusters] == [
        (("F3",), "full", "tested", ("member-2",)),
        (("F2", "F4"), "unreviewed", "reproduced", ("member-1", "member-3")),
        (("F5",), "unreviewed", "speculative", ("member-2",)),
        (("F7",), "disputed", "derived", ("member-1",)),
    ]


def test_header_says_outcome_canary_and_demo_model(scenario: Scenario) -> None:
    report = scenario.report()
    assert report.startswith(
        "# Run r2 report: solved\n\n"
        "Diagnosis: member-1's answer was validated by member-2\n\n"
        "- Outcome: **solved** (exit code 3)\n"
        "- Canary: ok after a retry\n"
        "- Model: demo model (scripted, not a real LLM), `stub/horde-demo`\n"
        "- Time: 2025-11-29 21:00:00 UTC to 2025-11-29 21:12:05 UTC (12m 05s)\n"
    )
    real = RunSummary("r2", "finished", "done", "ok", 0.0, 1.0, "anthropic/claude-x")
    assert "- Model: `anthropic/claude-x`\n" in render_report(
        scenario.state, real, scenario.workdir
    )


def test_members_table_marks_partial_unknown_cost_and_reconstructs_killed_summary(
    scenario: Scenario,
) -> None:
    members = _section(scenario.report(), "Members")
    assert "| member-3 | verifier | killed, partial | 4 | 3,000 | 800 | unknown | 1 |" in members
    assert "| member-1 | member | completed | 12 | 12,000 | 3,400 | $0.0421 | 0 |" in members
    assert "| total | | | 25 | 24,000 | 6,300 | unknown | 1 |" in members
    post = next(p for p in scenario.state.posts if p.by == "member-3")
    assert (
        f"- member-3 (killed, partial; clean-stop deadline): reconstructed from its last board "
        f"post ({stamp(post.ts)}): halfway through the CSRF review"
    ) in members
    assert "- member-1 (completed): Filed F2 and F7; answer validated." in members


def test_a_member_stopped_at_its_turn_cap_ends_with_turns_and_is_not_partial(
    scenario: Scenario,
) -> None:
    capped = MemberState(
        "member-2",
        "member",
        turns=40,
        prompt_tokens=1000,
        completion_tokens=200,
        cost_usd=0.001,
        exit_cause="turns",
        detail="turn cap of 40 reached; the model was still calling tools",
        final_message="Answered Q1.",
    )
    summary = replace(scenario.summary, members=[capped])
    members = _section(render_report(scenario.state, summary, scenario.workdir), "Members")
    assert "| member-2 | member | turns | 40 | 1,000 | 200 | $0.0010 | 0 |" in members
    assert (
        "- member-2 (turns; turn cap of 40 reached; the model was still calling tools): "
        "Answered Q1."
    ) in members
    assert "| member-2 | member | turns | 40 |" in render_summary(scenario.state, summary)


def test_findings_are_ranked_clusters_with_review_coverage(scenario: Scenario) -> None:
    findings = _section(scenario.report(), "Findings")
    assert findings == (
        "4 distinct clusters from 5 current findings of this run, best first (review status, "
        "support, importance, independent members, confidence).\n\n"
        "### 1. F3: Reflected XSS in the search page q parameter\n\n"
        "- full · tested · high importance · medium confidence · 1 independent member "
        "(member-2)\n"
        "- concern `xss` · findings F3\n"
        "- review coverage: F3 full [V1 supports by member-3]\n\n"
        "### 2. F2: SQL injection in the login query via username\n\n"
        "- unreviewed · reproduced · critical importance · high confidence · 2 independent "
        "members (member-1, member-3)\n"
        "- concern `sqli` · findings F2, F4\n"
        "- review coverage: F2 unreviewed; F4 unreviewed (delta of F2)\n\n"
        "### 3. F5: Search errors leak a stack trace\n\n"
        "- unreviewed · speculative · no importance · no confidence · 1 independent member "
        "(member-2)\n"
        "- concern `info-leak` · findings F5\n"
        "- review coverage: F5 unreviewed\n\n"
        "### 4. F7: Login allows 1000/min\n\n"
        "- disputed · derived · low importance · low confidence · 1 independent member "
        "(member-1)\n"
        "- concern `rate-limit` · findings F7\n"
        "- review coverage: F7 disputed [V2 refutes by member-3]"
    )


def test_acceptance_groups_this_runs_findings_at_their_current_revisions(
    scenario: Scenario,
) -> None:
    assert _section(scenario.report(), "Acceptance") == (
        "This run's findings and artifacts (6) at their current revisions, as ACCEPTANCE.md "
        "froze them: 1 accepted, 0 accepted with limits, 3 open, 1 refuted, 1 superseded.\n\n"
        "### Accepted\n\n- F3 r1 accepted (V1)\n\n"
        "### Accepted with limits\n\n_None._\n\n"
        "### Open\n\n"
        "- F2 r1 open: no qualifying review of r1 yet\n"
        "- F4 r1 open: no qualifying review of r1 yet\n"
        "- F5 r1 open: no qualifying review of r1 yet\n\n"
        "### Refuted\n\n- F7 r1 open (V2): refuted by V2; no supporting review\n\n"
        "### Superseded\n\n- F6 r1 superseded: superseded by F7"
    )


def test_acceptance_names_artifacts_at_their_revision_with_limits_and_refutations(
    tmp_path: Path,
) -> None:
    h = Horde(tmp_path)
    for n in (1, 2):
        _ok(h, f"member-{n}", "idea", run="r1", text=f"audit module {n} of app/")
    (tmp_path / "check.sh").write_text("echo BROKEN\n")
    _ok(h, "member-1", "artifact", run="r1", path="check.sh", criteria="prints OK")
    (tmp_path / "check.sh").write_text("echo OK\n")
    _ok(h, "member-1", "artifact", run="r1", path="check.sh", text="prints OK now")
    (tmp_path / "lab.sh").write_text("echo lab\n")
    _ok(h, "member-2", "artifact", run="r1", path="lab.sh", criteria="starts the lab")
    review = {"support": "tested", "checked": "ran it", "evidenceText": "ran it"}
    _ok(
        h,
        "member-2",
        "review",
        run="r1",
        target="A1",
        verdict="supports",
        limits="Linux only",
        **review,
    )
    _ok(h, "member-1", "review", run="r1", target="A2", verdict="refutes", **review)
    state = h.state("parent")
    summary = RunSummary("r1", "finished", "done", "ok", 0.0, 1.0, "m")

    section = _section(render_report(state, summary, tmp_path), "Acceptance")

    assert section == (
        "This run's findings and artifacts (2) at their current revisions, as ACCEPTANCE.md "
        "froze them: 0 accepted, 1 accepted with limits, 0 open, 1 refuted, 0 superseded.\n\n"
        "### Accepted\n\n_None._\n\n"
        "### Accepted with limits\n\n"
        "- A1 r2 accepted with limits (V1): r2 reviewed full-scope; limits: V1 Linux only\n\n"
        "### Open\n\n_None._\n\n"
        "### Refuted\n\n- A2 r1 blocked by Q1\n\n"
        "### Superseded\n\n_None._"
    )


def test_superseded_and_carried_findings_have_their_own_sections(scenario: Scenario) -> None:
    report = scenario.report()
    assert _section(report, "Superseded findings") == (
        "- F6 (by member-1) superseded by F7: Login has no rate limit"
    )
    assert _section(report, "Findings carried from earlier runs") == (
        "Current findings of earlier runs, for context; not this run's work.\n\n"
        "- F1 (run r1) unreviewed [medium/high/tested]: Session cookie lacks the Secure flag"
    )


def test_claims_facts_and_resources_split_this_run_from_carried(scenario: Scenario) -> None:
    report = scenario.report()
    assert _section(report, "Claims") == (
        "### This run\n\n"
        "- C2 **confirmed** The login query is built by string formatting (by member-2; "
        "confirmed by member-3)\n\n"
        "### Carried from earlier runs\n\n"
        "- C1 **contested** Deploys run under gunicorn (by member-1, run r1; contested by "
        "member-3; this run: contest by member-3)"
    )
    assert _section(report, "Facts") == (
        "### This run\n\n"
        "- T2 The search page renders q without escaping (#3) (by member-2) "
        "**provisional on #3**\n"
        "- T3 The login handler is in src/app.py (by member-1)\n\n"
        "### Carried from earlier runs\n\n"
        "- T1 The service listens on port 8080 (by member-1, run r1)"
    )
    assert _section(report, "Resources") == (
        "### This run\n\n"
        "- R2 `sqlmap-harness`: owner member-1; reused by member-2; cleanup "
        "`docker rm -f sqlmap`: not run\n\n"
        "### Carried from earlier runs\n\n"
        "- R1 `fixtures-db`: owner member-1 (run r1); reused by member-3"
    )


def test_cleanup_results_are_reported_when_finalize_ran_them(scenario: Scenario) -> None:
    report = scenario.report(cleanups={"R2": "ok (exit 0)"})
    assert "cleanup `docker rm -f sqlmap`: ok (exit 0)" in report


def test_coverage_lists_ideas_answer_and_unreviewed_findings(scenario: Scenario) -> None:
    assert _section(scenario.report(), "Coverage") == (
        "Ideas of this run: 5 (1 done, 1 ruled out, 1 released, 1 still claimed, "
        "1 still open).\n"
        "- done: #2 by member-1: F2 and F7\n"
        "- ruled out: #6 by member-3: no FTP service exists\n"
        "- released: #4 (dropped by member-3)\n"
        "- still claimed: #3 by member-2\n"
        "- still open: #5\n\n"
        "Answer (round 1, by member-1): validated by member-2. Cites F2. "
        "SQL injection F2 is the main issue\n\n"
        "Review coverage of 5 current findings: 1 full-scope (F3), 0 limited, "
        "1 disputed (F7); unreviewed: F2, F4, F5."
    )


def test_late_posts_are_those_after_the_clean_stop(scenario: Scenario) -> None:
    late = _section(scenario.report(), "Late board posts")
    post = scenario.state.posts[-1]
    assert late == f"- {stamp(post.ts)} **member-2**: late: two more XSS vectors in search"
    no_stop = RunSummary("r2", "finished", "", "ok", 0.0, 1.0, "m", members=_members())
    report = render_report(scenario.state, no_stop, scenario.workdir)
    assert _section(report, "Late board posts") == "No clean stop, so no late posts."


def test_consistency_warnings_name_metadata_unknown_resource_and_missing_path(
    scenario: Scenario,
) -> None:
    assert _section(scenario.report(), "Consistency warnings") == (
        "- F5 has no importance and no confidence\n"
        "- F5 cites R9, which is not a resource\n"
        "- F5 cites `src/nope.py:3`, which does not exist in the working directory"
    )


def test_report_is_deterministic_and_equal_from_a_fresh_fold(scenario: Scenario) -> None:
    first = scenario.report()
    assert scenario.report() == first
    fresh = HordeStore(scenario.horde.root, "reader")
    fresh.refresh()
    assert render_report(fresh.state, scenario.summary, scenario.workdir) == first


def test_summary_has_usage_per_member_totals_and_coverage(scenario: Scenario) -> None:
    text = render_summary(scenario.state, scenario.summary)
    assert text.startswith("# Run r2 summary\n\n- Outcome: **solved** (exit code 3)\n")
    assert "- Model: demo model (scripted, not a real LLM), `stub/horde-demo`\n" in text
    assert "| member-2 | member | completed | 9 | 9,000 | 2,100 | $0.0310 | 0 |" in text
    assert "| total | | | 25 | 24,000 | 6,300 | unknown | 1 |" in text
    assert text.endswith(
        "## Coverage\n\nReview coverage of 5 current findings: 1 full-scope (F3), 0 limited, "
        "1 disputed (F7); unreviewed: F2, F4, F5.\n"
    )
    known = [m for m in scenario.summary.members if m.cost_usd is not None]
    summary = RunSummary("r2", "finished", "", "ok", 0.0, 1.0, "m", members=known)
    assert "| total | | | 21 | 21,000 | 5,500 | $0.0731 | 0 |" in render_summary(
        scenario.state, summary
    )


def test_the_answer_line_names_open_requests_about_the_answer(tmp_path: Path) -> None:
    h = Horde(tmp_path)
    _ok(h, "member-1", "idea", run="r1", text="check login SQL building")
    _ok(h, "member-1", "claim", run="r1", id="#1")
    _ok(h, "member-2", "idea", run="r1", text="check the search page")
    _ok(
        h,
        "member-1",
        "finding",
        run="r1",
        text="SQL injection in login",
        concern="sqli",
        concernDef="SQL injection",
        evidence="src/app.py:10",
    )
    _ok(h, "member-1", "solved", run="r1", text="Injectable (F1)", cites="F1")
    _ok(
        h,
        "member-2",
        "message",
        run="r1",
        to="member-1",
        kind="blocker",
        target="answer",
        text="F1 does not cover the admin login",
    )
    _ok(
        h,
        "member-2",
        "message",
        run="r1",
        to="member-1",
        kind="question",
        target="answer",
        text="Which release?",
    )
    _ok(h, "member-1", "respond", run="r1", id="Q2", text="1.4")
    _ok(h, "member-2", "resolve", run="r1", id="Q2", text="thanks")
    summary = RunSummary("r1", "solved-unvalidated", "not validated", "ok", 0.0, 1.0, "m")

    coverage = _section(render_report(h.state("parent"), summary, tmp_path), "Coverage")

    assert (
        "Answer (round 1, by member-1): proposed, never validated; open requests about it: "
        "Q1 blocker from member-2 to member-1 (open). Cites F1. Injectable (F1)"
    ) in coverage
