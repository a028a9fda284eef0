"""Findings: ownership, concern slugs, dedup per concern, settling, metadata, amend."""

from __future__ import annotations

import pytest

from horde_tui.store.ledgers.findings import classify, is_settled

SQLI = "sql-injection"
SQLI_DEF = "SQL built by concatenating untrusted input"
TEXT = "SQL injection in build_query() via the name parameter"
EVIDENCE = "app/db/query.py:42 concatenates request.args['name']"


def file_sqli(horde, actor="member-1", **extra):
    """File the standard SQL injection finding under the actor's only claimed idea."""
    fields = {"text": TEXT, "evidence": EVIDENCE, "concern": SQLI, "concernDef": SQLI_DEF}
    return horde(actor, "finding", **{**fields, **extra})


def review(horde, actor, target, revision, verdict, unchecked=""):
    """A V# record as the `review` action would write it (not part of this tool yet)."""
    vid = f"V{len(horde.state(actor).reviews) + 1}"
    horde.inject(
        actor,
        {
            "op": "review.add",
            "id": vid,
            "target": target,
            "revision": revision,
            "verdict": verdict,
            "support": "reproduced",
            "checked": "the whole claim",
            "unchecked": unchecked,
        },
    )
    return vid


@pytest.fixture
def three_members(horde):
    """member-1..3 each hold one idea (#1..#3)."""
    for n, text in enumerate(
        ["Audit app/db/query.py", "Audit app/web/login.py", "Audit app/api/search.py"], 1
    ):
        horde.claimed(f"member-{n}", text)
    return horde


# -- ownership ------------------------------------------------------------------


def test_finding_without_a_claimed_idea_is_refused(horde):
    result = file_sqli(horde)

    assert (result.ok, result.id, result.exit_code) == (False, None, 1)
    assert result.text.startswith("refused: no finding without a claimed idea (ownership rule)")
    assert horde.state().findings == {}


