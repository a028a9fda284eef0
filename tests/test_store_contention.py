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

from horde_tui.protocol import run_action
from horde_tui.store.jsonl import append_bytes, encode_records
from horde_tui.store.store import HordeStore, utc_now
from horde_tui.store.textmatch import MatchIndex, TextKey

try:
    from polling import wait_until
except ImportError:  # tests/ made a package
    from tests.polling import wait_until

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
        if line.strip() == "":
            break
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


def test_a_saved_index_carries_texts_and_keys_them_only_when_asked() -> None:
    index = MatchIndex()
    for i, text in enumerate(_texts(30, 9)):
        index.add_text(f"#{i}", text)
    index.warm()  # never asked: warming keys nothing
    assert not index._keys
    assert index.duplicates(TextKey.of("cookie parser overflow in src/mod1.py"))
    assert len(index._keys) == 30
    saved = pickle.dumps(index)
    assert b"TextKey" not in saved, "the checkpoint would carry keys a process may never use"
    restored = pickle.loads(saved)
    assert not restored._keys and len(restored._pending) == 30
    index.add_text("#99", "a new idea about retry storms in src/net.py")
    index.warm()  # asked before: warming keys what was folded since
    assert "#99" in index._keys and not index._pending


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
