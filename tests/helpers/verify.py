"""Whole-store invariants checked after concurrent writers and crashes.

Every check reads the files from scratch (a fresh fold of `ledger.jsonl`), so it judges
what is on disk, not what some process believes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from horde_tui.store.paths import LEDGER_FILES
from horde_tui.store.projected import read_marks
from horde_tui.store.state import LedgerState

PREFIX_KINDS = {"#": "ideas", "F": "findings", "T": "facts", "C": "claims", "R": "resources"}


def strict_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of `path` as a JSON object; fail on a torn tail or any corrupt line."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path.name} ends in a torn line: {data[-80:]!r}"
    out = []
    for no, line in enumerate(data.decode("utf-8").split("\n")[:-1], start=1):
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise AssertionError(
                f"{path.name} line {no} is not JSON ({exc}): {line[:120]!r}"
            ) from None
        assert isinstance(value, dict), f"{path.name} line {no} is not an object"
        out.append(value)
    return out


def fresh_state(root: Path) -> tuple[list[dict[str, Any]], LedgerState]:
    records = strict_jsonl(root / "ledger.jsonl")
    state = LedgerState()
    state.apply_all(records)
    assert state.skipped == [], f"a fresh fold skipped records: {state.skipped[:3]}"
    return records, state


def assert_projections_fresh(root: Path, state: LedgerState | None = None) -> None:
    """Every markdown projection equals a rendering of a fresh fold of ledger.jsonl."""
    if state is None:
        _, state = fresh_state(root)
    for kind, name in LEDGER_FILES.items():
        on_disk = (root / name).read_text(encoding="utf-8")
        expected = state.render(kind)
        assert on_disk == expected, f"{name} differs from a fresh rendering of ledger.jsonl"


def assert_no_leftovers(root: Path) -> None:
    """No temp file of an atomic write is left in `.horde/`, and no projection's mark in
    `.projected` is behind the last change a fresh fold sees."""
    temps = sorted({p.name for p in root.glob("*.tmp")} | {p.name for p in root.glob(".*.tmp")})
    assert temps == [], f"temp files left behind: {temps}"
    _, state = fresh_state(root)
    marks = read_marks(root / ".projected")
    behind = {k: (marks.get(k, 0), seq) for k, seq in state.last_change.items()}
    behind = {k: v for k, v in behind.items() if v[0] < v[1]}
    assert behind == {}, f".projected marks behind the ledger (mark, last change): {behind}"


def assert_seq_gapless(records: list[dict[str, Any]]) -> None:
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(1, len(records) + 1)), "ledger seq is not 1..N in file order"


def assert_ids_gapless(state: LedgerState) -> dict[str, int]:
    """Ids of every kind are exactly PREFIX1..PREFIXn; return n per kind."""
    counts = {}
    for prefix, kind in PREFIX_KINDS.items():
        table = getattr(state, kind)
        expected = [f"{prefix}{i}" for i in range(1, len(table) + 1)]
        assert sorted(table, key=_num) == expected, f"{kind} ids are not gapless"
        counts[kind] = len(table)
    return counts


def assert_add_records_unique(records: list[dict[str, Any]]) -> None:
    """No id was created twice (a second `*.add` with the same id would overwrite)."""
    seen: set[tuple[str, str]] = set()
    for r in records:
        if r["op"] in ("idea.add", "finding.add", "fact.add", "claim.assert", "resource.add"):
            key = (r["op"], r["id"])
            assert key not in seen, f"{r['id']} was created twice"
            seen.add(key)


def assert_events_gapless(path: Path) -> list[dict[str, Any]]:
    events = strict_jsonl(path)
    ids = [e["id"] for e in events]
    assert ids == [f"E{i}" for i in range(1, len(events) + 1)], f"{path} E ids not gapless"
    return events


def _num(ident: str) -> int:
    m = re.search(r"\d+$", ident)
    return int(m.group(0)) if m else -1


def assert_acks_present(
    acks: list[dict[str, Any]], records: list[dict[str, Any]], state: LedgerState
) -> None:
    """Every acknowledged write is in the fresh fold, exactly once."""
    for ack in acks:
        action, ident, actor, key = ack["action"], ack.get("id"), ack["actor"], ack["key"]
        if action == "post":
            hits = [r for r in records if r["op"] == "board.post" and r["text"] == key]
            assert len(hits) == 1 and hits[0]["actor"] == actor, f"post {key!r}: {len(hits)}"
            continue
        op = {
            "idea": "idea.add",
            "claim": "idea.claim",
            "fact": "fact.add",
            "finding": "finding.add",
            "done": "idea.done",
        }[action]
        hits = [r for r in records if r["op"] == op and r["id"] == ident and r["actor"] == actor]
        assert len(hits) == 1, f"{action} {ident} by {actor} found {len(hits)} times"
        if action == "idea":
            assert state.ideas[ident].text == key and state.ideas[ident].by == actor
        elif action == "fact":
            assert state.facts[ident].text == key and state.facts[ident].by == actor
        elif action == "finding":
            assert state.findings[ident].text == key and state.findings[ident].by == actor
        elif action == "claim":
            assert state.ideas[ident].text == key
        elif action == "done":
            assert state.ideas[ident].status == "done" and state.ideas[ident].owner == actor


def read_acks(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    # A writer killed mid-line leaves a torn last ack: it was never acknowledged.
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [json.loads(line) for line in lines]
