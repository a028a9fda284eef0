"""Ideas: dedup on hard identifiers, ownership, plans, and done vs rule-out."""

from __future__ import annotations

import pytest


def test_idea_sharing_a_path_is_a_duplicate_and_records_the_corroborator(horde):
    first = horde("member-1", "idea", text="Check SQL injection in app/db/query.py build_query()")
    again = horde("member-2", "idea", text="Look for SQL injection in app/db/query.py")

    assert (first.ok, first.id) == (True, "#1")
    assert (again.ok, again.id) == (True, "#1")
    assert again.text.startswith("duplicate of #1 (open); recorded you as corroborator")
    state = horde.state()
    assert list(state.ideas) == ["#1"]
    assert state.ideas["#1"].corroborators == ["member-2"]


def test_idea_sharing_a_bug_id_is_a_duplicate_despite_other_wording(horde):
    horde("member-1", "idea", text="Check whether log4j JNDI lookups allow RCE (CVE-2021-44228)")
    again = horde("member-2", "idea", text="Is the logging stack affected by CVE-2021-44228?")

    assert (again.ok, again.id) == (True, "#1")
    assert "duplicate of #1" in again.text
    assert list(horde.state().ideas) == ["#1"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            "Probe https://api.example.com/v1/users for IDOR",
            "Is https://api.example.com/v1/users leaking other accounts?",
        ),
        ("Check commit 3f9a2c1d for the auth regression", "Did 3f9a2c1d break login checks?"),
        (
            "Scan staging.internal for exposed admin ports",
            "Which services on staging.internal accept logins without auth",
        ),
        (
            "Trace calls to UserService.authenticate for bypasses",
            "Can UserService.authenticate be skipped by a crafted cookie",
        ),
    ],
    ids=["url", "hash", "host", "symbol"],
)
def test_idea_sharing_a_hard_identifier_is_a_duplicate(horde, first, second):
    horde("member-1", "idea", text=first)

    again = horde("member-2", "idea", text=second)

    assert (again.ok, again.id) == (True, "#1")
    assert list(horde.state().ideas) == ["#1"]


def test_ideas_naming_different_urls_are_not_duplicates(horde):
    horde("member-1", "idea", text="Probe https://api.example.com/v1/users for IDOR")

    other = horde("member-2", "idea", text="Probe https://api.example.com/v1/orders for IDOR")

    assert (other.ok, other.id) == (True, "#2")


def test_idea_with_strong_word_overlap_and_no_identifiers_is_a_duplicate(horde):
    horde("member-1", "idea", text="Review password reset tokens for predictable randomness")
    again = horde(
        "member-2", "idea", text="review the password reset tokens for predictable randomness"
    )

    assert (again.ok, again.id) == (True, "#1")
    assert horde.state().ideas["#1"].corroborators == ["member-2"]


def test_ideas_naming_different_files_are_not_duplicates(horde):
    horde("member-1", "idea", text="Look for SQL injection in app/db/query.py")
    other = horde("member-2", "idea", text="Look for SQL injection in app/db/users.py")

    assert (other.ok, other.id) == (True, "#2")
    assert other.text.startswith("ok #2 added (open)")
    state = horde.state()
    assert sorted(state.ideas) == ["#1", "#2"]
    assert state.ideas["#1"].corroborators == []


def test_reposting_your_own_idea_does_not_corroborate_it(horde):
    horde("member-1", "idea", text="Look for SQL injection in app/db/query.py")
    again = horde("member-1", "idea", text="SQL injection in app/db/query.py")

    assert (again.ok, again.id) == (True, "#1")
    assert "you already raised it" in again.text
    assert horde.state().ideas["#1"].corroborators == []


@pytest.mark.parametrize(
    ("close", "fields", "status"),
    [
        ("done", {"result": "found an injection, filed F1"}, "done"),
        ("rule-out", {"reason": "parameterised everywhere"}, "ruled-out"),
    ],
)
def test_closed_ideas_still_match_as_duplicates(horde, close, fields, status):
    horde.claimed("member-1", "Audit app/db/query.py for SQL injection")
    assert horde("member-1", close, id="#1", **fields).ok

    again = horde("member-2", "idea", text="SQL injection in app/db/query.py")

    assert (again.ok, again.id) == (True, "#1")
    assert f"duplicate of #1 ({status})" in again.text
    state = horde.state()
    assert list(state.ideas) == ["#1"]
    assert state.ideas["#1"].status == status


