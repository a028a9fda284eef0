"""Incremental projections on ledgers only a hand edit or damage produces.

Ids added twice (even under another run), references to ids created later, posts and
findings of runs with no `run.start`, records that fail half-way through their fold:
folded record by record, every projection must equal a fresh fold's rendering, and that
must equal a plain full rendering that does not go through the incremental pieces.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from support.projection import full_render

from horde_tui.store.paths import LEDGER_FILES
from horde_tui.store.state import LedgerState

ACTORS = ("member-1", "member-2", "member-3")
WORDS = "cache token query login session expiry parse render upload retry limit".split()
VERDICTS = ("supports", "partially-supports", "refutes")


def fresh_render(records: list[dict[str, Any]]) -> dict[str, str]:
    state = LedgerState()
    state.apply_all(records)
    return {kind: state.render(kind) for kind in LEDGER_FILES}


ODD_OPS = (
    *("run.start", "idea.add", "idea.add", "idea.move", "board.post", "board.post"),
    *("fact.add", "fact.add", "fact.corroborate", "claim.assert", "claim.move"),
    *("finding.add", "finding.add", "finding.move", "review.add", "concern.add"),
    *("resource.add", "resource.move", "bogus"),
)
"""Ops of `OddLedger` records, weighted; `*.move` picks one of the kind's updates."""


