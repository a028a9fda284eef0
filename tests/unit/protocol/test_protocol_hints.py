"""Nudges appended to tool results: the verifier's pending reviews, the solved nudge
(an answer waiting for a second member), the verification nudge (your critical findings
have no review), next to the idle nudge; and the verifier's role text."""

from __future__ import annotations

from horde_tui.common import prompts
from horde_tui.store.ledgers.findings import classify

REVIEW = {"verdict": "supports", "support": "tested", "checked": "ran it", "evidenceText": "ok"}


def two_findings(horde, importance: str = "medium") -> None:
    horde.claimed("member-1", "Audit app/db/query.py")
    for text, concern in (
        ("SQL injection in build_query()", "sql-injection"),
        ("Hard-coded password in settings.py", "secrets"),
    ):
        result = horde(
            "member-1",
            "finding",
            text=text,
            concern=concern,
            concernDef=f"{concern} problems",
            importance=importance,
        )
        assert result.ok, result.text


def test_the_verifier_role_text_names_review_not_verify() -> None:
    text = prompts.role_text("verifier")
    assert "`review target=F#" in text
    assert "checked=" in text and "unchecked=" in text
    assert "verify id=" not in text


def test_a_verifiers_review_result_ends_with_what_still_awaits_its_review(horde):
    two_findings(horde)

    first = horde("member-3", "review", role="verifier", target="F1", **REVIEW)
    second = horde("member-3", "review", role="verifier", target="F2", **REVIEW)

    assert first.ok and second.ok
    assert first.text.endswith(" Still awaiting your review: F2.")
    assert second.text.endswith(" Nothing else awaits your review: you may claim ideas now.")


def test_the_pending_list_follows_a_verifiers_board_post_and_reattest(horde):
    two_findings(horde)
    horde("member-3", "review", role="verifier", target="F1", **REVIEW)
    body = "SQL injection in build_query()\nThe id parameter is concatenated too."
    assert horde("member-1", "amend", id="F1", text=body, note="one more parameter").ok

    post = horde("member-3", "post", role="verifier", text="checked F1")
    reattest = horde(
        "member-3", "reattest", role="verifier", target="F1", evidenceText="same query built"
    )

    assert post.text.endswith(" Still awaiting your review: F1, F2.")
    assert reattest.ok, reattest.text
    assert reattest.text.endswith(" Still awaiting your review: F2.")


def test_the_claim_refusal_and_the_result_list_agree(horde):
    """One list: what the claim refusal names is what the last result said."""
    two_findings(horde)
    horde("member-1", "idea", text="Audit app/web/login.py")
    post = horde("member-3", "post", role="verifier", text="starting")

    refused = horde("member-3", "claim", role="verifier", id="#2")

    assert post.text.endswith(" Still awaiting your review: F1, F2.")
    assert refused.text.endswith("review first: F1, F2")


def test_a_legacy_verify_does_not_count_as_the_verifiers_review(horde):
    two_findings(horde)
    horde("member-1", "idea", text="Audit app/web/login.py")
    horde("member-3", "verify", role="verifier", id="F1", support="reproduced")
    horde("member-3", "review", role="verifier", target="F2", **REVIEW)

    refused = horde("member-3", "claim", role="verifier", id="#2")

    assert refused.text.endswith("review first: F1")


def test_regular_members_get_no_pending_list(horde):
    two_findings(horde)
    review = horde("member-2", "review", target="F1", **REVIEW)
    assert review.ok and "awaiting your review" not in review.text


def test_a_finding_verified_without_a_scoped_review_is_legacy(horde):
    two_findings(horde)
    horde("member-2", "verify", id="F1", support="reproduced", text="ran it")
    horde("member-1", "verify", id="F2", support="reproduced", text="my own rerun")
    state = horde.state()

    assert classify(state, state.findings["F1"]) == "legacy"
    assert classify(state, state.findings["F2"]) == "unreviewed"  # the reporter's own
    assert "status legacy" in (horde.root / "FINDINGS.md").read_text()

    horde("member-3", "review", target="F1", **REVIEW)
    assert classify(horde.state(), horde.state().findings["F1"]) == "full"


