"""Incremental projections: after any write, every projection equals a fresh rendering.

A write re-renders only the entries the fold marked changed (`LedgerState.touch`), so a
missed mark would leave a stale line in IDEAS.md or FACTS.md that no single-step test
notices. These tests drive long random sequences and compare every projection, after
every write, with a fresh fold of the whole ledger.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from horde_tui.store.ledgers import board, facts, findings, ideas
from horde_tui.store.paths import LEDGER_FILES
from horde_tui.store.state import LedgerState

try:
    from helpers import verify
    from support.projection import full_render
except ImportError:  # tests/ made a package
    from tests.helpers import verify
    from tests.support.projection import full_render

ACTORS = ("member-1", "member-2", "member-3")
RUNS = ("r1", "r2")
WORDS = "cache token query login session expiry parse render upload retry limit".split()
VERDICTS = ("supports", "partially-supports", "refutes")


def fresh_render(records: list[dict[str, Any]]) -> dict[str, str]:
    state = LedgerState()
    state.apply_all(records)
    return {kind: state.render(kind) for kind in LEDGER_FILES}


# -- random tool writes through the real store ------------------------------------------


class RandomWrites:
    """Random `horde` tool calls by three members over two interleaved runs.

    Targets are picked from the acting member's view of the state, so most calls are
    accepted; a refused one must leave every projection unchanged, which is checked too.
    """

    def __init__(self, horde: Any, seed: int) -> None:
        self.horde = horde
        self.rng = random.Random(seed)
        self.count = 0
        self.said: dict[str, list[str]] = {"idea": [], "fact": []}

    def text(self, tag: str, lines: int = 1) -> str:
        self.count += 1
        words = " ".join(self.rng.sample(WORDS, 3))
        body = "".join(f"\n{self.rng.choice(WORDS)} detail {n}" for n in range(lines - 1))
        return f"{words} in src/{tag}{self.count}.py{body}"

    def pick(self, items: list[Any]) -> Any:
        return self.rng.choice(items) if items else None

    def step(self) -> None:
        actor, run = self.rng.choice(ACTORS), self.rng.choice(RUNS)
        state = self.horde.state(actor)
        moves: list[Callable[[str, str, LedgerState], bool]] = [
            self.idea,
            self.idea,
            self.claim,
            self.close,
            self.post,
            self.post,
            self.fact,
            self.fact,
            self.finding,
            self.finding,
            self.supersede_or_amend,
            self.verify_or_review,
            self.claim_move,
            self.claim_move,
            self.release,
        ]
        while not self.rng.choice(moves)(actor, run, state):
            pass

    def call(self, actor: str, run: str, action: str, **fields: Any) -> bool:
        self.horde(actor, action, run=run, **fields)
        return True

    def idea(self, actor: str, run: str, state: LedgerState) -> bool:
        said = self.said["idea"]
        text = self.pick(said) if said and self.rng.random() < 0.2 else self.text("idea", 2)
        said.append(text)
        return self.call(actor, run, "idea", text=text)

    def claim(self, actor: str, run: str, state: LedgerState) -> bool:
        target = self.pick([i.id for i in state.ideas.values() if i.status == "open"])
        return target is not None and self.call(actor, run, "claim", id=target)

    def close(self, actor: str, run: str, state: LedgerState) -> bool:
        held = [i.id for i in state.ideas.values() if i.status == "claimed" and i.owner == actor]
        target = self.pick(held)
        if target is None:
            return False
        action = self.rng.choice(["done", "done", "rule-out", "drop"])
        fields = (
            {"result": "documented the flow"} if action == "done" else {"reason": "out of scope"}
        )
        return self.call(actor, run, action, id=target, **fields)

    def post(self, actor: str, run: str, state: LedgerState) -> bool:
        return self.call(actor, run, "post", text=self.text("post", self.rng.randint(1, 3)))

    def fact(self, actor: str, run: str, state: LedgerState) -> bool:
        said = self.said["fact"]
        if said and self.rng.random() < 0.15:
            return self.call(actor, run, "fact", text=self.pick(said))
        open_ideas = [i.id for i in state.ideas.values() if not i.closed]
        contested = [c.id for c in state.claims.values() if c.status == "contested"]
        subject = self.pick(open_ideas + contested) if self.rng.random() < 0.6 else None
        text = self.text("fact", self.rng.randint(1, 2))
        if subject:
            text = f"{subject} says {text}"  # an explicit reference makes it provisional
        said.append(text)
        return self.call(actor, run, "fact", text=text)

    def finding(self, actor: str, run: str, state: LedgerState) -> bool:
        held = [i.id for i in state.ideas.values() if i.status == "claimed" and i.owner == actor]
        if not held:
            return self.claim(actor, run, state)
        return self.call(
            actor,
            run,
            "finding",
            text=self.text("finding", 3),
            idea=self.pick(held),
            concern=self.rng.choice(["bugs", "perf"]),
            concernDef="defects worth fixing",
            evidence=f"src/ev{self.count}.py:{self.count}",
            importance=self.rng.choice(["high", "low"]),
        )

    def supersede_or_amend(self, actor: str, run: str, state: LedgerState) -> bool:
        live = [f for f in state.findings.values() if not f.superseded_by]
        own = [f.id for f in live if f.by == actor]
        if own and self.rng.random() < 0.5:
            return self.call(
                actor, run, "amend", id=self.pick(own), text=self.text("amended", 2), note="fix"
            )
        target = self.pick([f.id for f in live])
        return target is not None and self.call(
            actor, run, "finding", text=self.text("correction", 2), supersedes=target
        )

    def verify_or_review(self, actor: str, run: str, state: LedgerState) -> bool:
        others = [f for f in state.findings.values() if f.by != actor]
        target = self.pick(others)
        if target is None:
            return False
        if self.rng.random() < 0.5:
            return self.call(actor, run, "verify", id=target.id, support="reproduced")
        # A V# review as the `review` action would write it (not part of the tool yet).
        record = {
            "op": "review.add",
            "id": state.next_id("reviews"),
            "target": target.id,
            "revision": target.revision,
            "verdict": self.rng.choice(VERDICTS),
            "unchecked": self.rng.choice(["", "the error path"]),
        }
        self.horde.inject(actor, record, run=run)
        return True

    def claim_move(self, actor: str, run: str, state: LedgerState) -> bool:
        live = [c for c in state.claims.values() if c.status in ("asserted", "confirmed")]
        contested = [c for c in state.claims.values() if c.status == "contested"]
        choice = self.rng.random()
        if choice < 0.3 or not (live or contested):
            return self.call(actor, run, "assert", text=self.text("claim"))
        claim = self.pick(contested if contested and choice < 0.6 else live or contested)
        if claim.by == actor:
            verb = self.rng.choice(["retract", "supersede"])
            return self.call(actor, run, verb, id=claim.id, text=self.text("claimfix"))
        verb = self.rng.choice(["contest", "contest", "confirm"])
        return self.call(actor, run, verb, id=claim.id, text="checked it")

    def release(self, actor: str, run: str, state: LedgerState) -> bool:
        """The parent returns a claimed idea to the pool (no tool action writes this)."""
        target = self.pick([i.id for i in state.ideas.values() if i.status == "claimed"])
        if target is None:
            return False
        record = {"op": "idea.release", "id": target, "reason": "member stopped"}
        self.horde.inject("parent", record, run=run)
        return True


@pytest.mark.parametrize("seed", range(3))
def test_every_projection_equals_a_fresh_fold_after_every_random_write(horde, seed) -> None:
    writes = RandomWrites(horde, seed)
    for _ in range(250):
        writes.step()
        records, fresh = verify.fresh_state(horde.root)
        verify.assert_projections_fresh(horde.root, fresh)
        # A member that did not write lately has folded the others' records unrendered;
        # its next rendering must still match.
        lagging = horde.store(writes.rng.choice(ACTORS))
        lagging.refresh()
        kind = writes.rng.choice(list(LEDGER_FILES))
        assert lagging.state.render(kind) == fresh.render(kind), kind
    assert {k: fresh.render(k) for k in LEDGER_FILES} == {
        k: full_render(fresh, k) for k in LEDGER_FILES
    }
    counts = Counter(r["op"] for r in records)
    for op in ("idea.done", "fact.add", "finding.add", "finding.amend", "review.add"):
        assert counts[op] > 0, f"the random writes never produced {op}: {counts}"
    assert any(r.get("provisionalOn") for r in records)
    assert any(r.get("supersedes") for r in records if r["op"] == "finding.add")
    first, second = fresh.runs  # both runs, in the order they started
    for name in ("BOARD.md", "FINDINGS.md"):
        text = (horde.root / name).read_text()
        assert text.index(f"## Run {first}") < text.index(f"## Run {second}"), name


# -- what one write re-renders --------------------------------------------------------------


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Iterator[Counter[str]]:
    """Count calls of `module.name` by the id of the entry rendered."""
    calls: Counter[str] = Counter()
    original = getattr(module, name)

    def wrapper(*args: Any) -> str:
        calls[args[-1].id] += 1
        return original(*args)

    with monkeypatch.context() as patch:
        patch.setattr(module, name, wrapper)
        yield calls


def _rec(seq: int, op: str, run: str = "r1", **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": "2026-01-01T00:00:00Z", "run": run, "actor": "m1", "op": op, **fields}


def test_a_write_re_renders_only_the_entries_it_changed(monkeypatch) -> None:
    records = [_rec(1, "run.start"), _rec(2, "run.start", "r2")]
    for n in range(1, 201):
        ref = "#1" if n % 50 == 0 else None  # T50, T100, T150, T200 depend on #1
        for op, fields in (
            ("idea.add", {"id": f"#{n}", "text": f"idea {n}"}),
            ("board.post", {"text": f"post {n}"}),
            ("finding.add", {"id": f"F{n}", "concern": "bugs", "text": f"finding {n}"}),
            ("fact.add", {"id": f"T{n}", "text": f"fact {n}", "provisionalOn": ref}),
        ):
            records.append(_rec(len(records) + 1, op, **fields))
    state = LedgerState()
    state.apply_all(records)
    assert state.render("facts").count("**provisional on #1**") == 4
    for kind in LEDGER_FILES:
        state.render(kind)

    def write(op: str, run: str = "r1", **fields: Any) -> set[str]:
        records.append(_rec(len(records) + 1, op, run, **fields))
        return state.apply_all(records[-1:])

    with counting(monkeypatch, ideas, "render_idea") as calls:
        assert write("idea.claim", id="#7") == {"ideas"}
        state.render("ideas")
    assert calls == {"#7": 1}
    with counting(monkeypatch, board, "render_post") as calls:
        write("board.post", text="late r1 post")
        text = state.render("board")
    assert calls == {"P201": 1}
    assert text.index("late r1 post") < text.index("## Run r2")
    with counting(monkeypatch, facts, "render_fact") as calls:
        assert write("idea.done", id="#1") == {"ideas", "facts"}
        assert "**provisional" not in state.render("facts")
    assert calls == {"T50": 1, "T100": 1, "T150": 1, "T200": 1}
    with counting(monkeypatch, findings, "render_finding") as calls:
        write("finding.add", "r2", id="F201", concern="bugs", text="x", supersedes="F3")
        state.render("findings")
    assert calls == {"F201": 1, "F3": 1}
    assert {k: state.render(k) for k in LEDGER_FILES} == fresh_render(records)


def test_closing_an_idea_no_fact_depends_on_leaves_facts_alone() -> None:
    state = LedgerState()
    state.apply_all(
        [
            _rec(1, "idea.add", id="#1", text="one"),
            _rec(2, "idea.add", id="#2", text="two"),
            _rec(3, "fact.add", id="T1", text="about two", provisionalOn="#2"),
        ]
    )
    assert state.apply_all([_rec(4, "idea.done", id="#1")]) == {"ideas"}
    assert state.apply_all([_rec(5, "idea.done", id="#2")]) == {"ideas", "facts"}


def test_a_fact_provisional_on_an_idea_added_later_follows_it() -> None:
    """Only a hand-written ledger does this; the projection must still match a fresh fold."""
    records = [_rec(1, "fact.add", id="T1", text="about #9", provisionalOn="#9")]
    state = LedgerState()
    state.apply_all(records)
    assert "**provisional" not in state.render("facts")
    records.append(_rec(2, "idea.add", id="#9", text="nine"))
    assert state.apply_all(records[1:]) == {"ideas", "facts"}
    assert "**provisional on #9**" in state.render("facts")
    assert state.render("facts") == fresh_render(records)["facts"]
