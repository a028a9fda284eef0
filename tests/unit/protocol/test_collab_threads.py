"""Targeted threads: message, ack, respond, resolve, defer, and what they block."""

from __future__ import annotations

import pytest

from horde_tui.store.acceptance import acceptance


@pytest.fixture
def crew(horde):
    """member-1..3 are known to the horde (each added an idea); member-1 published A1."""
    for n in (1, 2, 3):
        horde(f"member-{n}", "idea", text=f"Audit module {n} of app/")
    (horde.workdir / "poc.py").write_text("print('poc')\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints poc").id == "A1"
    return horde


def full_review(horde, actor="member-2", target="A1", **extra):
    fields = {
        "target": target,
        "verdict": "supports",
        "support": "tested",
        "checked": "ran poc.py, it prints poc",
        "evidence": "output: poc",
    }
    return horde(actor, "review", **{**fields, **extra})


# -- message ---------------------------------------------------------------------------


def test_message_opens_a_thread_to_the_recipient(crew):
    result = crew("member-2", "message", to="member-1", kind="question", text="Which Python?")

    assert (result.ok, result.id, result.text) == (
        True,
        "Q1",
        "ok Q1 question to member-1; delivered at their next turn",
    )
    t = crew.state().threads["Q1"]
    assert (t.by, t.to, t.kind, t.state, t.target, t.text) == (
        "member-2",
        "member-1",
        "question",
        "open",
        None,
        "Which Python?",
    )


def test_message_about_a_target_pins_its_revision(crew):
    result = crew("member-2", "message", to="member-1", kind="question", target="a1", text="Why?")

    assert result.text == "ok Q1 question to member-1 about A1 r1; delivered at their next turn"
    assert (crew.state().threads["Q1"].target, crew.state().threads["Q1"].target_revision) == (
        "A1",
        1,
    )


def test_message_to_yourself_is_refused(crew):
    result = crew("member-1", "message", to="member-1", kind="question", text="Hello?")

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith("refused: a message to yourself (threads rule")
    assert crew.state().threads == {}


def test_message_to_an_unknown_member_is_refused_listing_the_known_ones(crew):
    result = crew("member-1", "message", to="member-9", kind="question", text="Hello?")

    assert result.text == (
        "refused: no member named 'member-9' (threads rule: messages go to a member of the "
        "horde); known: member-1, member-2, member-3"
    )


def test_a_member_with_a_session_folder_is_known_before_it_writes(horde):
    horde("member-1", "idea", text="Audit app/")
    (horde.root / "runs" / "r1" / "sessions" / "member-4").mkdir(parents=True)

    result = horde("member-1", "message", to="member-4", kind="handoff", text="Take #1")

    assert (result.ok, result.id) == (True, "Q1")


def test_a_challenge_cannot_be_sent_as_a_message(crew):
    result = crew("member-2", "message", to="member-1", kind="challenge", target="A1", text="No")

    assert result.text.startswith(
        "refused: a challenge is opened only by a `review` with verdict refutes (reviews rule)"
    )
    assert crew.state().threads == {}


def test_a_review_request_to_the_owner_is_refused(crew):
    result = crew(
        "member-2", "message", to="member-1", kind="review-request", target="A1", text="x"
    )

    assert result.text.startswith("refused: member-1 owns A1 and may not review it")


def test_target_answer_needs_a_proposed_answer(crew):
    result = crew("member-2", "message", to="member-1", kind="question", target="answer", text="?")

    assert result.text.startswith("refused: target=answer, but no answer has been proposed")


def test_an_identical_open_message_is_not_sent_twice(crew):
    crew("member-2", "message", to="member-1", kind="question", text="Which Python?")

    again = crew("member-2", "message", to="member-1", kind="question", text="Which Python?")

    assert (again.ok, again.id, again.text) == (True, "Q1", "duplicate of open Q1; nothing sent")
    assert list(crew.state().threads) == ["Q1"]


# -- ack, respond, defer, resolve ----------------------------------------------------------


@pytest.fixture
def question(crew):
    assert crew("member-2", "message", to="member-1", kind="question", text="Which?").id == "Q1"
    return crew


def test_ack_by_the_recipient_moves_open_to_acked(question):
    result = question("member-1", "ack", id="Q1")

    assert (result.ok, result.id) == (True, "Q1")
    assert question.state().threads["Q1"].state == "acked"


def test_ack_by_the_sender_is_refused(question):
    result = question("member-2", "ack", id="Q1")

    assert result.text.startswith(
        "refused: Q1 is your own question to member-1; the recipient acks"
    )


def test_respond_by_the_recipient_records_a_response(question):
    result = question("member-1", "respond", id="q1", text="3.11")

    assert (result.ok, result.text) == (True, "ok Q1 response 1 recorded; member-2 resolves it")
    t = question.state().threads["Q1"]
    assert (t.state, t.responses, t.notes[-1].text) == ("responded", 1, "3.11")


def test_resolve_by_the_requester_closes_the_thread(question):
    question("member-1", "respond", id="Q1", text="3.11")

    result = question("member-2", "resolve", id="Q1", text="thanks")

    assert (result.ok, result.text) == (True, "ok Q1 resolved")
    assert question.state().threads["Q1"].state == "resolved"


