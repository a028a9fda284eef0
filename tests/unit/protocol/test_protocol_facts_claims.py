"""Facts (dedup, provisional on open work) and the life of a C# claim."""

from __future__ import annotations

import pytest

from horde_tui.store.ledgers.facts import is_provisional

# -- facts ----------------------------------------------------------------------------


def test_duplicate_fact_returns_existing_id_and_records_the_confirmer(horde):
    first = horde("member-1", "fact", text="The server runs Python 3.12 under gunicorn")
    again = horde("member-2", "fact", text="the server runs python 3.12 under gunicorn")

    assert (first.ok, first.id, first.text) == (True, "T1", "ok T1 recorded.")
    assert (again.ok, again.id) == (True, "T1")
    assert again.text.startswith("duplicate of T1; recorded you as confirming it")
    state = horde.state()
    assert list(state.facts) == ["T1"]
    assert state.facts["T1"].corroborators == ["member-2"]


def test_fact_sharing_a_path_with_a_claimed_idea_is_provisional_on_it(horde):
    horde.claimed("member-1", "Audit session handling in app/auth/session.py")

    fact = horde("member-2", "fact", text="app/auth/session.py keeps tokens in a module dict")

    assert (fact.ok, fact.id) == (True, "T1")
    assert "Recorded as provisional on #1, which is still being audited" in fact.text
    state = horde.state()
    assert state.facts["T1"].provisional_on == "#1"
    assert is_provisional(state, state.facts["T1"])
    assert (
        "T1 app/auth/session.py keeps tokens in a module dict (by member-2, run r1) **provisional on #1**"
        in (horde.root / "FACTS.md").read_text()
    )


def test_fact_naming_an_open_idea_by_number_is_provisional_on_it(horde):
    horde("member-1", "idea", text="Work out which login backend is active")

    fact = horde("member-2", "fact", text="LDAP is configured, see #1")

    assert fact.ok
    assert horde.state().facts["T1"].provisional_on == "#1"


def test_unrelated_fact_is_not_provisional(horde):
    horde.claimed("member-1", "Audit session handling in app/auth/session.py")

    fact = horde("member-2", "fact", text="The container image is based on debian bookworm")

    assert (fact.ok, fact.text) == (True, "ok T1 recorded.")
    state = horde.state()
    assert state.facts["T1"].provisional_on is None
    assert "provisional on" not in (horde.root / "FACTS.md").read_text()


def test_fact_about_a_closed_idea_is_not_provisional(horde):
    horde.claimed("member-1", "Audit session handling in app/auth/session.py")
    horde("member-1", "done", id="#1", result="filed F1")

    fact = horde("member-2", "fact", text="app/auth/session.py keeps tokens in a module dict")

    assert fact.ok
    assert horde.state().facts["T1"].provisional_on is None


def test_provisional_fact_firms_up_once_its_idea_is_done(horde):
    horde.claimed("member-1", "Audit session handling in app/auth/session.py")
    horde("member-2", "fact", text="app/auth/session.py keeps tokens in a module dict")

    assert horde("member-1", "done", id="#1", result="filed F1").ok

    state = horde.state()
    assert state.facts["T1"].provisional_on == "#1"  # the record keeps its subject
    assert not is_provisional(state, state.facts["T1"])
    # A read renders from the folded state, so it is current.
    assert "provisional on" not in horde("member-2", "facts").text


def test_facts_md_drops_provisional_marker_once_its_idea_is_done(horde):
    horde.claimed("member-1", "Audit session handling in app/auth/session.py")
    horde("member-2", "fact", text="app/auth/session.py keeps tokens in a module dict")

    horde("member-1", "done", id="#1", result="filed F1")

    assert "provisional on" not in (horde.root / "FACTS.md").read_text()