class OddLedger:
    """Raw records, including what only a hand-edited or damaged ledger holds: ids added
    twice (even under another run), references to ids that do not exist yet, posts and
    findings of runs with no `run.start` (or a late one), records that fail half-way."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.top = Counter[str]()
        self.records: list[dict[str, Any]] = []

    def some(self, prefix: str, ahead: int = 1) -> str:
        """An id that exists, or up to `ahead` past the highest (not created yet)."""
        return f"{prefix}{self.rng.randint(1, self.top[prefix] + ahead)}"

    def new(self, prefix: str) -> str:
        if self.top[prefix] and self.rng.random() < 0.1:
            return self.some(prefix, 0)  # the same id added again
        self.top[prefix] += 1
        return f"{prefix}{self.top[prefix]}"

    def build(self, count: int) -> list[dict[str, Any]]:
        for i in range(count):
            rec = self.record(i)
            rec.setdefault("run", self.rng.choice(("r1", "r2", "r3")))
            rec.setdefault("actor", self.rng.choice(ACTORS))
            rec.setdefault("ts", f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000000Z")
            if self.rng.random() < 0.03:
                del rec["ts"]  # fails in the fold after the entry was already changed
            rec["seq"] = i + 1
            self.records.append(rec)
        return self.records

    def record(self, i: int) -> dict[str, Any]:
        rng, text = self.rng, f"{self.rng.choice(WORDS)} in src/m{i}.py"
        if rng.random() < 0.2:
            text += "\nsecond line\n\nthird line"
        op = rng.choice(ODD_OPS)
        if op == "idea.move":
            verb = rng.choice(["claim", "done", "ruleout", "drop", "release", "corroborate"])
            return {"op": f"idea.{verb}", "id": self.some("#"), "result": text, "reason": text}
        if op == "claim.move":
            verb = rng.choice(["confirm", "contest", "contest", "retract", "supersede"])
            return {"op": f"claim.{verb}", "id": self.some("C"), "newId": self.some("C")}
        if op == "finding.move":
            verb = rng.choice(["corroborate", "verify", "amend"])
            return {"op": f"finding.{verb}", "id": self.some("F"), "support": "tested"} | (
                {"text": text, "note": "why"} if verb == "amend" else {}
            )
        if op == "resource.move":
            verb = rng.choice(["reuse", "update"])
            return {"op": f"resource.{verb}", "id": self.some("R"), "text": text}
        return self.creation(op, text)

    def creation(self, op: str, text: str) -> dict[str, Any]:
        rng = self.rng
        if op == "run.start":
            return {"op": op, "task_sha256": f"{rng.getrandbits(64):016x}"}
        if op == "idea.add":
            return {"op": op, "id": self.new("#"), "text": text}
        if op == "board.post":
            return {"op": op, "text": text}
        if op == "fact.add":
            ref = rng.choice([None, self.some("#", 2), self.some("C", 2)])
            return {"op": op, "id": self.new("T"), "text": text, "provisionalOn": ref}
        if op == "fact.corroborate":
            return {"op": op, "id": self.some("T")}
        if op == "claim.assert":
            return {"op": op, "id": self.new("C"), "text": text}
        if op == "finding.add":
            rec = {"op": op, "id": self.new("F"), "concern": "bugs", "text": text}
            if rng.random() < 0.3:
                rec["supersedes"] = self.some("F", 0)
            if rng.random() < 0.05:
                del rec["concern"]  # unfoldable: skipped, listed in every projection
            return rec
        if op == "review.add":
            return {
                "op": op,
                "id": self.new("V"),
                "target": self.some("F", 2),
                "revision": rng.randint(1, 2),
                "verdict": rng.choice(VERDICTS),
                "unchecked": rng.choice(["", "edge cases"]),
            }
        if op == "concern.add":
            return {"op": op, "slug": rng.choice(["bugs", "perf"]), "definition": text}
        if op == "resource.add":
            return {"op": op, "id": self.new("R"), "name": f"corpus-{rng.randint(1, 3)}"}
        return {"op": "bogus.op"}


@pytest.mark.parametrize("seed", range(12))
def test_incremental_rendering_equals_a_fresh_fold_for_odd_ledgers(seed: int) -> None:
    records = OddLedger(seed).build(250)
    writer, lagging = LedgerState(), LedgerState()
    # What a writer keeps on disk: it rewrites only the projections `apply_all` names.
    disk = {kind: writer.render(kind) for kind in LEDGER_FILES}
    rng = random.Random(seed)
    for i, rec in enumerate(records):
        for kind in writer.apply_all([rec]) & LEDGER_FILES.keys():
            disk[kind] = writer.render(kind)
        lagging.apply_all([rec])
        expected = fresh_render(records[: i + 1])
        assert disk == expected, f"after {rec}"
        if i % 10 == 0 or i == len(records) - 1:
            assert expected == {k: full_render(writer, k) for k in LEDGER_FILES}
        if rng.random() < 0.25:
            kind = rng.choice(list(LEDGER_FILES))
            assert lagging.render(kind) == expected[kind], f"{kind} after {rec}"
    assert {k: lagging.render(k) for k in LEDGER_FILES} == fresh_render(records)
    assert writer.skipped, "the odd ledger should include unfoldable records"


def _rec(seq: int, op: str, run: str = "r1", **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": "2026-01-01T00:00:00Z", "run": run, "actor": "m1", "op": op, **fields}


def test_ids_added_again_re_render_every_entry_that_shows_them() -> None:
    """Only a hand-edited ledger adds an id twice; each re-add must still show up."""
    records = [
        _rec(1, "run.start"),
        _rec(2, "run.start", "r2"),
        *(_rec(2 + n, "finding.add", id=f"F{n}", concern="bugs", text=f"f{n}") for n in (1, 2, 3)),
        _rec(6, "review.add", id="V1", target="F1", revision=1, verdict="refutes"),
        _rec(7, "review.add", id="V1", target="F2", revision=1, verdict="supports"),
        _rec(8, "review.add", id="V1", target="F3", revision=1, verdict="partially-supports"),
        _rec(9, "finding.add", "r2", id="F1", concern="bugs", text="F1 again, in r2"),
        _rec(10, "idea.add", id="#1", text="one"),
        _rec(11, "fact.add", id="T1", text="about #1", provisionalOn="#1"),
        _rec(12, "idea.done", id="#1"),
        _rec(13, "idea.add", id="#1", text="one, open again"),
        _rec(14, "concern.add", slug="bugs", definition="first"),
        _rec(15, "concern.add", slug="bugs", definition="second"),
    ]
    state = LedgerState()
    for kind in LEDGER_FILES:
        state.render(kind)
    for i, rec in enumerate(records):
        state.apply_all([rec])
        fresh = LedgerState()
        fresh.apply_all(records[: i + 1])
        for kind in LEDGER_FILES:
            assert state.render(kind) == full_render(fresh, kind), f"{kind} after {rec}"
    assert state.render("findings").count("V1 partially-supports") == 3
    assert "**provisional on #1**" in state.render("facts")
