"""`runs/<id>/asks.jsonl`: finished asks appended whole, read back typed, a torn tail left
by a killed writer settled by the next append, and the asks' cost summed apart."""

from __future__ import annotations

import json
from pathlib import Path

from horde_tui.store.asks import AskRecord, Citation, append_ask, asks_cost, asks_path, read_asks


def record(question: str, cost: float | None, tokens: int = 10) -> AskRecord:
    return AskRecord(
        question=question,
        answer="F1 holds; F9 [check: no such finding in the ledgers] does not.",
        citations=(Citation("F1"), Citation("F9", "no such finding in the ledgers")),
        prompt_tokens=tokens,
        completion_tokens=2,
        cost_usd=cost,
        model="openai/stub",
        ts=1_800_000_000.5,
        live=True,
    )


def test_an_ask_is_appended_and_read_back_as_it_was(tmp_path: Path) -> None:
    first, second = record("what holds?", 0.25), record("and then?", 0.5)
    append_ask(tmp_path, first)
    append_ask(tmp_path, second)
    assert read_asks(tmp_path) == [first, second]
    line = json.loads(asks_path(tmp_path).read_text().splitlines()[0])
    assert line["citations"][1] == {
        "token": "F9",
        "ok": False,
        "problem": "no such finding in the ledgers",
    }
    assert [c.token for c in first.problems] == ["F9"]


def test_a_torn_tail_is_cut_by_the_next_append_and_never_read(tmp_path: Path) -> None:
    append_ask(tmp_path, record("kept", 0.1))
    with asks_path(tmp_path).open("a") as fh:
        fh.write('{"question": "killed mid-wr')
    assert [r.question for r in read_asks(tmp_path)] == ["kept"]
    append_ask(tmp_path, record("after", 0.1))
    assert [r.question for r in read_asks(tmp_path)] == ["kept", "after"]
    assert (tmp_path / "asks.jsonl.torn").is_file()


def test_no_file_is_no_asks_and_odd_fields_take_their_defaults(tmp_path: Path) -> None:
    assert read_asks(tmp_path) == [] and asks_cost(tmp_path).asks == 0
    asks_path(tmp_path).write_text('{"question": 3, "citations": "x", "cost_usd": "free"}\n')
    (odd,) = read_asks(tmp_path)
    assert (odd.question, odd.citations, odd.cost_usd) == ("3", (), None)


def test_the_asks_cost_adds_up_and_turns_unknown_with_an_unpriced_ask(tmp_path: Path) -> None:
    append_ask(tmp_path, record("a", 0.25, tokens=100))
    append_ask(tmp_path, record("b", 0.5, tokens=200))
    cost = asks_cost(tmp_path)
    assert (cost.asks, cost.cost_usd, cost.tokens) == (2, 0.75, 304)
    append_ask(tmp_path, record("c", None))
    assert asks_cost(tmp_path).cost_usd is None