def test_resolve_by_the_recipient_is_refused(question):
    result = question("member-1", "resolve", id="Q1", text="done")

    assert result.text.startswith(
        "refused: Q1 is member-2's request to you; the requester resolves it (threads rule)"
    )
    assert question.state().threads["Q1"].state == "open"


def test_a_resolved_thread_takes_no_more_replies(question):
    question("member-2", "resolve", id="Q1", text="never mind")

    result = question("member-1", "respond", id="Q1", text="3.11")

    assert result.text.startswith("refused: Q1 is already resolved (threads rule")


def test_defer_keeps_a_blocker_blocking_and_the_recipient_can_still_respond(crew):
    crew("member-2", "message", to="member-1", kind="blocker", target="A1", text="Crashes on 3.12")
    full_review(crew)

    deferred = crew("member-1", "defer", id="Q1", text="after the parser work")

    assert deferred.text == (
        "ok Q1 deferred; it stays open and still blocks its target; `respond` to it when you can"
    )
    assert acceptance(crew.state(), "A1").label == "blocked by Q1"
    assert crew("member-1", "respond", id="Q1", text="fixed the 3.12 crash").ok
    assert crew.state().threads["Q1"].state == "responded"
    assert acceptance(crew.state(), "A1").label == "blocked by Q1"
    assert crew("member-2", "resolve", id="Q1", text="confirmed on 3.12").ok
    assert acceptance(crew.state(), "A1").label == "accepted"


# -- challenges ------------------------------------------------------------------------------


@pytest.fixture
def challenged(crew):
    """member-2 refuted A1 r1, which opened challenge Q1 to member-1."""
    result = full_review(crew, verdict="refutes", checked="ran poc.py", evidence="it crashed")
    assert result.text.endswith("Q1 challenge opened to member-1")
    return crew


def test_a_challenger_withdraws_only_after_its_own_supporting_review(challenged):
    early = challenged("member-2", "resolve", id="Q1", text="my mistake", evidence="re-ran it")

    assert early.text.startswith(
        "refused: withdrawing challenge Q1 before any response needs your supporting review of "
        "A1's current revision r1 (reviews rule)"
    )
    assert challenged.state().threads["Q1"].state == "open"


def test_a_challenger_withdraws_with_a_supporting_review_and_evidence(challenged):
    full_review(challenged, limits="only tested on Linux")

    no_evidence = challenged("member-2", "resolve", id="Q1", text="my mistake")
    withdrawn = challenged(
        "member-2", "resolve", id="Q1", text="my mistake", evidenceText="re-ran: prints poc"
    )

    assert no_evidence.text.startswith("refused: withdrawing challenge Q1 without evidence")
    assert (withdrawn.ok, withdrawn.text) == (True, "ok Q1 resolved; E15 attached")
    state = challenged.state()
    assert (state.evidence["r1/E15"].target, state.threads["Q1"].notes[-1].evidence) == (
        "A1",
        "E15",
    )
    acc = acceptance(state, "A1")
    assert (acc.label, acc.limits) == ("accepted with limits", (("V2", "only tested on Linux"),))


def test_after_a_response_the_challenger_resolves_without_a_new_review(challenged):
    challenged("member-1", "respond", id="Q1", text="that was a stale build")

    result = challenged("member-2", "resolve", id="Q1", text="agreed")

    assert result.ok
    assert acceptance(challenged.state(), "A1").state == "open"


# -- a re-review request about the sender's own work --------------------------------------


@pytest.fixture
def rereview(crew):
    """member-1 asks member-2 to re-check its own A1: a blocker until member-2 supports it."""
    crew("member-1", "message", to="member-2", kind="blocker", target="A1", text="Re-check A1")
    return crew


def test_the_owner_cannot_resolve_its_own_rereview_request_before_a_response(rereview):
    result = rereview("member-1", "resolve", id="Q1", text="fine now")

    assert result.text.startswith(
        "refused: Q1 asks member-2 to re-check your own A1; it resolves on their supporting "
        "review of r1 (reviews rule)"
    )


def test_a_partial_review_does_not_resolve_a_rereview_of_an_artifact(rereview):
    full_review(rereview, unchecked="Windows paths")

    assert rereview.state().threads["Q1"].state == "open"
    assert acceptance(rereview.state(), "A1").label == "blocked by Q1"


def test_the_recipients_full_scope_supporting_review_resolves_it(rereview):
    result = full_review(rereview)

    assert result.text == (
        "ok V1 supports A1 r1 (pinned r1) · counts toward acceptance · Q1 resolved"
    )
    t = rereview.state().threads["Q1"]
    assert (t.state, t.notes[-1].auto, t.notes[-1].by) == ("resolved", "V1", "member-2")
    assert acceptance(rereview.state(), "A1").label == "accepted"


def test_a_review_request_to_the_reviewer_resolves_on_any_review_of_the_current_revision(crew):
    crew("member-3", "message", to="member-2", kind="review-request", target="A1", text="Check A1")

    full_review(crew, verdict="partially-supports", unchecked="error paths")

    assert crew.state().threads["Q1"].state == "resolved"