def test_fact_about_a_contested_claim_is_provisional_until_the_claim_is_retracted(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")
    horde("member-2", "contest", id="C1", text="/admin/export skips the check")

    fact = horde("member-3", "fact", text="Per C1, admin logins go through the 2FA middleware")

    assert "Recorded as provisional on C1" in fact.text
    state = horde.state()
    assert is_provisional(state, state.facts["T1"])
    horde("member-1", "retract", id="C1", text="export bypasses it")
    state = horde.state()
    assert not is_provisional(state, state.facts["T1"])
    assert "provisional on" not in (horde.root / "FACTS.md").read_text()


def test_fact_delta_extends_an_existing_fact_without_dedup(horde):
    horde("member-1", "fact", text="The server runs Python 3.12 under gunicorn")

    delta = horde(
        "member-2", "fact", text="The server runs Python 3.12 under gunicorn", deltaOf="T1"
    )

    assert (delta.ok, delta.id) == (True, "T2")
    assert horde.state().facts["T2"].delta_of == "T1"


# -- claims -----------------------------------------------------------------------------


def test_assert_creates_a_claim(horde):
    made = horde("member-1", "assert", text="The admin panel requires 2FA")

    assert (made.ok, made.id, made.text) == (True, "C1", "ok C1 asserted")
    claim = horde.state().claims["C1"]
    assert (claim.status, claim.by) == ("asserted", "member-1")


def test_asserting_a_live_claim_again_is_refused(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    again = horde("member-2", "assert", text="the admin panel requires 2FA")

    assert (again.ok, again.id) == (False, None)
    assert again.text.startswith("refused: C1 already asserts this (asserted, by member-1)")
    assert list(horde.state().claims) == ["C1"]


def test_confirming_your_own_claim_is_refused(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    own = horde("member-1", "confirm", id="C1")

    assert (own.ok, own.id) == (False, None)
    assert own.text.startswith("refused: C1 is your own claim (a confirmation must be independent)")
    claim = horde.state().claims["C1"]
    assert (claim.status, claim.confirmers) == ("asserted", [])


def test_another_member_confirms_a_claim(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    ok = horde("member-2", "confirm", id="C1", text="checked the middleware")

    assert (ok.ok, ok.id, ok.text) == (True, "C1", "ok C1 confirmed")
    claim = horde.state().claims["C1"]
    assert (claim.status, claim.confirmers) == ("confirmed", ["member-2"])


def test_contesting_your_own_claim_is_refused(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    own = horde("member-1", "contest", id="C1", text="not sure any more")

    assert (own.ok, own.id) == (False, None)
    assert own.text.startswith("refused: C1 is your own claim; retract it or supersede it")
    assert horde.state().claims["C1"].status == "asserted"


def test_another_member_contests_a_claim(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    ok = horde("member-2", "contest", id="C1", text="/admin/export skips the check")

    assert (ok.ok, ok.id, ok.text) == (True, "C1", "ok C1 contested")
    claim = horde.state().claims["C1"]
    assert (claim.status, claim.contesters) == ("contested", ["member-2"])


def test_retracting_another_members_claim_is_refused(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    other = horde("member-2", "retract", id="C1")

    assert (other.ok, other.id) == (False, None)
    assert other.text.startswith(
        "refused: C1 belongs to member-1 (only its author retracts a claim)"
    )
    assert horde.state().claims["C1"].status == "asserted"


def test_author_retracts_own_claim(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    ok = horde("member-1", "retract", id="C1", text="misread the config")

    assert (ok.ok, ok.id, ok.text) == (True, "C1", "ok C1 retracted")
    assert horde.state().claims["C1"].status == "retracted"


def test_supersede_creates_a_new_claim_and_marks_the_old_one(horde):
    horde("member-1", "assert", text="The admin panel requires 2FA")

    new = horde(
        "member-2", "supersede", id="C1", text="The admin panel requires 2FA except /export"
    )

    assert (new.ok, new.id, new.text) == (True, "C2", "ok C2 asserted, superseding C1")
    state = horde.state()
    old, fresh = state.claims["C1"], state.claims["C2"]
    assert (old.status, old.superseded_by) == ("superseded", "C2")
    assert (fresh.status, fresh.supersedes, fresh.by) == ("asserted", "C1", "member-2")


@pytest.mark.parametrize(
    ("action", "actor", "fields", "verb"),
    [
        ("confirm", "member-2", {}, "confirmed"),
        ("contest", "member-2", {"text": "no"}, "contested"),
        ("retract", "member-1", {}, "retracted"),
        ("supersede", "member-2", {"text": "Something else entirely"}, "superseded"),
    ],
)
@pytest.mark.parametrize("ended", ["retracted", "superseded"])
def test_acting_on_a_retracted_or_superseded_claim_is_refused(
    horde, ended, action, actor, fields, verb
):
    horde("member-1", "assert", text="The admin panel requires 2FA")
    if ended == "retracted":
        horde("member-1", "retract", id="C1")
    else:
        horde("member-1", "supersede", id="C1", text="Only admins with a token need 2FA")
    claims_before = len(horde.state().claims)

    late = horde(actor, action, id="C1", **fields)

    assert (late.ok, late.id) == (False, None)
    by = " by C2" if ended == "superseded" else ""
    assert late.text.startswith(f"refused: C1 is {ended}{by}; only a live claim can be {verb}")
    state = horde.state()
    assert state.claims["C1"].status == ended
    assert len(state.claims) == claims_before


def test_acting_on_a_missing_claim_is_refused_naming_it(horde):
    missing = horde("member-2", "confirm", id="C9")

    assert (missing.ok, missing.id, missing.exit_code) == (False, None, 1)
    assert missing.text.startswith("refused: C9 does not exist (highest is none yet)")
