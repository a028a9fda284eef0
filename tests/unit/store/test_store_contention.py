"""What a writer does while others hold the lock, and what the fold costs every process.

Every process folds every record (twelve writers fold each write twelve times), so the
work a fold can put off, or do before its turn under the lock, is what keeps twelve
writers close to one writer's throughput (`tests/benchmarks/bench_store.py`).
"""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from horde_tui.protocol import run_action
from horde_tui.protocol.dispatch import ASKS
from horde_tui.store.jsonl import append_bytes, encode_records
from horde_tui.store.state import LedgerState
from horde_tui.store.store import HordeStore, utc_now
from horde_tui.store.textmatch import MatchIndex, TextKey

try:
    from support.processes import wait_until
except ImportError:  # tests/ made a package
    from tests.support.processes import wait_until

RUN = "r1"

HOLDER = """
import sys, time
from pathlib import Path
from horde_tui.store.lock import HordeLock
from horde_tui.store.paths import HordePaths
from horde_tui.store.jsonl import append_bytes, encode_records
root, release = Path(sys.argv[1]), Path(sys.argv[2])
paths = HordePaths(root)
with HordeLock(paths, "holder").held():
    print("held", flush=True)
    for line in sys.stdin:  # each line: a JSON record to append, as a holder's write
        append_bytes(paths.ledger, line.encode())
        print("appended", flush=True)
    while not release.exists():
        time.sleep(0.01)
"""


