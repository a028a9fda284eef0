"""Solved is two-phase: propose, then another member validates or refutes."""

from __future__ import annotations

import pytest


@pytest.fixture
def filed(horde):
    """member-1 filed F1 under #1; member-2 holds #2 (so member-2 can act)."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/auth/session.py")
    result = horde(
        "member-1",
        "finding",
        text="SQL injection in build_query()",
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    )
    assert result.id == "F1"
    return horde


def answer_md(horde, run="r1"):
    return (horde.root / "runs" / run / "ANSWER.md").read_text()


def test_solved_writes_answer_and_pins_cited_revisions(filed):
    horde = filed

    proposed = horde("member-1", "solved", text="The app is injectable, see F1", cites=["F1"])

    assert (proposed.ok, proposed.id) == (True, "answer")
    assert proposed.text.startswith("ok answer proposed (round 1), ANSWER.md written, pinned F1@r1")
    run_dir = horde.root / "runs" / "r1"
    assert (run_dir / "answers" / "round-1-pending.md").exists()
    text = answer_md(horde)
    assert "Status: proposed, awaiting validation by another member" in text
    assert "Pinned revisions: F1@r1." in text
    (prop,) = horde.state().proposals["r1"]
    assert (prop.by, prop.status, prop.pins, prop.cites) == (
        "member-1",
        "pending",
        {"F1": 1},
        ["F1"],
    )


def test_proposer_cannot_confirm_its_own_answer(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    own = horde("member-1", "confirm-solved")

    assert (own.ok, own.id) == (False, None)
    assert own.text.startswith(
        "refused: you proposed this answer; a different member must validate it"
    )
    assert horde.state().proposals["r1"][-1].status == "pending"


def test_another_member_validates_the_answer(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    ok = horde("member-2", "confirm-solved", text="reproduced F1")

    assert (ok.ok, ok.id, ok.text) == (True, "answer", "ok answer validated (round 1)")
    prop = horde.state().proposals["r1"][-1]
    assert (prop.status, prop.validated_by) == ("validated", "member-2")
    assert "Status: validated by member-2" in answer_md(horde)
    assert (horde.root / "runs" / "r1" / "answers" / "round-1-validated.md").exists()


def test_only_one_pending_proposal_at_a_time(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    second = horde("member-2", "solved", text="A better answer citing F1", cites=["F1"])

    assert (second.ok, second.id) == (False, None)
    assert second.text.startswith("refused: member-1's answer is pending (one proposal at a time)")
    assert len(horde.state().proposals["r1"]) == 1


def test_citing_a_superseded_finding_is_refused_at_solved(filed):
    horde = filed
    horde("member-1", "finding", text="Only the admin build_query() path", supersedes="F1")

    stale = horde("member-1", "solved", text="See F1", cites=["F1"])

    assert (stale.ok, stale.id) == (False, None)
    assert stale.text.startswith("refused: the answer cites F1, superseded by F2 (solved rule)")
    assert "r1" not in horde.state().proposals
    assert not (horde.root / "runs" / "r1" / "ANSWER.md").exists()


def test_a_finding_mentioned_in_the_text_counts_as_cited(filed):
    horde = filed
    horde("member-1", "finding", text="Only the admin build_query() path", supersedes="F1")

    stale = horde("member-1", "solved", text="The app is injectable, see F1")

    assert (stale.ok, stale.id) == (False, None)
    assert "cites F1, superseded by F2" in stale.text


def test_quoting_a_provisional_fact_is_refused_at_solved(filed):
    horde = filed
    horde("member-3", "fact", text="app/auth/session.py keeps tokens in memory")  # on #2

    early = horde("member-1", "solved", text="See F1 and T1", cites=["F1", "T1"])

    assert (early.ok, early.id) == (False, None)
    assert early.text.startswith(
        "refused: the answer quotes T1, still provisional on #2 (solved rule)"
    )
    assert "r1" not in horde.state().proposals


def test_quoting_a_provisional_fact_is_refused_at_confirm_solved(filed):
    horde = filed
    horde("member-3", "fact", text="app/auth/session.py keeps tokens in memory")  # on #2
    # A proposal recorded without the check (e.g. by an older tool), to exercise the guard.
    horde.inject(
        "member-1",
        {"op": "solved.propose", "text": "See T1", "cites": ["T1"], "pins": {}},
    )

    late = horde("member-2", "confirm-solved")

    assert (late.ok, late.id) == (False, None)
    assert late.text.startswith(
        "refused: the answer quotes T1, still provisional on #2 (solved rule)"
    )
    assert horde.state().proposals["r1"][-1].status == "pending"


def test_citing_a_superseded_finding_is_refused_at_confirm_solved(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])
    # A correction recorded without withdrawing the proposal, to exercise the guard.
    horde.inject(
        "member-3",
        {
            "op": "finding.add",
            "id": "F2",
            "idea": "#1",
            "concern": "sql-injection",
            "text": "Only the admin path",
            "supersedes": "F1",
        },
    )

    late = horde("member-2", "confirm-solved")

    assert (late.ok, late.id) == (False, None)
    assert late.text.startswith("refused: F1 changed since the proposal pinned them")
    assert horde.state().proposals["r1"][-1].status == "pending"


@pytest.mark.parametrize("change", ["amend", "supersede"])
def test_pending_proposal_is_withdrawn_when_a_cited_finding_changes(filed, change):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    if change == "amend":
        moved = horde(
            "member-1", "amend", id="F1", text="SQL injection in two builders", note="wider"
        )
        why = "F1 was amended"
    else:
        moved = horde(
            "member-2", "finding", text="Only the admin build_query() path", supersedes="F1"
        )
        why = "F1 was superseded"

    assert moved.ok
    prop = horde.state().proposals["r1"][-1]
    assert (prop.status, prop.withdrawn_reason) == ("withdrawn", why)
    assert f"Status: withdrawn: {why}" in answer_md(horde)
    late = horde("member-2", "confirm-solved")
    assert (late.ok, late.id) == (False, None)
    assert late.text.startswith("refused: nothing to validate: the proposal is withdrawn in run r1")


def test_withdrawn_proposal_can_be_proposed_again_with_new_pins(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])
    horde("member-1", "amend", id="F1", text="SQL injection in two builders", note="wider")

    again = horde("member-1", "solved", text="See F1", cites=["F1"])

    assert again.ok
    assert again.text.startswith("ok answer proposed (round 2), ANSWER.md written, pinned F1@r2")
    prop = horde.state().proposals["r1"][-1]
    assert (prop.round, prop.status, prop.pins) == (2, "pending", {"F1": 2})


def test_contest_solved_records_the_named_ideas(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    contest = horde("member-2", "contest-solved", text="session handling is unexamined", ideas="#2")

    assert (contest.ok, contest.id) == (True, "answer")
    assert contest.text == "ok answer contested (round 1); it reopens once #2 close"
    prop = horde.state().proposals["r1"][-1]
    assert (prop.status, prop.contested_by, prop.contest_ideas) == ("contested", "member-2", ["#2"])
    assert "Status: contested by member-2" in answer_md(horde)


def test_proposer_cannot_contest_its_own_answer(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])

    own = horde("member-1", "contest-solved", text="second thoughts")

    assert (own.ok, own.id) == (False, None)
    assert own.text.startswith(
        "refused: you proposed this answer; a different member must contest it"
    )


def test_confirm_solved_without_a_proposal_is_refused(filed):
    horde = filed

    nothing = horde("member-2", "confirm-solved")

    assert (nothing.ok, nothing.id) == (False, None)
    assert nothing.text.startswith("refused: nothing to validate: no proposal in run r1")


# -- answers citing artifacts --------------------------------------------------------------


@pytest.fixture
def published(filed):
    """member-1 also published A1 r1, a runnable proof of F1."""
    horde = filed
    (horde.workdir / "poc.py").write_text("print('injected')\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints injected").id == "A1"
    return horde


def test_an_answer_may_cite_an_artifact_and_pins_its_revision(published):
    horde = published

    proposed = horde("member-1", "solved", text="Injectable: F1, proof A1", cites=["F1", "A1@r1"])

    assert proposed.ok, proposed.text
    assert proposed.text.startswith(
        "ok answer proposed (round 1), ANSWER.md written, pinned F1@r1, A1@r1;"
    )
    prop = horde.state().proposals["r1"][-1]
    assert (prop.cites, prop.pins) == (["F1", "A1"], {"F1": 1, "A1": 1})
    assert "Pinned revisions: F1@r1, A1@r1." in answer_md(horde)


def test_citing_an_artifact_at_a_revision_other_than_the_current_is_refused(published):
    horde = published
    (horde.workdir / "poc.py").write_text("print('injected twice')\n")
    assert horde("member-1", "artifact", path="poc.py").ok  # A1 r2

    stale = horde("member-1", "solved", text="Proof in A1", cites=["A1@r1"])

    assert (stale.ok, stale.id) == (False, None)
    assert stale.text == (
        "refused: the answer cites A1@r1, but A1 is at r2 (solved rule: an answer pins the "
        "current revision); cite A1@r2"
    )
    assert "r1" not in horde.state().proposals


def test_republishing_a_cited_artifact_withdraws_the_pending_answer(published):
    horde = published
    horde("member-1", "solved", text="Injectable, proof A1", cites=["F1"])
    (horde.workdir / "poc.py").write_text("print('injected twice')\n")

    moved = horde("member-1", "artifact", path="poc.py", text="prints twice now")

    assert moved.ok
    assert moved.text.endswith("· the pending answer of run r1 that pinned A1@r1 is withdrawn")
    prop = horde.state().proposals["r1"][-1]
    assert (prop.status, prop.withdrawn_reason) == ("withdrawn", "A1 was republished as r2")
    assert "Status: withdrawn: A1 was republished as r2" in answer_md(horde)
    late = horde("member-2", "confirm-solved")
    assert late.text.startswith("refused: nothing to validate: the proposal is withdrawn")
    again = horde("member-1", "solved", text="Injectable, proof A1", cites=["F1"])
    assert again.text.startswith(
        "ok answer proposed (round 2), ANSWER.md written, pinned F1@r1, A1@r2;"
    )


def test_a_validated_answer_names_an_artifact_republished_after_its_pins(published):
    horde = published
    horde("member-1", "solved", text="Injectable, proof A1", cites=["F1", "A1"])
    assert horde("member-2", "confirm-solved", text="ran A1").ok
    (horde.workdir / "poc.py").write_text("print('injected twice')\n")

    assert horde("member-1", "artifact", path="poc.py", text="prints twice now").ok

    prop = horde.state().proposals["r1"][-1]
    assert prop.status == "validated"
    assert "Status: validated by member-2; changed since pinned: A1" in answer_md(horde)


def test_an_answer_citing_an_unknown_kind_of_id_is_refused(filed):
    horde = filed

    odd = horde("member-1", "solved", text="See F1", cites=["F1", "Q1"])

    assert odd.text == (
        "refused: cannot cite 'Q1' in an answer (solved rule); cite F# findings, A# artifacts "
        "(optionally at a revision, A2@r3) and T# facts"
    )


def test_a_fact_cited_at_a_revision_is_refused(filed):
    horde = filed
    assert horde("member-1", "fact", text="The app uses SQLite 3").id == "T1"

    odd = horde("member-1", "solved", text="See F1", cites=["F1", "T1@r1"])

    assert odd.text == (
        "refused: the answer cites T1@r1, but facts have no revisions (solved rule); cite T1"
    )


# -- a contest that names ideas reopens the answer once they close -------------------------


def test_a_contested_answer_reopens_once_every_named_idea_closes(filed):
    horde = filed
    horde.claimed("member-2", "Audit app/auth/tokens.py")  # #3
    horde("member-1", "solved", text="The app is injectable, see F1", cites=["F1"])
    assert horde("member-2", "contest-solved", text="auth is unexamined", ideas="#2,#3").ok

    first = horde("member-2", "done", id="#2", result="session handling is fine")
    assert first.text == "ok #2 done."
    assert horde.state().proposals["r1"][-1].status == "contested"

    last = horde("member-2", "rule-out", id="#3", reason="no tokens module")

    assert last.ok
    assert last.text.startswith(
        "ok #3 ruled out. Every idea the contest of run r1's answer named is closed: the "
        "answer reopens as round 2, awaiting validation by another member."
    )
    assert "awaits validation by a second member" in last.text  # the solved nudge follows
    props = horde.state().proposals["r1"]
    assert [(p.round, p.status) for p in props] == [(1, "contested"), (2, "pending")]
    again = props[-1]
    assert (again.by, again.text, again.cites, again.pins, again.reopened_from) == (
        "member-1",
        "The app is injectable, see F1",
        ["F1"],
        {"F1": 1},
        1,
    )
    text = answer_md(horde)
    assert "# Answer (run r1, round 2)" in text
    assert (
        "Status: reopened from round 1 (contested by member-2; #2, #3 closed), awaiting "
        "validation by another member"
    ) in text
    assert (horde.root / "runs" / "r1" / "answers" / "round-2-pending.md").exists()
    outcome = [e for e in horde.events() if e.get("action") == "rule-out"][-1]
    assert "the answer reopens as round 2" in outcome["text"]
    ok = horde("member-2", "confirm-solved", text="auth checked under #2 and #3")
    assert (ok.ok, ok.text) == (True, "ok answer validated (round 2)")


def test_a_reopening_answer_whose_cited_finding_changed_is_withdrawn_instead(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])
    assert horde("member-2", "contest-solved", text="auth is unexamined", ideas="#2").ok
    horde("member-1", "amend", id="F1", text="SQL injection in two builders", note="wider")

    closed = horde("member-2", "done", id="#2", result="session handling is fine")

    assert closed.text.endswith(
        " Every idea the contest of run r1's answer named is closed, but F1 changed since "
        "the answer pinned it: the answer is withdrawn for re-proposal."
    )
    props = horde.state().proposals["r1"]
    assert [(p.round, p.status) for p in props] == [(1, "withdrawn")]
    assert props[0].withdrawn_reason == "F1 changed while the contest waited on #2"
    assert "Status: withdrawn: F1 changed while the contest waited on #2" in answer_md(horde)


def test_a_reopening_answer_quoting_a_provisional_fact_is_withdrawn_instead(filed):
    horde = filed
    horde.claimed("member-3", "Audit app/db/pool.py")  # #3
    assert horde("member-3", "fact", text="#3: the pool caches connections").id == "T1"
    # A proposal recorded without the check (e.g. by an older tool), quoting T1 while #3 is
    # still open, to reach the reopening with a fact that is still provisional.
    horde.inject(
        "member-1",
        {"op": "solved.propose", "text": "See F1, T1", "cites": ["F1", "T1"], "pins": {"F1": 1}},
    )
    assert horde("member-2", "contest-solved", text="auth is unexamined", ideas="#2").ok

    closed = horde("member-2", "done", id="#2", result="session handling is fine")

    assert closed.text.endswith(
        " Every idea the contest of run r1's answer named is closed, but T1 is still "
        "provisional on #3: the answer is withdrawn for re-proposal."
    )
    (prop,) = horde.state().proposals["r1"]
    assert (prop.status, prop.withdrawn_reason) == (
        "withdrawn",
        "T1 is still provisional on #3 while the contest waited on #2",
    )


def test_contest_solved_refuses_naming_a_closed_idea(filed):
    horde = filed
    horde("member-1", "solved", text="See F1", cites=["F1"])
    assert horde("member-2", "done", id="#2", result="session handling is fine").ok

    late = horde("member-2", "contest-solved", text="auth is unexamined", ideas="#2")

    assert (late.ok, late.id) == (False, None)
    assert late.text == (
        "refused: #2 is already done; a contest names the open or claimed ideas the answer "
        "waits on (solved rule: it reopens once they close); name open ideas, or contest "
        "without ideas"
    )
    assert horde.state().proposals["r1"][-1].status == "pending"


def test_until_stop_a_contested_later_round_leaves_the_banked_answer_shown(filed):
    horde = filed
    horde("member-1", "solved", text="Injectable through build_query(), see F1", cites=["F1"])
    (horde.root / "runs" / "r1" / ".until-stop").write_text("until stop\n")
    assert horde("member-2", "confirm-solved", text="reproduced F1").ok
    assert horde("member-2", "solved", text="A wider answer, see F1", cites=["F1"]).ok

    assert horde("member-1", "contest-solved", text="not wider at all").ok

    text = answer_md(horde)
    assert text.startswith("# Answer (run r1, round 2)")
    assert (
        "Status: contested by member-1; round 1's validated answer stays banked (below)"
    ) in text
    banked = text.split("## Banked answer (round 1, validated by member-2)\n", 1)[1]
    assert "Injectable through build_query(), see F1" in banked
    assert (horde.root / "runs" / "r1" / "answers" / "round-1-validated.md").exists()


class _Poller:
    """The part of a supervisor `record_answer` reads: the run's store and its emit."""

    def __init__(self, horde, run: str = "r1") -> None:
        self.parent = horde.store("parent")
        self.run_id = run
        self.solved_seen: dict[str, float] = {}
        self.emitted: list[tuple[str, str]] = []

    def emit(self, kind: str, member: str, **data: object) -> None:
        self.emitted.append((kind, member))


def test_a_round_first_seen_validated_is_still_announced_as_proposed(filed):
    """A loaded supervisor can poll after the proposal *and* its validation landed; the
    event log must still say the answer was proposed before it says it was validated."""
    from horde_tui.supervisor.watch import record_answer

    filed("member-1", "solved", text="See F1", cites=["F1"])
    filed("member-2", "confirm-solved", text="reproduced F1")
    poller = _Poller(filed)
    record_answer(poller)  # type: ignore[arg-type]
    assert poller.emitted == [("solved-proposed", "member-1"), ("solved-validated", "member-1")]
    record_answer(poller)  # type: ignore[arg-type]
    assert len(poller.emitted) == 2, "each round and status is announced once"
