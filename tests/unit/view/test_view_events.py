"""`EventView`: filters that stay incremental, following and "N new lines", formatting."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from horde_tui.view.events import _FAST, EventFilter, EventView, event_parts, format_event

TS = "2026-01-02T12:03:04.123456Z"


def line(**fields: Any) -> str:
    """An event as `HordeStore` writes it: compact JSON, `ts` and `actor` first."""
    return json.dumps({"ts": TS, **fields}, separators=(",", ":")) + "\n"


def spawn(n: int, member: str, attempt: int = 1) -> str:
    return line(
        actor="parent",
        type="lifecycle",
        kind="member-spawn",
        member=member,
        attempt=attempt,
        pid=100 + n,
        role="member",
        id=f"E{n}",
    )


def outcome(n: int, actor: str, action: str = "finding", entry: str = "F3") -> str:
    return line(
        actor=actor,
        action=action,
        type="outcome",
        ok=True,
        outcome="created",
        entry=entry,
        text=f"ok {entry} recorded under #2",
        id=f"E{n}",
    )


def intent(n: int, actor: str, action: str = "finding") -> str:
    return line(actor=actor, action=action, type="intent", params={"text": "x"}, id=f"E{n}")


def append(path: Path, *lines: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "events.jsonl"
    append(
        p,
        spawn(1, "member-1"),
        intent(2, "member-1"),
        outcome(3, "member-1"),
        spawn(4, "member-2"),
        intent(5, "member-2", "claim"),
        outcome(6, "member-2", "claim", "#2"),
    )
    return p


def test_all_events_in_file_order_then_appends(path):
    view = EventView(path)
    assert view.refresh() == 6
    assert [view.line_no(r) for r in range(len(view))] == [0, 1, 2, 3, 4, 5]

    append(path, outcome(7, "member-2"))
    assert view.refresh() == 1
    assert view.text(6) == "E7 12:03:04 member-2 finding ok F3 recorded under #2"


def test_the_one_line_formats():
    assert (
        format_event(json.loads(spawn(7, "member-3")), 6)
        == "E7 12:03:04 parent member-spawn member-3 attempt 1"
    )
    assert (
        format_event(json.loads(outcome(12, "member-2")), 11)
        == "E12 12:03:04 member-2 finding ok F3 recorded under #2"
    )
    refused = json.loads(
        line(actor="member-4", action="claim", type="outcome", ok=False, outcome="refused",
             entry=None, text="refused: #2 is held by member-1; pick another", id="E9")
    )  # fmt: skip
    assert format_event(refused, 8) == (
        "E9 12:03:04 member-4 claim refused #2 is held by member-1; pick another"
    )
    ended = json.loads(
        line(actor="parent", type="lifecycle", kind="member-exit", member="member-1",
             cause="completed", code=0, turns=14, detail="", id="E30")
    )  # fmt: skip
    assert format_event(ended, 29) == (
        "E30 12:03:04 parent member-exit member-1 cause completed code 0 turns 14"
    )
    assert (
        format_event(json.loads(intent(2, "member-1")), 1)
        == "E2 12:03:04 member-1 finding intent text=x"
    )
    other = json.loads(line(actor="parent", type="lifecycle", kind="repair-x", foo=3, id="E4"))
    assert format_event(other, 3) == "E4 12:03:04 parent repair-x foo 3"
    assert format_event(None, 39, "not valid JSON (x)") == "L40 !! not valid JSON (x)"


def test_filter_by_actor_by_kind_and_both(path):
    view = EventView(path)
    view.refresh()

    view.filter = EventFilter.of(actors=["member-2"])  # its spawn (by the parent) too
    assert [view.line_no(r) for r in range(len(view))] == [3, 4, 5]
    view.filter = EventFilter.of(kinds=["member-spawn"])  # a lifecycle kind
    assert [view.line_no(r) for r in range(len(view))] == [0, 3]
    view.filter = EventFilter.of(kinds=["claim"])  # a tool action
    assert [view.line_no(r) for r in range(len(view))] == [4, 5]
    view.filter = EventFilter.of(kinds=["outcome"])  # a type
    assert [view.line_no(r) for r in range(len(view))] == [2, 5]
    view.filter = EventFilter.of(actors=["member-1"], kinds=["outcome", "claim"])
    assert [view.line_no(r) for r in range(len(view))] == [2]
    view.filter = EventFilter()
    assert len(view) == 6
    assert view.actors() == ["member-1", "member-2"]
    assert view.kinds() == ["claim", "finding", "intent", "lifecycle", "member-spawn", "outcome"]


def test_a_filter_stays_incremental_and_may_name_what_has_not_appeared(path):
    view = EventView(path, EventFilter.of(actors=["member-9"]))
    assert view.refresh() == 0

    append(path, intent(7, "member-9"), outcome(8, "member-1"), outcome(9, "member-9"))
    assert view.refresh() == 2
    assert [view.line_no(r) for r in range(len(view))] == [6, 8]


def test_follow_off_counts_new_matching_lines(path):
    view = EventView(path, EventFilter.of(actors=["member-1"]))
    view.refresh()
    assert (view.follow, view.indicator()) == (True, "")

    view.follow = False  # the user scrolled up
    append(path, outcome(7, "member-1"), outcome(8, "member-2"), intent(9, "member-1"))
    view.refresh()
    assert (view.new_since_pause, view.indicator()) == (2, "2 new lines")
    append(path, intent(10, "member-1"))
    view.refresh()
    assert view.indicator() == "3 new lines"

    view.follow = True  # back at the end
    assert (view.new_since_pause, view.indicator()) == (0, "")
    append(path, intent(11, "member-1"))
    view.refresh()
    assert (view.new_since_pause, list(view.tail(2))) == (0, [5, 6])


def test_one_new_line_is_singular(path):
    view = EventView(path)
    view.refresh()
    view.follow = False
    append(path, intent(7, "member-1"))
    view.refresh()
    assert view.indicator() == "1 new line"


def test_corrupt_lines_show_and_filter_as_corrupt_blank_lines_never_show(path):
    append(path, '{"ts":"x","actor":\n', "\n", "[1]\n", intent(10, "member-1"))
    view = EventView(path)
    view.refresh()

    assert len(view) == 9  # 6 + the two corrupt lines + the intent; not the blank line
    assert view.text(6).startswith("L7 !! not valid JSON (")
    assert view.text(7) == "L9 !! not a JSON object"
    view.filter = EventFilter.of(kinds=["corrupt"])
    assert [view.line_no(r) for r in range(len(view))] == [6, 8]


def test_lines_in_another_key_order_are_classified_by_parsing(path):
    append(path, json.dumps({"type": "lifecycle", "kind": "run-end", "actor": "parent"}) + "\n")
    view = EventView(path, EventFilter.of(kinds=["run-end"]))
    view.refresh()
    assert [view.line_no(r) for r in range(len(view))] == [6]


def test_a_truncated_log_rebuilds_the_view(path):
    view = EventView(path)
    view.refresh()
    view.follow = False
    path.write_text(spawn(1, "member-5"))
    assert view.refresh() == 1
    assert (view.generation, len(view), view.new_since_pause) == (1, 1, 0)
    assert view.text(0) == "E1 12:03:04 parent member-spawn member-5 attempt 1"


def test_the_real_writer_lines_take_the_fast_path(horde):
    horde("member-1", "idea", text="Audit the parser")
    horde("member-1", "claim", id="#1")
    horde.store("parent").append_event(
        "r1", {"type": "lifecycle", "kind": "member-spawn", "member": "member-2", "attempt": 1}
    )
    path = horde.root / "runs" / "r1" / "events.jsonl"
    # The store's key order is what makes the first build 5x faster than parsing.
    assert all(_FAST.match(raw) for raw in path.read_bytes().splitlines())
    view = EventView(path)
    view.refresh()

    view.filter = EventFilter.of(actors=["member-1"], kinds=["claim"])
    assert [view.record(r)["type"] for r in range(len(view))] == ["intent", "outcome"]
    view.filter = EventFilter.of(kinds=["member-spawn"])
    assert view.text(0).endswith(" parent member-spawn member-2 attempt 1")
    assert view.text(0).startswith("E5 ")


def test_a_filter_change_over_200k_events_is_well_under_a_second(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = [outcome(n, f"member-{n % 12 + 1}") for n in range(1, 200_001)]
    path.write_text("".join(lines))
    view = EventView(path)
    view.refresh()

    started = time.perf_counter()
    view.filter = EventFilter.of(actors=["member-3"], kinds=["finding"])
    elapsed = time.perf_counter() - started
    assert len(view) == 200_000 // 12 + 1  # n % 12 == 2 for n in 2, 14, ..., 199_994
    assert elapsed < 0.5, f"filter change took {elapsed:.3f}s"


def test_typed_filter_words_pick_actors_and_kinds_exactly_or_by_part(path):
    actors, kinds = ["member-1", "member-12", "parent"], ["member-exit", "claim", "finding"]
    assert EventFilter.parse("member-1", actors, kinds) == EventFilter.of(actors=["member-1"])
    assert EventFilter.parse("exit", actors, kinds) == EventFilter.of(kinds=["member-exit"])
    assert EventFilter.parse("Member-12 CLAIM", actors, kinds) == EventFilter.of(
        actors=["member-12"], kinds=["claim"]
    )
    assert EventFilter.parse("nothing-here", actors, kinds) == EventFilter.of(
        kinds=["nothing-here"]
    )
    view = EventView(path)
    view.refresh()
    view.filter = EventFilter.parse("zzz", view.actors(), view.kinds())
    assert len(view) == 0, "a word that matches nothing shows nothing, not everything"
    view.filter = EventFilter.parse("member-2 claim", view.actors(), view.kinds())
    assert [view.line_no(r) for r in range(len(view))] == [4, 5]


@pytest.mark.parametrize(
    ("outcome", "level"),
    [
        ("finished", "good"),
        ("solved", "good"),
        ("failed", "error"),
        ("canary failed", "error"),
        ("finished with failures", "warn"),
        ("stopped by user", "warn"),
        ("interrupted", "warn"),
    ],
)
def test_a_runs_end_is_painted_by_its_outcome(outcome: str, level: str) -> None:
    """A failed run's last line is not painted good (issue 28: an honest end)."""
    end = line(actor="parent", type="lifecycle", kind="run-end", outcome=outcome, id="E40")
    assert event_parts(json.loads(end), 39).level == level


def test_event_parts_put_a_lifecycle_event_under_its_member_and_grade_it():
    parts = event_parts(json.loads(spawn(7, "member-3")), 6)
    assert (parts.ident, parts.actor, parts.who, parts.label, parts.text, parts.level) == (
        "E7",
        "parent",
        "member-3",
        "member-spawn",
        "attempt 1",
        "info",
    )
    crashed = line(actor="parent", type="lifecycle", kind="member-exit", member="member-1",
                   cause="model_error", id="E9")  # fmt: skip
    assert event_parts(json.loads(crashed), 8).level == "error"
    refused = line(actor="member-4", action="claim", type="outcome", ok=False, text="no", id="E3")
    assert (event_parts(json.loads(refused), 2).who, event_parts(json.loads(refused), 2).level) == (
        "member-4",
        "warn",
    )
    broken = event_parts(None, 39, "not valid JSON")
    assert (broken.ident, broken.label, broken.text, broken.level) == (
        "L40",
        "corrupt",
        "not valid JSON",
        "error",
    )