def test_a_waiting_writer_folds_what_the_holder_appends_before_its_turn(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    waiter = HordeStore(root, "member-2")
    assert run_action(waiter, {"action": "post", "text": "warm up"}, run=RUN).ok
    release = tmp_path / "release"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(release)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        results: list[object] = []
        writer = threading.Thread(
            target=lambda: results.append(
                run_action(waiter, {"action": "idea", "text": "check src/b.py for races"}, run=RUN)
            )
        )
        writer.start()
        seq = waiter.state.seq + 1
        record = {"seq": seq, "ts": utc_now(), "run": RUN, "actor": "member-1", "op": "idea.add"}
        record |= {"id": "#1", "text": "look at src/a.py for injection"}
        holder.stdin.write(encode_records([record]).decode())
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "appended"
        # The holder still holds the lock, and the waiter has folded its idea already.
        assert wait_until(lambda: "#1" in waiter.state.ideas, 5), "nothing folded while waiting"
        assert not results, "the waiter wrote while the lock was held"
        release.touch()
        holder.stdin.close()
        writer.join(timeout=30)
        assert holder.wait(timeout=10) == 0
    finally:
        release.touch()
        if holder.poll() is None:
            holder.kill()
    (receipt,) = results
    assert receipt.ok and receipt.id == "#2", receipt  # type: ignore[attr-defined]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["parser", "token", "overflow", "session", "cookie", "upload", "cache", "retry"]
    return [
        " ".join(rng.choices(words, k=5)) + f" in src/mod{rng.randrange(12)}.py line {i}"
        for i in range(n)
    ]


def test_an_index_keyed_on_demand_answers_as_one_keyed_at_once() -> None:
    texts = _texts(120, 7)
    eager, lazy = MatchIndex(), MatchIndex()
    for i, text in enumerate(texts):
        eager.add(f"#{i}", TextKey.of(text))
        lazy.add_text(f"#{i}", text)
    eager.remove("#5")
    lazy.remove("#5")
    lazy.add_text("#6", texts[7])  # an amended entry is keyed from its new text
    eager.add("#6", TextKey.of(texts[7]))
    restored = pickle.loads(pickle.dumps(lazy))
    for query in _texts(40, 8):
        key = TextKey.of(query)
        want = (eager.duplicates(key), eager.candidates(key), eager.best(key))
        assert (lazy.duplicates(key), lazy.candidates(key), lazy.best(key)) == want
        assert (restored.duplicates(key), restored.candidates(key), restored.best(key)) == want
    assert restored == eager == lazy


def test_an_index_keys_texts_only_when_asked_and_a_saved_one_unpacks_when_asked() -> None:
    texts = _texts(30, 9)
    index = MatchIndex()
    for i, text in enumerate(texts):
        index.add_text(f"#{i}", text)
    index.warm()  # never asked: warming keys nothing
    assert not index._keys
    query = TextKey.of("cookie parser overflow in src/mod1.py")
    assert index.duplicates(query)
    assert len(index._keys) == 30
    index.add_text("#99", "a new idea about retry storms in src/net.py")
    index.warm()  # asked before: warming keys what was folded since
    assert "#99" in index._keys and not index._pending
    index.add_text("#98", "keyed by the save")
    saved = pickle.dumps(index)
    assert b"TextKey" not in saved and b"frozenset" not in saved, "keys are saved packed"
    restored = pickle.loads(saved)
    assert not restored._keys and restored._packed and not restored._pending
    restored.remove("#3")  # folds after the load touch packed entries without unpacking
    restored.add_text("#4", texts[5])
    restored.warm()
    assert restored._packed, "a process that never asks never unpacks"
    index.remove("#3")
    index.add_text("#4", texts[5])
    assert restored == index
    assert restored.duplicates(query) == index.duplicates(query)


def test_an_event_log_parses_only_its_actors_requests_and_numbers_every_line(
    tmp_path: Path,
) -> None:
    from horde_tui.store.events import EventLog

    path = tmp_path / "events.jsonl"
    base = {"ts": utc_now(), "type": "outcome", "ok": True, "outcome": "ok", "text": "ok"}
    events = [
        {**base, "actor": "member-2", "requestId": "r1", "id": "E1"},
        {**base, "actor": "member-1", "requestId": "r1", "id": "E2"},
        {**base, "actor": "member-1", "id": "E3"},  # no requestId: nothing to replay
        {**base, "actor": "member-2", "text": 'says "requestId" in its text', "id": "E4"},
    ]
    append_bytes(path, b"".join(encode_records([e]) for e in events))
    # A hand-written line (spaces, id not last) is parsed whole.
    append_bytes(path, b'{"id": "E5", "actor": "member-1", "type": "note"}\n')
    mine = EventLog(path, "member-1")
    mine.catch_up()
    assert mine.count == 5 and mine.next_id() == "E6"
    assert list(mine.outcomes) == [("member-1", "r1")]
    everyone = EventLog(path)
    everyone.catch_up()
    assert everyone.count == 5
    assert sorted(everyone.outcomes) == [("member-1", "r1"), ("member-2", "r1")]


def test_a_retry_after_other_writers_is_answered_from_the_first_outcome(tmp_path: Path) -> None:
    root = tmp_path / ".horde"
    me, other = HordeStore(root, "member-1"), HordeStore(root, "member-2")
    call = {"action": "post", "text": "pay the invoice once", "requestId": "req-7"}
    first = run_action(me, call, run=RUN)
    for n in range(3):
        assert run_action(other, {**call, "text": f"other {n}"}, run=RUN).ok
    fresh = HordeStore(root, "member-1")  # a restarted member: reads the log from disk
    again = run_action(fresh, call, run=RUN)
    assert first.ok and "replayed" in again.text
    board = (root / "BOARD.md").read_text()
    assert board.count("pay the invoice once") == 1


def test_every_decision_asks_only_the_indexes_readied_before_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`dispatch.ASKS` names the indexes a write's decision asks; they are readied (a cold
    process unpacks them) before the lock. An index asked but not named there would be
    unpacked while the lock is held: for seconds at 10,000 entries on a loaded box."""
    from support.ledger_scene import fill_run

    from horde_tui.store.state import INDEXES

    asked: dict[str, set[str]] = {}
    deciding: list[tuple[str, dict[int, str]]] = []
    original_transact = HordeStore.transact
    original_key = MatchIndex._key_pending

    def transact(self: HordeStore, run: str, action: str, params: Any, decide: Any, *a: Any) -> Any:
        def watched(state: LedgerState) -> Any:
            deciding.append((action, {id(getattr(state, n)): n for n in INDEXES}))
            try:
                return decide(state)
            finally:
                deciding.pop()

        return original_transact(self, run, action, params, watched, *a)

    def key_pending(self: MatchIndex) -> None:
        if deciding:
            action, names = deciding[-1]
            asked.setdefault(action, set()).add(names[id(self)])
        original_key(self)

    monkeypatch.setattr(HordeStore, "transact", transact)
    monkeypatch.setattr(MatchIndex, "_key_pending", key_pending)
    horde = fill_run(tmp_path)
    run = "20250101-120000-beef"
    for actor, action, fields in [
        (
            "member-1",
            "amend",
            {"id": "F1", "text": "SQL injection in build_query() via name", "note": "wording"},
        ),
        ("member-2", "fact", {"text": "the database is postgres 16"}),
        ("member-3", "confirm", {"id": "C1"}),
        ("member-3", "idea", {"text": "Check src/web/session.py cookie flags"}),
        ("member-3", "claim", {"id": "#4"}),
        ("member-3", "drop", {"id": "#4"}),
    ]:
        result = horde(actor, action, run=run, **fields)
        assert result.ok, (action, result.text)
    covered = {"idea", "claim", "fact", "assert", "finding"}
    assert covered <= set(asked), f"the scene no longer reaches {covered - set(asked)}"
    for action, names in asked.items():
        assert names <= set(ASKS.get(action, ())), f"{action} asks {names}; ASKS says"
