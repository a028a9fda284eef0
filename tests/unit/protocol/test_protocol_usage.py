"""Call-level behaviour: wind-down, retries, the event log, receipts and usage errors."""

from __future__ import annotations

import pytest

from horde_tui.protocol.params import TEXT_CAP

# -- wind-down ---------------------------------------------------------------------


@pytest.fixture
def winding_down(horde):
    """member-1 holds #1 and #2, #3 is open, then a clean stop is requested."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-1", "Audit app/web/login.py")
    horde("member-2", "idea", text="Audit app/api/search.py")
    (horde.root / "runs" / "r1" / ".stop-clean").write_text("")
    return horde


@pytest.mark.parametrize(
    ("action", "fields"),
    [
        ("idea", {"text": "Audit app/cli/main.py"}),
        ("claim", {"id": "#3"}),
        ("assert", {"text": "The admin panel requires 2FA"}),
        ("resource", {"name": "lab"}),
    ],
)
def test_wind_down_refuses_new_work(winding_down, action, fields):
    horde = winding_down
    before = horde.ledger_bytes()

    result = horde("member-2", action, **fields)

    assert (result.ok, result.id, result.exit_code) == (False, None, 1)
    assert result.text.startswith(
        f"refused: `{action}` during wind-down (a clean stop was requested)"
    )
    assert horde.ledger_bytes() == before


@pytest.mark.parametrize(
    ("action", "fields", "entry"),
    [
        ("post", {"text": "Wrapping up: F1 filed"}, None),
        ("done", {"id": "#1", "result": "filed F1"}, "#1"),
        ("drop", {"id": "#1"}, "#1"),
        ("rule-out", {"id": "#1", "reason": "typed inputs only"}, "#1"),
        (
            "finding",
            {
                "idea": "#1",
                "text": "SQL injection in build_query()",
                "concern": "sql-injection",
                "concernDef": "SQL built from untrusted input",
            },
            "F1",
        ),
    ],
)
def test_wind_down_still_accepts_closing_work(winding_down, action, fields, entry):
    result = winding_down("member-1", action, **fields)

    assert (result.ok, result.id) == (True, entry)


@pytest.mark.parametrize("action", ["list", "findings", "facts", "claims", "resources", "concerns"])
def test_wind_down_still_accepts_reads(winding_down, action):
    result = winding_down("member-2", action)

    assert (result.ok, result.exit_code) == (True, 0)


# -- idempotency ---------------------------------------------------------------------


def test_retry_with_same_request_id_returns_first_result_and_writes_nothing(horde):
    first = horde("member-1", "idea", text="Audit app/db/query.py", requestId="q1")
    ledger, events = horde.ledger_bytes(), horde.events()

    retry = horde("member-1", "idea", text="Audit app/db/query.py", requestId="q1")

    assert (first.ok, first.id) == (True, "#1")
    assert (retry.ok, retry.id) == (True, "#1")
    assert retry.text == first.text + " (replayed: same requestId)"
    assert retry.event == first.event
    assert horde.ledger_bytes() == ledger
    assert horde.events() == events


def test_retry_of_a_refusal_replays_the_refusal(horde):
    horde.claimed("member-2", "Audit app/db/query.py")
    first = horde("member-1", "claim", id="#1", requestId="c1")
    horde("member-2", "drop", id="#1")

    retry = horde("member-1", "claim", id="#1", requestId="c1")

    assert (retry.ok, retry.id) == (False, None)
    assert retry.text == first.text + " (replayed: same requestId)"
    assert horde.state().ideas["#1"].status == "open"


def test_same_request_id_from_another_actor_is_a_new_request(horde):
    horde("member-1", "idea", text="Audit app/db/query.py", requestId="q1")

    other = horde("member-2", "idea", text="Audit app/web/login.py", requestId="q1")

    assert (other.ok, other.id) == (True, "#2")
    assert "replayed" not in other.text
    assert sorted(horde.state().ideas) == ["#1", "#2"]


# -- events -------------------------------------------------------------------------------


def test_every_write_records_intent_and_outcome_with_sequential_ids(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")
    horde("member-1", "claim", id="#1")
    refused = horde("member-2", "claim", id="#1")

    events = horde.events()

    assert [e["id"] for e in events] == ["E1", "E2", "E3", "E4", "E5", "E6"]
    assert [(e["type"], e["actor"], e["action"]) for e in events] == [
        ("intent", "member-1", "idea"),
        ("outcome", "member-1", "idea"),
        ("intent", "member-1", "claim"),
        ("outcome", "member-1", "claim"),
        ("intent", "member-2", "claim"),
        ("outcome", "member-2", "claim"),
    ]
    assert events[0]["params"] == {"text": "Audit app/db/query.py"}
    assert (events[1]["ok"], events[1]["entry"], events[1]["outcome"]) == (True, "#1", "created")
    assert (events[5]["ok"], events[5]["outcome"]) == (False, "refused")
    assert events[5]["text"] == refused.text
    assert refused.event == "E6"


def test_reads_and_usage_errors_record_no_events(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")
    before = horde.events()

    horde("member-1", "list")
    horde("member-1", "inspect", target="#1")
    horde("member-1", "idea")

    assert horde.events() == before


# -- receipts ------------------------------------------------------------------------------


def test_write_receipts_do_not_echo_submitted_prose(horde):
    prose = {
        "idea": "Zebra-1 audit app/db/query.py for injection",
        "done": "Zebra-2 found an injection, filed F1",
        "finding": "Zebra-3 SQL injection in build_query()",
        "evidence": "Zebra-4 app/db/query.py:42",
        "fact": "Zebra-5 the database is postgres 16",
        "assert": "Zebra-6 the admin panel requires 2FA",
        "post": "Zebra-7 halfway there",
        "solved": "Zebra-8 the app is injectable via F1",
    }
    receipts = [
        horde("member-1", "idea", text=prose["idea"]),
        horde("member-1", "claim", id="#1"),
        horde(
            "member-1",
            "finding",
            text=prose["finding"],
            evidence=prose["evidence"],
            concern="sql-injection",
            concernDef="SQL built from untrusted input",
        ),
        horde("member-1", "done", id="#1", result=prose["done"]),
        horde("member-1", "fact", text=prose["fact"]),
        horde("member-1", "assert", text=prose["assert"]),
        horde("member-1", "post", text=prose["post"]),
        horde("member-1", "solved", text=prose["solved"], cites=["F1"]),
    ]

    assert all(r.ok for r in receipts), [r.text for r in receipts]
    for receipt in receipts:
        assert "Zebra" not in receipt.text


# -- usage errors and refusals --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"action": "bogus"}, "usage: unknown action 'bogus'; actions: amend, assert, claim"),
        ({}, "usage: field 'action' is required; actions: "),
        ({"action": "idea"}, "usage: field 'text' is required for action 'idea'"),
        ({"action": "claim"}, "usage: field 'id' is required for action 'claim'"),
        ({"action": "idea", "text": 5}, "usage: field 'text' must be a string, got 5"),
        (
            {"action": "finding", "text": "x", "concernNew": "maybe"},
            "usage: field 'concernNew' must be true or false, got 'maybe'",
        ),
        (
            {"action": "solved", "text": "x", "cites": 5},
            'usage: field \'cites\' must be a list of ids such as ["F1", "T2"], got 5',
        ),
        (
            {"action": "idea", "text": "x", "foo": 1},
            "usage: field 'foo' is not accepted by action 'idea' (accepted: requestId, text)",
        ),
    ],
)
def test_malformed_calls_are_usage_errors_and_write_nothing(horde, raw, message):
    from horde_tui.protocol import run_action

    result = run_action(horde.store("member-1"), raw, run="r1")

    assert (result.ok, result.id, result.exit_code, result.usage_error) == (False, None, 2, True)
    assert result.text.startswith(message)
    assert horde.ledger_bytes() == b""
    assert horde.events() == []


def test_invalid_run_id_is_a_usage_error_not_a_crash(horde):
    result = horde("member-1", "idea", run="../escape", text="Audit app/db/query.py")

    assert (result.ok, result.exit_code) == (False, 2)
    assert result.text.startswith("usage: invalid run id '../escape'")
    assert not (horde.root / "escape").exists()


@pytest.mark.parametrize(
    ("action", "fields", "message"),
    [
        ("claim", {"id": "#99"}, "refused: #99 does not exist (highest is #1); check `horde list`"),
        (
            "verify",
            {"id": "F7", "support": "tested"},
            "refused: F7 does not exist (highest is none yet)",
        ),
        (
            "fact",
            {"text": "x y z", "deltaOf": "T4"},
            "refused: T4 does not exist (highest is none yet)",
        ),
        ("claim", {"id": "F1"}, "refused: `id`='F1' is not a #N id"),
    ],
)
def test_unknown_ids_are_refusals_naming_the_id(horde, action, fields, message):
    horde("member-1", "idea", text="Audit app/db/query.py")

    result = horde("member-1", action, **fields)

    assert (result.ok, result.id, result.exit_code) == (False, None, 1)
    assert result.text.startswith(message)


def test_text_over_the_cap_is_refused_naming_the_cap_and_nothing_is_written(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")
    before = horde.ledger_bytes()

    long = horde("member-1", "idea", text="x" * (TEXT_CAP + 1))

    assert (long.ok, long.id, long.exit_code) == (False, None, 1)
    assert long.text.startswith(
        f"refused: `text` is {TEXT_CAP + 1} characters, over the cap of {TEXT_CAP} (size cap)"
    )
    assert horde.ledger_bytes() == before
    assert list(horde.state().ideas) == ["#1"]


def test_text_at_the_cap_is_accepted(horde):
    result = horde("member-1", "post", text="y" * TEXT_CAP)

    assert result.ok


def test_refusals_are_one_line_naming_the_rule_and_the_alternative(horde):
    """Members act on a refusal without asking: what, which rule, what to do instead."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde("member-1", "assert", text="The admin panel requires 2FA")
    horde("member-1", "retract", id="C1")
    calls = [
        ("member-2", "claim", {"id": "#1"}),
        ("member-2", "done", {"id": "#1", "result": "x"}),
        ("member-2", "post", {"text": "Plan: everything"}),
        ("member-2", "finding", {"text": "x", "concern": "a"}),
        ("member-1", "done", {"id": "#1", "result": "not exploitable"}),
        ("member-2", "confirm", {"id": "C1"}),
        ("member-2", "resource", {"name": "lab", "cleanup": "rm -rf /tmp/x"}),
        ("member-2", "confirm-solved", {}),
        ("member-1", "rule-out", {"id": "#1", "reason": "typed inputs"}),  # accepted
        ("member-1", "drop", {"id": "#1"}),
    ]
    refusals = [r.text for a, act, f in calls if not (r := horde(a, act, **f)).ok]

    assert len(refusals) == len(calls) - 1
    for text in refusals:
        assert "\n" not in text
        assert text.startswith("refused: ")
        assert "rule" in text or "two-phase" in text or "one owner per idea" in text, text
        assert ";" in text, text