def test_member_holding_one_idea_may_omit_idea(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    result = file_sqli(horde, importance="high", confidence="medium")

    assert (result.ok, result.id) == (True, "F1")
    assert result.text == "ok F1 filed under #1 · concern sql-injection · r1 · unreviewed."
    f = horde.state().findings["F1"]
    assert (f.idea, f.concern, f.by, f.revision) == ("#1", SQLI, "member-1", 1)


def test_member_holding_two_ideas_must_name_one(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-1", "Audit app/web/login.py")

    unnamed = file_sqli(horde)
    named = file_sqli(horde, idea="#2")

    assert (unnamed.ok, unnamed.id) == (False, None)
    assert unnamed.text.startswith("refused: you hold 2 ideas (#1, #2); pass `idea`")
    assert (named.ok, named.id) == (True, "F1")
    assert horde.state().findings["F1"].idea == "#2"


def test_finding_under_an_idea_another_member_holds_is_refused(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/web/login.py")

    result = file_sqli(horde, actor="member-2", idea="#1")

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith("refused: #1 is held by member-1, not claimed by you")
    assert horde.state().findings == {}


@pytest.mark.parametrize("relation", ["deltaOf", "supersedes"])
def test_delta_and_correction_need_no_claim_and_inherit_slug_and_idea(three_members, relation):
    horde = three_members
    file_sqli(horde)
    horde("member-2", "drop", id="#2")  # member-2 now holds nothing

    child = horde(
        "member-2",
        "finding",
        text="The same sink is reachable via the sort parameter",
        evidence="app/db/query.py:57",
        concern="xss",  # ignored: the parent's slug wins
        **{relation: "F1"},
    )

    assert (child.ok, child.id) == (True, "F2")
    word = "delta of" if relation == "deltaOf" else "supersedes"
    assert (
        child.text == f"ok F2 filed under #1 · concern sql-injection · r1 · unreviewed · {word} F1."
    )
    state = horde.state()
    f2 = state.findings["F2"]
    assert (f2.concern, f2.idea, f2.by) == (SQLI, "#1", "member-2")
    assert "xss" not in state.concerns


# -- concerns -----------------------------------------------------------------------


def test_finding_without_a_concern_is_refused(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    result = horde("member-1", "finding", text=TEXT, evidence=EVIDENCE)

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith("refused: every finding names a `concern` slug (concerns rule)")


def test_new_concern_slug_needs_a_definition(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    result = horde("member-1", "finding", text=TEXT, evidence=EVIDENCE, concern=SQLI)

    assert (result.ok, result.id) == (False, None)
    assert result.text.startswith(
        "refused: concern `sql-injection` is new and needs `concernDef` (concerns rule)"
    )
    state = horde.state()
    assert (state.concerns, state.findings) == ({}, {})


def test_new_concern_with_definition_is_recorded(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    assert file_sqli(horde).ok

    concern = horde.state().concerns[SQLI]
    assert (concern.definition, concern.by) == (SQLI_DEF, "member-1")


@pytest.mark.parametrize(
    ("slug", "definition", "why"),
    [
        ("injection-sql", "Queries assembled from request data", "reordered words"),
        ("sql-injection-blind", "Boolean or time based inference", "added or dropped words"),
        ("sql", "Anything about SQL", "added or dropped words"),
        ("query-tampering", SQLI_DEF, "a near-identical definition"),
    ],
)
def test_look_alike_concern_slug_is_refused_unless_concern_new(
    three_members, slug, definition, why
):
    horde = three_members
    file_sqli(horde)
    fields = {
        "text": "Second-order injection in the report builder",
        "evidence": "app/api/search.py:12",
        "concern": slug,
        "concernDef": definition,
    }

    alike = horde("member-3", "finding", **fields)
    forced = horde("member-3", "finding", concernNew=True, **fields)

    assert (alike.ok, alike.id) == (False, None)
    assert alike.text.startswith(
        f"refused: concern `{slug}` looks like existing `sql-injection` ({why})"
    )
    assert "concernNew: true" in alike.text
    assert (forced.ok, forced.id) == (True, "F2")
    state = horde.state()
    assert sorted(state.concerns) == sorted([SQLI, slug])
    assert state.findings["F2"].concern == slug


# -- dedup ------------------------------------------------------------------------------


def test_duplicate_finding_returns_existing_id_and_records_corroborator(three_members):
    horde = three_members
    file_sqli(horde)

    again = file_sqli(horde, actor="member-2")

    assert (again.ok, again.id) == (True, "F1")
    assert again.text.startswith(
        "duplicate of F1 (concern sql-injection); recorded you as an independent corroborator"
    )
    state = horde.state()
    assert list(state.findings) == ["F1"]
    assert state.findings["F1"].corroborators == ["member-2"]
    assert is_settled(state, state.findings["F1"])


def test_same_text_under_two_concerns_makes_two_findings(three_members):
    horde = three_members
    file_sqli(horde)

    other = file_sqli(
        horde, actor="member-2", concern="data-exposure", concernDef="Secrets reach logs or users"
    )

    assert (other.ok, other.id) == (True, "F2")
    state = horde.state()
    assert [(f.id, f.concern) for f in state.findings.values()] == [
        ("F1", SQLI),
        ("F2", "data-exposure"),
    ]
    assert state.findings["F1"].corroborators == []


def test_similar_wording_about_different_files_is_not_a_duplicate(three_members):
    horde = three_members
    text = "SQL injection via the name parameter"
    file_sqli(horde, text=text, evidence="app/db/query.py:42 concatenates the name")

    other = file_sqli(
        horde, actor="member-2", text=text, evidence="app/db/users.py:42 concatenates the name"
    )

    assert (other.ok, other.id) == (True, "F2")
    assert horde.state().findings["F1"].corroborators == []


def test_third_duplicate_report_of_a_settled_finding_is_dropped(three_members):
    horde = three_members
    file_sqli(horde)
    file_sqli(horde, actor="member-2")

    third = file_sqli(horde, actor="member-3")

    # Not written, but it names the finding it re-found (its event too: a baseline delta
    # counts F1 as persisting).
    assert (third.ok, third.id, third.exit_code) == (False, "F1", 1)
    assert third.text.startswith("dropped: F1 is already settled (2 independent reports")
    last = horde.events()[-1]
    assert (last["outcome"], last["entry"]) == ("dropped", "F1")
    assert "deltaOf: F1" in third.text
    state = horde.state()
    assert list(state.findings) == ["F1"]
    assert state.findings["F1"].corroborators == ["member-2"]


def test_full_scope_review_settles_a_finding_so_a_duplicate_is_dropped(three_members):
    horde = three_members
    file_sqli(horde)
    review(horde, "member-3", "F1", 1, "supports")
    state = horde.state()
    assert classify(state, state.findings["F1"]) == "full"
    assert is_settled(state, state.findings["F1"])

    again = file_sqli(horde, actor="member-2")

    assert (again.ok, again.id) == (False, "F1")
    assert again.text.startswith("dropped: F1 is already settled (1 independent reports, full)")
    assert horde.state().findings["F1"].corroborators == []


def test_overlapping_report_of_a_settled_finding_is_told_to_bring_a_delta(three_members):
    horde = three_members
    file_sqli(horde)
    file_sqli(horde, actor="member-2")

    overlap = horde(
        "member-3",
        "finding",
        text="SQL injection through the name parameter of the search form",
        concern=SQLI,
    )

    assert (overlap.ok, overlap.id) == (False, None)
    assert overlap.text.startswith("refused: this overlaps settled F1 (reproductions rule)")
    assert overlap.text.endswith("bring a new vector as a finding with deltaOf: F1")
    assert list(horde.state().findings) == ["F1"]


def test_own_repeat_adds_nothing(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    file_sqli(horde)

    again = file_sqli(horde)

    assert (again.ok, again.id) == (True, "F1")
    assert "which you already reported or corroborated; nothing added" in again.text
    assert horde.state().findings["F1"].corroborators == []


# -- metadata and classification -------------------------------------------------


@pytest.mark.parametrize(
    ("field", "allowed"),
    [
        ("importance", "'critical', 'high', 'medium', 'low' or 'info'"),
        ("confidence", "'high', 'medium' or 'low'"),
        ("support", "'reproduced', 'tested', 'derived', 'sourced' or 'speculative'"),
    ],
)
def test_bad_metadata_value_is_a_usage_error_naming_allowed_values(horde, field, allowed):
    horde.claimed("member-1", "Audit app/db/query.py")
    before = horde.ledger_bytes()

    result = file_sqli(horde, **{field: "huge"})

    assert (result.ok, result.id, result.exit_code) == (False, None, 2)
    assert result.text == f"usage: field '{field}' must be one of {allowed}, got 'huge'"
    assert horde.ledger_bytes() == before


def test_metadata_is_stored_and_shown_as_a_label(horde):
    horde.claimed("member-1", "Audit app/db/query.py")

    file_sqli(horde, importance="critical", confidence="high", support="reproduced")

    f = horde.state().findings["F1"]
    assert (f.importance, f.confidence, f.support) == ("critical", "high", "reproduced")
    assert "### F1 [critical/high/reproduced]" in (horde.root / "FINDINGS.md").read_text()


def test_classification_is_unreviewed_by_default_and_superseded_after_a_correction(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    file_sqli(horde)
    state = horde.state()
    assert classify(state, state.findings["F1"]) == "unreviewed"

    fix = horde("member-1", "finding", text="Only the admin build_query() path", supersedes="F1")

    assert (fix.ok, fix.id) == (True, "F2")
    state = horde.state()
    assert state.findings["F1"].superseded_by == "F2"
    assert classify(state, state.findings["F1"]) == "superseded"
    assert classify(state, state.findings["F2"]) == "unreviewed"


@pytest.mark.parametrize(
    ("verdict", "unchecked", "expected"),
    [
        ("supports", "", "full"),
        ("supports", "the sort parameter", "limited"),
        ("partially-supports", "", "limited"),
        ("refutes", "", "disputed"),
    ],
)
def test_classification_follows_reviews_of_the_current_revision(
    three_members, verdict, unchecked, expected
):
    horde = three_members
    file_sqli(horde)

    review(horde, "member-3", "F1", 1, verdict, unchecked)

    state = horde.state()
    assert classify(state, state.findings["F1"]) == expected


def test_reporters_own_review_does_not_count(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    file_sqli(horde)

    review(horde, "member-1", "F1", 1, "supports")

    state = horde.state()
    assert classify(state, state.findings["F1"]) == "unreviewed"


def test_verify_records_a_reproduction_at_the_current_revision(three_members):
    horde = three_members
    file_sqli(horde)

    check = horde("member-3", "verify", id="F1", support="reproduced", text="curl returned rows")

    assert (check.ok, check.id) == (True, "F1")
    assert check.text == (
        "ok verification of F1 at r1 recorded (reproduced); a legacy label: only "
        "`review target=F1` with checked/unchecked counts as a review"
    )
    f = horde.state().findings["F1"]
    assert [(v.by, v.support, v.revision) for v in f.verifications] == [
        ("member-3", "reproduced", 1)
    ]


# -- amend ----------------------------------------------------------------------------------


def test_amend_is_owner_only(three_members):
    horde = three_members
    file_sqli(horde)

    other = horde("member-2", "amend", id="F1", text="Rewritten", note="clearer")

    assert (other.ok, other.id) == (False, None)
    assert other.text.startswith(
        "refused: F1 belongs to member-1 (amend rewrites only your own finding)"
    )
    f = horde.state().findings["F1"]
    assert (f.text, f.revision) == (TEXT, 1)


def test_amend_bumps_revision_clears_corroborators_and_keeps_verifications_as_history(
    three_members,
):
    horde = three_members
    file_sqli(horde)
    file_sqli(horde, actor="member-2")
    horde("member-3", "verify", id="F1", support="tested", text="rows leaked")
    review(horde, "member-3", "F1", 1, "supports")
    state = horde.state()
    assert classify(state, state.findings["F1"]) == "full"

    amended = horde(
        "member-1",
        "amend",
        id="F1",
        text="SQL injection in build_query() via name and sort",
        note="sort is affected too",
    )

    assert (amended.ok, amended.id) == (True, "F1")
    assert amended.text.startswith("ok F1 amended to r2")
    state = horde.state()
    f = state.findings["F1"]
    assert (f.revision, f.text) == (2, "SQL injection in build_query() via name and sort")
    assert f.corroborators == []
    assert f.verifications == []
    assert [n.what for n in f.history] == ["verified r1 (tested)", "amended to r2"]
    # The review checked r1; it stays pinned there and no longer classifies r2.
    assert state.reviews["V1"].revision == 1
    assert classify(state, f) == "unreviewed"
    assert not is_settled(state, f)


def test_amend_with_unchanged_text_is_refused(horde):
    horde.claimed("member-1", "Audit app/db/query.py")
    file_sqli(horde)

    same = horde("member-1", "amend", id="F1", text=TEXT, note="no change")

    assert (same.ok, same.id) == (False, None)
    assert same.text.startswith("refused: the new text equals F1's current text")
    assert horde.state().findings["F1"].revision == 1
