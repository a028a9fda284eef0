"""Reads: every ledger, `inspect` of every kind, and a hand-corrupted ledger line."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def busy(horde):
    """One entry of every kind, written by member-1 (member-2 holds #2)."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/web/login.py")
    horde(
        "member-1",
        "finding",
        text="SQL injection in build_query()\nThe name parameter is concatenated.",
        evidence="app/db/query.py:42 raw concatenation",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
        importance="high",
        confidence="medium",
        support="reproduced",
    )
    horde("member-1", "fact", text="The database is postgres 16")
    horde("member-1", "assert", text="The admin panel requires 2FA")
    horde("member-1", "resource", name="lab", path="lab/", cleanup="docker rm -f lab")
    return horde


def test_reads_record_nothing(busy):
    events, ledger = busy.events(), busy.ledger_bytes()

    for action in ["list", "findings", "facts", "claims", "resources", "concerns"]:
        assert busy("member-2", action).ok

    assert (busy.events(), busy.ledger_bytes()) == (events, ledger)


def test_list_shows_counts_holdings_and_each_idea(busy):
    result = busy("member-2", "list")

    assert (result.ok, result.id, result.exit_code) == (True, None, 0)
    assert result.text.startswith(
        "2 ideas: 0 open, 2 claimed, 0 done, 0 ruled out. You (member-2) hold: #2.\n"
    )
    assert (
        "- [~] #1 Audit app/db/query.py (by member-1, run r1; claimed by member-1)" in result.text
    )


def test_list_filters_by_owner(busy):
    result = busy("member-2", "list", owner="member-1")

    assert "#1 Audit app/db/query.py" in result.text
    assert "#2 Audit" not in result.text


def test_findings_compact_shows_one_line_per_finding(busy):
    result = busy("member-2", "findings")

    assert result.text.startswith(
        "1 findings:\n- F1 [high/medium/reproduced] SQL injection in build_query()"
    )
    assert "(#1 · sql-injection · member-1 · r1 · unreviewed)" in result.text
    assert "The name parameter is concatenated." not in result.text
    assert "raw concatenation" not in result.text


def test_findings_full_shows_body_and_evidence(busy):
    result = busy("member-2", "findings", detail="full")

    assert "### F1 [high/medium/reproduced] SQL injection in build_query()" in result.text
    assert "The name parameter is concatenated." in result.text
    assert "app/db/query.py:42 raw concatenation" in result.text


def test_findings_filter_by_concern(busy):
    assert "F1" in busy("member-2", "findings", concern="sql-injection").text
    assert busy("member-2", "findings", concern="xss").text == "No findings yet.\n"


@pytest.mark.parametrize(
    ("action", "line"),
    [
        ("facts", "- T1 The database is postgres 16 (by member-1, run r1)"),
        ("claims", "- C1 **asserted** The admin panel requires 2FA (by member-1, run r1)"),
        ("resources", "- R1 `lab`:  (owner member-1, run r1)"),
        ("concerns", "- `sql-injection`: SQL built from untrusted input (by member-1, run r1)"),
    ],
)
def test_ledger_reads_show_each_entry(busy, action, line):
    result = busy("member-2", action)

    assert (result.ok, result.id) == (True, None)
    assert line in result.text


@pytest.mark.parametrize(
    ("target", "key", "value"),
    [
        ("#1", "text", "Audit app/db/query.py"),
        ("2", "owner", "member-2"),
        ("T1", "text", "The database is postgres 16"),
        ("c1", "status", "asserted"),
        ("R1", "cleanup", "docker rm -f lab"),
    ],
)
def test_inspect_shows_one_entry_in_full(busy, target, key, value):
    result = busy("member-2", "inspect", target=target)

    assert (result.ok, result.id) == (True, None)
    assert json.loads(result.text)[key] == value


def test_inspect_finding_shows_body_and_evidence(busy):
    result = busy("member-2", "inspect", target="F1")

    assert result.text.startswith("### F1 [high/medium/reproduced] SQL injection in build_query()")
    assert "app/db/query.py:42 raw concatenation" in result.text


def test_inspect_event_shows_the_full_submission(busy):
    intent = busy("member-2", "inspect", target="E1")

    event = json.loads(intent.text)
    assert (event["id"], event["type"], event["action"]) == ("E1", "intent", "idea")
    assert event["params"] == {"text": "Audit app/db/query.py"}


def test_inspect_event_matches_the_event_id_not_an_id_in_params(horde):
    horde("member-1", "idea", text="Audit app/db/query.py")
    horde("member-1", "claim", id="E9")  # refused, but its intent holds "id":"E9"

    missing = horde("member-1", "inspect", target="E9")
    third = horde("member-1", "inspect", target="E3")

    assert (missing.ok, missing.exit_code) == (False, 1)
    assert missing.text.startswith("refused: E9 does not exist in run r1's events.jsonl")
    assert json.loads(third.text)["params"] == {"id": "E9"}


def test_inspect_answer(busy):
    assert busy("member-2", "inspect", target="answer").text == (
        "No answer has been proposed in run r1.\n"
    )
    busy("member-1", "solved", text="Injectable, see F1", cites=["F1"])

    result = busy("member-2", "inspect", target="answer")

    assert result.text.startswith("# Answer (run r1, round 1)\n\nStatus: proposed")
    assert "Injectable, see F1" in result.text


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("F9", "refused: F9 does not exist (highest is F1); check `horde findings`"),
        ("X1", "refused: cannot inspect 'X1'; give #N, F#, T#, C#, R#, V#, E# or 'answer'"),
    ],
)
def test_inspect_of_an_unknown_target_is_refused(busy, target, message):
    result = busy("member-2", "inspect", target=target)

    assert (result.ok, result.exit_code, result.text) == (False, 1, message)


