"""The running usage total is folded one way everywhere: tokens add up, and the cost
turns unknown (`None`) for good once any call was unpriced, whether the total is kept
from status lines (the supervisor), from a transcript (the app, a resume, the member
reloading its session) or across members (the report, the swarm table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from horde_tui.member.session import load_conversation
from horde_tui.store.members import MemberState
from horde_tui.store.transcript import SessionStats
from horde_tui.store.usage import fold_record, sum_cost
from horde_tui.supervisor.summary import total_cost

PRICED = {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.5}
UNPRICED = {"prompt_tokens": 10, "completion_tokens": 2, "cost_usd": None}


def test_a_usage_total_turns_unknown_after_one_unpriced_call_and_stays_so() -> None:
    total = MemberState("member-1", "member")
    fold_record(total, PRICED)
    assert (total.prompt_tokens + total.completion_tokens, total.cost_usd) == (120, 0.5)
    fold_record(total, UNPRICED)
    fold_record(total, PRICED)
    assert (total.prompt_tokens + total.completion_tokens, total.cost_usd) == (252, None)
    fold_record(total, "not a record")  # counts as an unpriced call with no tokens
    assert (total.prompt_tokens, total.cost_usd) == (210, None)


def test_a_costs_sum_is_unknown_once_one_is() -> None:
    assert sum_cost([0.25, 0.5]) == 0.75
    assert sum_cost([0.25, None, 0.5]) is None
    assert sum_cost([]) == 0.0


def _transcript(path: Path, usages: list[dict[str, object]]) -> Path:
    lines = [{"role": "system", "content": "s", "ts": 1.0}, {"role": "user", "content": "u"}]
    lines += [{"role": "assistant", "content": f"a{i}", "usage": u} for i, u in enumerate(usages)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("usages", "cost"),
    [([PRICED, PRICED], 1.0), ([PRICED, UNPRICED, PRICED], None), ([UNPRICED], None)],
)
def test_every_reader_of_usage_folds_it_the_same(
    tmp_path: Path, usages: list[dict[str, object]], cost: float | None
) -> None:
    tokens = sum(int(u["prompt_tokens"]) + int(u["completion_tokens"]) for u in usages)  # type: ignore[call-overload]
    path = _transcript(tmp_path / "member-1.jsonl", usages)

    stats = SessionStats(path)
    stats.refresh()
    stats.close()
    conv = load_conversation(path)
    member = MemberState("member-1", "member")
    for usage in usages:
        member.absorb({"type": "usage", **usage})

    for total in (stats, conv, member):
        assert (total.prompt_tokens + total.completion_tokens, total.cost_usd) == (tokens, cost)
    members = [member, MemberState("member-2", "member", cost_usd=0.25)]
    assert total_cost(members) == (None if cost is None else cost + 0.25)
