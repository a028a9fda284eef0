"""Every exit cause means the same thing everywhere: the table, the event log, the report
and the supervisor's reset rule, all read from `store.causes`.

`turns` (a session stopped at its turn cap while it still wanted a turn, as repair
attempts are) is a normal end: painted as capped, logged as a warning, never reset,
never marked partial. `stopped by user` is an abnormal end for the report (the
reference lists it among them: `partial` after work) but not the member's failure:
painted capped, logged as a warning.
"""

from __future__ import annotations

import pytest

from horde_tui.app.hosting import print_event
from horde_tui.store import causes
from horde_tui.store.causes import (
    ABNORMAL_CAUSES,
    FINISHED_CAUSES,
    HANDOFF,
    MEMBER_EXIT_CAUSES,
    RESET_CAUSES,
    STATUS_CLASSES,
    status_class,
)
from horde_tui.store.display import end_label, is_partial
from horde_tui.store.members import MemberState
from horde_tui.supervisor.observe import SupervisorEvent
from horde_tui.view.events import event_parts

EXPECTED = {
    # cause: (table class, log level, partial after work, reset)
    "completed": ("done", "info", False, False),
    "turns": ("capped", "warn", False, False),
    "model_error": ("failed", "error", True, True),
    "no_output": ("failed", "error", True, True),
    "killed": ("failed", "error", True, False),
    "exit_nonzero": ("failed", "error", True, True),
    "looping": ("failed", "error", True, True),
}

SUPERVISOR_EXPECTED = {
    # causes the supervisor records for a member (the member never names them)
    "no-ledger-progress": ("failed", "error", True, True),
    "stalled": ("failed", "error", True, True),  # its name in runs before issue 28
    "silent": ("failed", "error", True, False),
    "stopped by user": ("capped", "warn", True, False),
    "reset by user": ("done", "info", False, False),
    "handoff": ("done", "info", False, False),
}
ALL_EXPECTED = EXPECTED | SUPERVISOR_EXPECTED


def test_every_member_exit_cause_is_mapped():
    assert set(EXPECTED) == set(MEMBER_EXIT_CAUSES)
    assert {"completed", "turns"} == FINISHED_CAUSES
    assert not FINISHED_CAUSES & (ABNORMAL_CAUSES | RESET_CAUSES)


def test_the_table_names_every_cause_any_place_classifies():
    assert set(ALL_EXPECTED) == set(causes.CAUSES)
    assert set(MEMBER_EXIT_CAUSES) <= set(causes.CAUSES)


@pytest.mark.parametrize("cause", sorted(ALL_EXPECTED))
def test_a_cause_maps_the_same_in_table_log_report_and_resets(cause: str):
    """Every place that classifies an exit cause: the member table's colour, the event
    log's level, the report's partial marker and the reset rule."""
    table, level, partial, reset = ALL_EXPECTED[cause]
    member = MemberState("member-2", "member", turns=3, exit_cause=cause, status="exited")

    record = {"type": "lifecycle", "kind": "member-exit", "member": "member-2", "cause": cause}
    line = event_parts(record, 0)

    assert status_class("exited", cause) == table
    assert table in STATUS_CLASSES
    assert (line.label, line.level) == ("member-exit", level)
    assert is_partial(member) is partial
    assert end_label(member) == (f"{cause}, partial" if partial else cause)
    assert (cause in RESET_CAUSES) is reset


def test_a_handed_off_session_is_neither_failed_nor_reset_nor_partial():
    """`handoff` is recorded by the supervisor (the member never names it): the session
    goes on in another process, so it is painted and logged as an ordinary end."""
    member = MemberState("member-2", "member", turns=3, exit_cause=HANDOFF, status="exited")
    record = {"type": "lifecycle", "kind": "member-exit", "member": "member-2", "cause": HANDOFF}

    assert HANDOFF not in MEMBER_EXIT_CAUSES
    assert status_class("exited", HANDOFF) == "done"
    assert event_parts(record, 0).level == "info"
    assert not is_partial(member) and end_label(member) == HANDOFF
    assert HANDOFF not in RESET_CAUSES | FINISHED_CAUSES | ABNORMAL_CAUSES


def test_headless_prints_a_capped_session_with_its_cause_and_why(capsys):
    data = {
        "type": "exit",
        "cause": "turns",
        "turns": 40,
        "detail": "turn cap of 40 reached; messages were still waiting to be read",
    }

    print_event(SupervisorEvent("member-status", "member-2", data))

    line = capsys.readouterr().out.strip()
    assert line.endswith(
        " member-2: exit turns after 40 turns (turn cap of 40 reached; messages were still "
        "waiting to be read)"
    )