def corrupt_line(horde, line_no):
    """Overwrite one line of ledger.jsonl by hand, as a person with an editor might."""
    ledger = horde.root / "ledger.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    lines[line_no - 1] = '{"op": "idea.claim", broken\n'
    ledger.write_text("".join(lines))


def test_corrupt_middle_line_is_reported_skipped_and_writes_keep_working(horde):
    for text in ["Audit app/db/query.py", "Audit app/web/login.py", "Audit app/api/search.py"]:
        horde("member-1", "idea", text=text)
    horde("member-1", "claim", id="#2")  # line 5: run.start, 3 ideas, this claim
    corrupt_line(horde, 5)
    reader = type(horde)(horde.workdir)  # a fresh process reading the file

    listing = reader("member-2", "list")
    added = reader("member-2", "idea", text="Audit app/cli/main.py for shell injection")

    assert listing.ok
    assert "Warnings:\n- ledger.jsonl line 5 is not a valid record" in listing.text
    assert "skipped and left in the file" in listing.text
    assert (added.ok, added.id) == (True, "#4")
    state = reader.state("member-2")
    assert state.ideas["#2"].status == "open"  # the claim was on the corrupt line
    assert sorted(state.ideas) == ["#1", "#2", "#3", "#4"]
    assert "## Skipped ledger lines" in (horde.root / "IDEAS.md").read_text()
    assert "broken" in (horde.root / "ledger.jsonl").read_text().splitlines()[4]


def test_corrupt_line_holding_an_entry_does_not_make_ids_reuse(horde):
    for text in ["Audit app/db/query.py", "Audit app/web/login.py", "Audit app/api/search.py"]:
        horde("member-1", "idea", text=text)
    corrupt_line(horde, 2)  # the idea.add of #1
    reader = type(horde)(horde.workdir)

    added = reader("member-2", "idea", text="Audit app/cli/main.py for shell injection")

    assert (added.ok, added.id) == (True, "#4")
    state = reader.state("member-2")
    assert state.ideas["#3"].text == "Audit app/api/search.py"
    assert state.ideas["#4"].text == "Audit app/cli/main.py for shell injection"


def test_unknown_id_refusal_names_the_highest_id_despite_a_gap(horde):
    for text in ["Audit app/db/query.py", "Audit app/web/login.py", "Audit app/api/search.py"]:
        horde("member-1", "idea", text=text)
    corrupt_line(horde, 2)  # the idea.add of #1
    reader = type(horde)(horde.workdir)

    missing = reader("member-2", "claim", id="#9")

    assert (missing.ok, missing.exit_code) == (False, 1)
    assert missing.text.startswith("refused: #9 does not exist (highest is #3)")
