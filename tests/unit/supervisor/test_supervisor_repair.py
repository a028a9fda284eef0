"""The repair phase's rules, as pure functions of the folded ledger: who is owed work,
how demand sizes the budgets, and which threads are served first.

The whole phase with real member processes is in test_supervisor_e2e.py.
"""

from __future__ import annotations

import pytest

from horde_tui.common.settings import load_settings
from horde_tui.supervisor.repair import (
    blocks,
    budgets,
    count_progress,
    demand,
    owed,
    serving_order,
    unit_shares,
)


@pytest.fixture
def proposed(horde):
    """member-1 filed F1 and proposed an answer citing it; member-2 and member-3 hold ideas."""
    horde.claimed("member-1", "Audit app/db/query.py")
    horde.claimed("member-2", "Audit app/auth/session.py")
    horde.claimed("member-3", "Audit app/api/routes.py")
    assert horde(
        "member-1",
        "finding",
        text="SQL injection in build_query()",
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    ).ok
    assert horde("member-1", "solved", text="The app is injectable, see F1", cites=["F1"]).ok
    return horde


def ids(threads) -> list[str]:
    return [t.id for t in threads]


def test_a_request_about_the_pending_answer_is_owed_with_the_blockers(proposed):
    horde = proposed
    about = horde(
        "member-2", "message", to="member-1", kind="question", text="Why F1 only?", target="answer"
    )
    plain = horde("member-3", "message", to="member-1", kind="question", text="Which DB?")
    assert (about.id, plain.id) == ("Q1", "Q2")

    state = horde.state()

    # The plain question is not repair work; the one about the pending answer is, and
    # it blocks like a blocker.
    assert ids(owed(state, "member-1")) == ["Q1"]
    assert blocks(state, state.threads["Q1"]) and not blocks(state, state.threads["Q2"])
    assert demand(state, owed(state, "member-1")) == 1


def test_once_answered_the_request_waits_on_its_sender_to_resolve_it(proposed):
    horde = proposed
    horde(
        "member-2", "message", to="member-1", kind="question", text="Why F1 only?", target="answer"
    )
    assert horde("member-1", "respond", id="Q1", text="only F1 reproduces").ok

    state = horde.state()

    assert ids(owed(state, "member-1")) == []
    assert ids(owed(state, "member-2")) == ["Q1"]
    assert blocks(state, state.threads["Q1"])


def test_a_request_about_an_answer_no_longer_pending_is_ordinary(proposed):
    horde = proposed
    horde(
        "member-2", "message", to="member-1", kind="question", text="Why F1 only?", target="answer"
    )
    assert horde("member-3", "confirm-solved", text="reproduced F1").ok

    state = horde.state()

    assert ids(owed(state, "member-1")) == []
    assert not blocks(state, state.threads["Q1"])


def test_blocking_threads_come_first_and_demand_counts_each_weighty_one(proposed):
    horde = proposed
    sent = [
        horde("member-2", "message", to="member-1", kind="review-request", text="Check #2"),
        horde(
            "member-3",
            "message",
            to="member-1",
            kind="question",
            text="Sure about F1?",
            target="answer",
        ),
        horde("member-2", "message", to="member-1", kind="blocker", text="F1 cites a wrong line"),
        horde("member-3", "message", to="member-2", kind="review-request", text="Check #3"),
    ]
    assert [r.id for r in sent] == ["Q1", "Q2", "Q3", "Q4"]

    state = horde.state()
    queue_1 = owed(state, "member-1")

    # Blocker and answer request first (ledger order among them), the review request last.
    assert ids(queue_1) == ["Q2", "Q3", "Q1"]
    assert demand(state, queue_1) == 3
    assert demand(state, owed(state, "member-2")) == 1
    assert demand(state, []) == 0
    # member-1's queue blocks and member-2's does not, so member-1 is served first even
    # though member-2 comes first in member order.
    work = {"member-2": owed(state, "member-2"), "member-1": queue_1}
    assert serving_order(state, work) == ["member-1", "member-2"]


def test_budgets_follow_demand_up_to_six_units_plus_two_recheck_shares():
    cfg = load_settings(environ={}, overrides={"repair_min_ms": 1000, "repair_min_tokens": 100})

    assert budgets(cfg, 1) == (3000, 300)
    assert budgets(cfg, 3) == (5000, 500)
    assert budgets(cfg, 10) == (8000, 800)


def test_flat_repair_totals_override_the_demand_sizing():
    cfg = load_settings(
        environ={}, overrides={"repair_ms": 7000, "repair_tokens": 900, "repair_min_ms": 1000}
    )

    assert budgets(cfg, 10) == (7000, 900)


def test_only_completed_attempts_that_leave_a_thread_unchanged_count_toward_holding_it():
    counts: dict[tuple[str, str], int] = {}

    count_progress(counts, "member-1", ["Q1", "Q2"], ["Q1", "Q2"], completed=True)
    count_progress(counts, "member-1", ["Q1", "Q2"], ["Q1"], completed=True)
    assert counts == {("member-1", "Q1"): 2, ("member-1", "Q2"): 0}

    # Stopped at its turn cap (or its time share): no fair chance, nothing counted...
    count_progress(counts, "member-1", ["Q2"], ["Q2"], completed=False)
    assert counts[("member-1", "Q2")] == 0
    # ...but a thread it did move still starts over.
    count_progress(counts, "member-1", ["Q1"], [], completed=False)
    assert counts[("member-1", "Q1")] == 0


def test_each_unit_gets_its_token_share_and_time_is_split_among_the_units_tokens_fund():
    cfg = load_settings(environ={}, overrides={"repair_min_ms": 1000, "repair_min_tokens": 100})

    # Demand-sized: one unit plus two recheck shares; an attempt of one unit gets a third.
    assert unit_shares(cfg, 1, *budgets(cfg, 1)) == (1000, 100)
    # Ten units: the totals cover eight floors, so each unit still gets its floor.
    assert unit_shares(cfg, 10, *budgets(cfg, 10)) == (1000, 100)
    # A flat token total that funds two units of six: the time goes to those two.
    flat = load_settings(
        environ={},
        overrides={
            "repair_ms": 60_000,
            "repair_tokens": 200,
            "repair_min_ms": 1000,
            "repair_min_tokens": 100,
        },
    )
    assert unit_shares(flat, 6, *budgets(flat, 6)) == (30_000, 100)
    # Plenty of tokens: time and tokens are cut into the same eight shares.
    rich = load_settings(
        environ={},
        overrides={"repair_ms": 80_000, "repair_tokens": 800_000, "repair_min_ms": 1000},
    )
    assert unit_shares(rich, 6, *budgets(rich, 6)) == (10_000, 100_000)