def test_claim_of_an_idea_held_by_another_member_is_refused_naming_the_holder(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    taken = horde("member-2", "claim", id="#1")

    assert (taken.ok, taken.id, taken.exit_code) == (False, None, 1)
    assert taken.text.startswith("refused: #1 is claimed by member-1 (one owner per idea)")
    assert horde.state().ideas["#1"].owner == "member-1"


def test_claim_of_a_closed_idea_is_refused(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-1", "rule-out", id="#1", reason="no database access at all")

    late = horde("member-2", "claim", id="#1")

    assert (late.ok, late.id) == (False, None)
    assert "refused: #1 is already ruled-out (only open ideas can be claimed)" in late.text
    assert horde.state().ideas["#1"].status == "ruled-out"


@pytest.mark.parametrize(
    ("verb", "fields", "word"),
    [
        ("done", {"result": "filed F1"}, "finish"),
        ("drop", {"reason": "busy"}, "drop"),
        ("rule-out", {"reason": "not reachable"}, "rule out"),
    ],
)
def test_finishing_an_idea_another_member_holds_is_refused(horde, verb, fields, word):
    horde.claimed("member-1", "Audit app/db/query.py")

    other = horde("member-2", verb, id="#1", **fields)

    assert (other.ok, other.id) == (False, None)
    assert other.text.startswith(f"refused: you cannot {word} #1, which is held by member-1")
    assert "ownership rule" in other.text
    idea = horde.state().ideas["#1"]
    assert (idea.status, idea.owner) == ("claimed", "member-1")


def test_finishing_an_open_idea_you_have_not_claimed_is_refused(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")

    result = horde("member-1", "done", id="#1", result="filed F1")

    assert (result.ok, result.id) == (False, None)
    assert "refused: you cannot finish #1, which is open" in result.text
    assert horde.state().ideas["#1"].status == "open"


def test_claim_refuses_a_near_identical_idea_held_by_another_member(horde):
    horde.claimed("member-1", "Audit app/db/query.py for SQL injection")
    # Seeded by the parent (plan layers), so the tool's own `idea` dedup did not merge it.
    horde.inject(
        "parent", {"op": "idea.add", "id": "#2", "text": "SQL injection in app/db/query.py"}
    )

    near = horde("member-2", "claim", id="#2")

    assert (near.ok, near.id) == (False, None)
    assert near.text.startswith("refused: #2 is near-identical to #1 held by member-1")
    assert horde.state().ideas["#2"].status == "open"


def test_claim_warns_on_a_similar_idea_held_by_another_member(horde):
    horde.claimed("member-1", "Review password reset tokens for predictable randomness and reuse")
    horde(
        "member-2", "idea", text="Review password reset emails for spoofed sender headers and reuse"
    )

    similar = horde("member-2", "claim", id="#2")

    assert (similar.ok, similar.id) == (True, "#2")
    assert similar.text.startswith("ok #2 claimed.")
    assert "similar to #1 held by member-1" in similar.text
    assert horde.state().ideas["#2"].owner == "member-2"


def test_verifier_claims_only_when_nothing_awaits_its_review(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde(
        "member-1",
        "finding",
        text="SQL injection in build_query()",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    )
    horde("member-1", "idea", text="Audit app/web/login.py")

    early = horde("member-3", "claim", role="verifier", id="#2")
    horde(
        "member-3",
        "review",
        role="verifier",
        target="F1",
        verdict="supports",
        support="tested",
        checked="ran build_query with a quote",
        evidenceText="the quote reached the SQL",
    )
    later = horde("member-3", "claim", role="verifier", id="#2")

    assert (early.ok, early.id) == (False, None)
    assert early.text.startswith("refused: the verifier claims ideas only when nothing awaits")
    assert early.text.endswith("review first: F1")
    assert (later.ok, later.id) == (True, "#2")


def test_plan_post_before_claiming_is_refused(horde):
    plan = horde("member-1", "post", text="Plan: read every handler, then fuzz the parser")

    assert (plan.ok, plan.id) == (False, None)
    assert plan.text.startswith("refused: a plan post before claiming (ownership rule)")
    assert horde.state().posts == []


def test_plan_post_after_claiming_and_plain_posts_are_accepted(horde):
    plain = horde("member-1", "post", text="Starting up; reading the board")
    horde.claimed("member-1", "Audit app/db/query.py")
    plan = horde("member-1", "post", text="Plan: trace build_query callers")

    assert (plain.ok, plain.text) == (True, "ok: posted to BOARD.md")
    assert (plan.ok, plan.text) == (True, "ok: posted to BOARD.md")
    assert [p.text for p in horde.state().posts] == [
        "Starting up; reading the board",
        "Plan: trace build_query callers",
    ]


@pytest.mark.parametrize(
    "result",
    [
        "not exploitable",
        "No issues found",
        "it was a false positive",
        "Confirmed not exploitable from outside",
    ],
)
def test_done_with_a_confirmed_negative_is_refused_in_favour_of_rule_out(horde, result):
    horde.claimed("member-1", "Audit app/db/query.py")

    negative = horde("member-1", "done", id="#1", result=result)

    assert (negative.ok, negative.id) == (False, None)
    assert "reads as a confirmed negative" in negative.text
    assert "use `rule-out id=#1 reason=...` instead" in negative.text
    assert horde.state().ideas["#1"].status == "claimed"


def test_done_with_a_positive_result_is_accepted(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    done = horde("member-1", "done", id="#1", result="Found an injection in build_query, filed F1")

    assert (done.ok, done.id) == (True, "#1")
    assert done.text.startswith("ok #1 done.")
    idea = horde.state().ideas["#1"]
    assert (idea.status, idea.result) == ("done", "Found an injection in build_query, filed F1")


def test_rule_out_closes_the_idea_with_its_reason(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    ruled = horde("member-1", "rule-out", id="#1", reason="not exploitable: inputs are typed")

    assert (ruled.ok, ruled.id) == (True, "#1")
    assert ruled.text.startswith("ok #1 ruled out.")
    idea = horde.state().ideas["#1"]
    assert (idea.status, idea.result) == ("ruled-out", "not exploitable: inputs are typed")


def test_drop_returns_the_idea_to_the_open_pool(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    dropped = horde("member-1", "drop", id="#1", reason="out of time")

    assert (dropped.ok, dropped.id, dropped.text) == (
        True,
        "#1",
        "ok #1 released to the open pool",
    )
    idea = horde.state().ideas["#1"]
    assert (idea.status, idea.owner) == ("open", None)
    assert horde("member-2", "claim", id="#1").ok


def test_closing_the_last_held_idea_nudges_towards_open_ones(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-2", "idea", text="Audit app/web/login.py")

    done = horde("member-1", "done", id="#1", result="filed F1")

    assert done.ok
    assert "You now hold no idea; 1 open idea(s) remain (#2): claim one" in done.text


def test_closing_an_already_closed_idea_is_refused(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-1", "done", id="#1", result="filed F1")

    again = horde("member-1", "rule-out", id="#1", reason="changed my mind")

    assert (again.ok, again.id) == (False, None)
    assert again.text.startswith("refused: #1 is already done; nothing to rule out")
    assert horde.state().ideas["#1"].status == "done"


def test_two_different_bugs_in_one_file_are_not_duplicates(horde):
    """A shared path is a shared place, not a shared bug: the words around it decide."""
    first = horde("member-1", "idea", text="Check app.py for a hard-coded password")
    second = horde("member-2", "idea", text="Check login() in app.py for timing attacks")
    third = horde("member-3", "idea", text="Look for a hard-coded password in app.py")
    assert (first.id, second.id) == ("#1", "#2")
    assert third.id == "#1" and third.text.startswith("duplicate of #1")
