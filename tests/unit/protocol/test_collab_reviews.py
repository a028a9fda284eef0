"""Reviews: revision-pinned scope, verdicts, evidence, reattest, and acceptance."""

from __future__ import annotations

import json

import pytest

from horde_tui.store.acceptance import (
    acceptance,
    acceptance_all,
    awaiting_review,
    prior_reviewers,
)
from horde_tui.store.ledgers.threads import awaiting_resolution, open_threads_to

TEXT = "SQL injection in build_query() via the name parameter"


@pytest.fixture
def crew(horde):
    """member-1 filed F1 and published runnable A1 and document A2; member-2/3 are known."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-2", "idea", text="Audit app/web/login.py")
    horde("member-3", "idea", text="Audit app/api/search.py")
    assert horde(
        "member-1",
        "finding",
        text=TEXT,
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    ).ok
    (horde.workdir / "poc.py").write_text("print('poc')\n")
    (horde.workdir / "notes.md").write_text("# Notes\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints poc").id == "A1"
    assert horde("member-1", "artifact", path="notes.md", criteria="cites sources").id == "A2"
    return horde


def review(horde, actor="member-2", target="A1", **extra):
    fields = {
        "target": target,
        "verdict": "supports",
        "support": "tested",
        "checked": "the whole claim",
        "evidence": "ran it: output matches",
    }
    return horde(actor, "review", **{**fields, **extra})


# -- revision pinning --------------------------------------------------------------------


def test_a_review_pins_the_current_revision_by_default_and_says_so(crew):
    result = review(crew)

    assert (result.ok, result.id, result.text) == (
        True,
        "V1",
        "ok V1 supports A1 r1 (pinned r1) · counts toward acceptance",
    )
    v = crew.state().reviews["V1"]
    assert (v.target, v.revision, v.by, v.checked, v.unchecked) == (
        "A1",
        1,
        "member-2",
        "the whole claim",
        "",
    )


def test_a_review_of_an_earlier_revision_stays_pinned_to_it_and_does_not_accept(crew):
    crew("member-1", "amend", id="F1", text=TEXT + "\nAlso via sort.", note="second vector")

    result = review(crew, target="F1", revision="r1")

    assert result.text == (
        "ok V1 supports F1 r1 (pinned r1) · does not accept it on its own (r2 is current)"
    )
    assert acceptance(crew.state(), "F1").label == "open"


def test_the_owner_may_not_review_its_own_work(crew):
    result = review(crew, actor="member-1")

    assert result.text.startswith("refused: A1 is your own (reviews rule: the owner may not")
    assert crew.state().reviews == {}


# -- support levels per kind -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "support", "label"),
    [
        ("A1", "tested", "accepted"),
        ("A1", "reproduced", "accepted"),
        ("A1", "sourced", "open"),
        ("A1", "derived", "open"),
        ("A2", "sourced", "accepted"),
        ("A2", "derived", "accepted"),
        ("F1", "sourced", "accepted"),
    ],
)
def test_the_support_a_full_scope_review_needs_depends_on_the_kind(crew, target, support, label):
    review(crew, target=target, support=support)

    assert acceptance(crew.state(), target).label == label


def test_a_weak_review_of_a_runnable_says_what_it_needs(crew):
    result = review(crew, support="sourced")

    assert result.text.endswith(
        "does not accept it on its own (a runnable needs tested or reproduced)"
    )
    acc = acceptance(crew.state(), "A1")
    assert (acc.state, acc.deciding, acc.reason) == (
        "open",
        ("V1",),
        "V1 is sourced; a runnable artifact needs a full-scope tested or reproduced review",
    )


# -- scope: unchecked and limits ----------------------------------------------------------------


def test_unchecked_keeps_acceptance_open_naming_the_review_and_the_gap(crew):
    review(crew, unchecked="the error path")

    acc = acceptance(crew.state(), "A1")
    assert (acc.state, acc.deciding, acc.unchecked) == (
        "open",
        ("V1",),
        (("V1", "the error path"),),
    )
    assert acc.reason == "V1 left unchecked: the error path"


def test_unchecked_none_means_a_full_scope_review(crew):
    review(crew, unchecked="None.")

    assert crew.state().reviews["V1"].unchecked == ""
    assert acceptance(crew.state(), "A1").label == "accepted"


def test_limits_are_recorded_as_accepted_with_limits_never_as_blockers(crew):
    review(crew, limits="not tried on Windows")

    acc = acceptance(crew.state(), "A1")
    assert (acc.label, acc.deciding, acc.blockers, acc.limits) == (
        "accepted with limits",
        ("V1",),
        (),
        (("V1", "not tried on Windows"),),
    )


def test_another_members_full_scope_review_settles_a_partial_one(crew):
    review(crew, verdict="partially-supports", unchecked="the error path")
    review(crew, actor="member-3")

    acc = acceptance(crew.state(), "A1")
    assert (acc.label, acc.deciding, acc.unchecked) == (
        "accepted",
        ("V2",),
        (("V1", "the error path"),),
    )


# -- verdicts --------------------------------------------------------------------------------------


def test_partially_supports_must_name_what_it_left_unchecked(crew):
    result = review(crew, verdict="partially-supports")

    assert result.text.startswith(
        "refused: a partially-supports verdict must name what it left `unchecked`"
    )


def test_partially_supports_opens_no_challenge(crew):
    review(crew, verdict="partially-supports", unchecked="the error path")

    assert crew.state().threads == {}


def test_only_refutes_opens_a_challenge_to_the_owner(crew):
    result = review(crew, verdict="refutes", evidence="it printed nothing")

    assert result.text == (
        "ok V1 refutes A1 r1 (pinned r1) · does not accept it on its own (verdict refutes) · "
        "Q1 challenge opened to member-1"
    )
    t = crew.state().threads["Q1"]
    assert (t.kind, t.by, t.to, t.target, t.target_revision, t.review) == (
        "challenge",
        "member-2",
        "member-1",
        "A1",
        1,
        "V1",
    )
    assert acceptance(crew.state(), "A1").label == "blocked by Q1"


def test_a_second_refutation_by_the_same_reviewer_reuses_its_open_challenge(crew):
    review(crew, verdict="refutes")

    again = review(crew, verdict="refutes", evidence="still nothing")

    assert "challenge opened" not in again.text
    assert list(crew.state().threads) == ["Q1"]


# -- evidence --------------------------------------------------------------------------------------


def test_evidence_text_attaches_and_reviews_in_one_call(crew):
    result = review(crew, evidence="", evidenceText="$ python poc.py\npoc")

    assert (
        result.text == "ok V1 supports A1 r1 (pinned r1) · E15 attached · counts toward acceptance"
    )
    state = crew.state()
    assert state.reviews["V1"].evidence_id == "E15"
    ev = state.evidence["r1/E15"]
    assert (ev.target, ev.relation, ev.review, ev.text) == (
        "A1",
        "supports",
        "V1",
        "$ python poc.py\npoc",
    )
    full = json.loads(crew("member-3", "inspect", target="E15").text)
    assert full["params"]["evidenceText"] == "$ python poc.py\npoc"


def test_a_review_without_evidence_is_refused(crew):
    result = review(crew, evidence="")

    assert result.text.startswith("refused: a review without evidence (reviews rule")


def test_attach_records_evidence_under_the_event_that_carried_it(crew):
    result = crew("member-3", "attach", target="F1", relation="contradicts", text="sort is typed")

    assert (result.ok, result.id) == (True, "E15")
    assert result.text == (
        "ok E15 attached to F1 (contradicts); `inspect target=E15` shows it in full"
    )
    assert "sort is typed" not in result.text
    ev = crew.state().evidence["r1/E15"]
    assert (ev.by, ev.target, ev.relation) == ("member-3", "F1", "contradicts")


def test_a_review_may_cite_attached_evidence_by_id(crew):
    crew("member-2", "attach", target="A1", relation="supports", text="transcript ...")

    result = review(crew, evidence="see E15")

    assert result.ok


# -- reattest --------------------------------------------------------------------------------------


def test_reattest_carries_a_review_to_an_amended_finding_with_the_same_claim_line(crew):
    review(crew, target="F1", limits="MySQL only")
    crew("member-1", "amend", id="F1", text=TEXT + "\nFix: use bound parameters.", note="fix")

    result = crew("member-2", "reattest", target="F1", evidence="claim and query.py:42 unchanged")

    assert result.text == (
        "ok V2 supports F1 r2 (pinned r2) · counts toward acceptance (limits recorded) · "
        "carries V1 (r1) forward"
    )
    v2 = crew.state().reviews["V2"]
    assert (v2.revision, v2.reattests, v2.limits, v2.checked) == (
        2,
        "V1",
        "MySQL only",
        "the whole claim",
    )
    assert acceptance(crew.state(), "F1").label == "accepted with limits"


def test_reattest_is_refused_across_a_changed_claim_line(crew):
    review(crew, target="F1")
    crew("member-1", "amend", id="F1", text="SQL injection via sort", note="different vector")

    result = crew("member-2", "reattest", target="F1", evidence="unchanged")

    assert result.text.startswith("refused: F1's claim line changed since r1 (reattest rule")


def test_reattest_is_refused_from_a_revision_no_amend_started_from(crew):
    crew.inject(
        "member-2",
        {"op": "review.add", "id": "V1", "target": "F1", "revision": 0, "verdict": "supports"},
    )  # a hand-written V# pinned to a revision the finding never had

    result = crew("member-2", "reattest", id="V1", evidence="unchanged")

    assert result.text.startswith("refused: F1 r0 is a revision no amend started from")


@pytest.mark.parametrize(
    ("change", "name"),
    [({"criteria": "cites primary sources"}, "criteria"), ({"artifactKind": "runnable"}, "kind")],
)
def test_reattest_is_refused_across_a_changed_artifact_criteria_or_kind(crew, change, name):
    review(crew, target="A2", support="sourced")
    (crew.workdir / "notes.md").write_text("# Notes\n\nmore\n")
    assert crew("member-1", "artifact", path="notes.md", **change).ok

    result = crew("member-2", "reattest", target="A2", evidence="unchanged")

    assert result.text == (
        f"refused: A2's {name} changed at r2 (reattest rule: a changed {name} needs a fresh "
        "check); review r2 afresh"
    )


def test_reattest_carries_an_artifact_review_across_new_bytes_with_the_same_criteria(crew):
    review(crew, target="A2", support="sourced")
    (crew.workdir / "notes.md").write_text("# Notes\n\ntypo fixed\n")
    crew("member-1", "artifact", path="notes.md")

    result = crew("member-2", "reattest", target="A2", evidenceText="diff is one typo")

    assert (result.ok, result.id) == (True, "V2")
    assert acceptance(crew.state(), "A2").label == "accepted"


def test_reattest_of_a_review_already_at_the_current_revision_is_refused(crew):
    review(crew)

    result = crew("member-2", "reattest", target="A1", evidence="unchanged")

    assert result.text.startswith("refused: V1 already pins A1's current revision r1")


def test_reattest_of_a_refutation_is_refused(crew):
    review(crew, verdict="refutes")
    (crew.workdir / "poc.py").write_text("print('poc!')\n")
    crew("member-1", "artifact", path="poc.py")

    result = crew("member-2", "reattest", target="A1", evidence="unchanged")

    assert result.text.startswith("refused: V1 refutes A1; a refutation is not carried forward")


# -- acceptance ------------------------------------------------------------------------------------


def test_acceptance_lists_every_finding_and_artifact_with_its_state(crew):
    review(crew, target="F1", support="derived")
    review(crew, target="A2", support="sourced", limits="English sources only")

    labels = [(a.target, a.label) for a in acceptance_all(crew.state())]

    assert labels == [("F1", "accepted"), ("A1", "open"), ("A2", "accepted with limits")]
    assert acceptance(crew.state(), "A1").reason == "no qualifying review of r1 yet"


def test_a_superseded_finding_is_not_reviewed(crew):
    crew("member-1", "finding", supersedes="F1", text="Corrected: injection via sort")

    result = review(crew, target="F1")

    assert result.text.startswith("refused: F1 is superseded by F2")
    assert acceptance(crew.state(), "F1").label == "superseded"


# -- what the supervisor side reads ----------------------------------------------------------------


def test_prior_reviewers_are_offered_a_re_review_first(crew):
    review(crew, actor="member-2")
    review(crew, actor="member-3")
    (crew.workdir / "poc.py").write_text("print('poc 2')\n")
    crew("member-1", "artifact", path="poc.py")

    assert prior_reviewers(crew.state(), "A1") == ["member-3", "member-2"]


def test_awaiting_review_lists_open_artifacts_nobody_was_asked_to_review(crew):
    review(crew, target="A2", support="sourced")
    assert awaiting_review(crew.state(), "r1") == ["A1"]

    crew("member-1", "message", to="member-2", kind="review-request", target="A1", text="A1?")

    assert awaiting_review(crew.state(), "r1") == []
    assert [t.id for t in open_threads_to(crew.state(), "member-2")] == ["Q1"]


def test_answered_threads_wait_for_their_sender(crew):
    crew("member-2", "message", to="member-1", kind="question", text="Which Python?")
    crew("member-1", "respond", id="Q1", text="3.11")

    assert [t.id for t in awaiting_resolution(crew.state(), "member-2")] == ["Q1"]


def test_acceptance_as_json_names_label_reviews_and_limits(crew):
    review(crew, limits="Linux only")

    data = acceptance(crew.state(), "A1").as_json()

    assert data == {
        "target": "A1",
        "revision": 1,
        "owner": "member-1",
        "state": "accepted-with-limits",
        "reason": "r1 reviewed full-scope",
        "deciding": ["V1"],
        "blockers": [],
        "unchecked": [],
        "limits": [{"review": "V1", "text": "Linux only"}],
        "refuting": [],
        "label": "accepted with limits",
    }