def test_amending_a_legacy_finding_leaves_it_unreviewed(horde):
    two_findings(horde)
    horde("member-2", "verify", id="F1", support="reproduced")
    horde("member-1", "amend", id="F1", text="SQL injection in build_query(), reworded", note="x")
    state = horde.state()
    assert classify(state, state.findings["F1"]) == "unreviewed"


SOLVED_NUDGE = "member-1's answer (round 1) awaits validation by a second member"


def test_closing_work_while_an_answer_waits_nudges_other_members_to_validate(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-1", "finding", text="SQL injection", concern="sqli", concernDef="sqli bugs")
    assert horde("member-1", "solved", text="SQL injection in F1", cites=["F1"]).ok
    horde.claimed("member-2", "Audit app/web/login.py")

    proposer = horde("member-1", "done", id="#1", result="filed F1")
    other = horde("member-2", "done", id="#2", result="nothing")
    post = horde("member-2", "post", text="done here")
    assert horde("member-2", "confirm-solved", text="checked F1").ok
    later = horde("member-2", "post", text="validated")

    assert SOLVED_NUDGE not in proposer.text
    assert SOLVED_NUDGE in other.text and "`confirm-solved`" in other.text
    assert SOLVED_NUDGE in post.text
    assert "awaits validation" not in later.text


def test_closing_work_with_unreviewed_critical_findings_nudges_for_a_review(horde):
    two_findings(horde, importance="critical")
    horde("member-2", "review", target="F2", **REVIEW)

    done = horde("member-1", "done", id="#1", result="filed F1, F2")
    reads = horde("member-1", "findings")

    assert "Your critical finding F1 has no review at its current revision" in done.text
    assert "F2" not in done.text.split("Your critical")[1]
    assert "kind=review-request target=F1" in done.text
    assert "no review at its current revision" not in reads.text


def test_high_findings_do_not_get_the_verification_nudge(horde):
    two_findings(horde, importance="high")
    done = horde("member-1", "done", id="#1", result="filed F1, F2")
    assert done.ok and "has no review" not in done.text and "have no review" not in done.text


def test_nudges_are_not_recorded_in_the_event_log(horde):
    """A nudge is guidance computed from the state; the receipt in events.jsonl is the fact."""
    two_findings(horde, importance="critical")
    done = horde("member-1", "done", id="#1", result="filed")
    assert "no review" in done.text
    outcome = [e for e in horde.events() if e.get("type") == "outcome"][-1]
    assert outcome["text"] == "ok #1 done."


def test_summary_coverage_and_cluster_rank_use_the_legacy_class(horde):
    from horde_tui.store.clusters import STATUS_ORDER
    from horde_tui.supervisor.summary import RunScope, coverage_sentence

    two_findings(horde)
    horde("member-2", "verify", id="F1", support="reproduced", text="ran it")
    state = horde.state()

    sentence = coverage_sentence(state, RunScope.of(state, "r1"))

    assert sentence == (
        "Review coverage of 2 current findings: 0 full-scope, 0 limited, 0 disputed, "
        "1 legacy (F1: a verify label, no scoped review); unreviewed: F2."
    )
    assert STATUS_ORDER.index("limited") < STATUS_ORDER.index("legacy")
    assert STATUS_ORDER.index("legacy") < STATUS_ORDER.index("unreviewed")


def test_a_legacy_findings_acceptance_stays_open_and_says_why(horde):
    from horde_tui.store.acceptance import acceptance

    two_findings(horde)
    horde("member-2", "verify", id="F1", support="reproduced", text="ran it")

    found = acceptance(horde.state(), "F1")

    assert (found.state, found.reason) == (
        "open",
        "legacy: verified by member-2 with no scoped review of r1 yet",
    )
