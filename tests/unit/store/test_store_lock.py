"""`.horde/.lock`: a live holder in another process makes a write wait, then refuse cleanly."""

from __future__ import annotations

import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.paths import HELPERS
from support.processes import wait_until

from horde_tui.protocol import run_action
from horde_tui.store.lock import HordeLock, LockTimeoutError
from horde_tui.store.store import HordeStore

HOLDER = HELPERS / "lock_holder.py"


def start_holder(root: Path, actor: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HOLDER), str(root), actor],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout=20)
    assert ready, "the lock holder did not start"
    assert proc.stdout.readline().strip() == "locked"
    return proc


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".lock")
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".horde"


def test_a_write_against_a_held_lock_fails_naming_the_holder(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = HordeStore(root, "member-1")
    assert run_action(store, {"action": "idea", "text": "Audit src/a.py"}, run="r1").ok
    before = snapshot(root)
    holder = start_holder(root, "member-7")
    try:
        monkeypatch.setenv("HORDE_LOCK_TIMEOUT_S", "0.3")
        started = time.monotonic()
        result = run_action(store, {"action": "idea", "text": "Audit src/b.py"}, run="r1")
        waited = time.monotonic() - started
        assert not result.ok and result.id is None
        assert "\n" not in result.text
        assert "could not take" in result.text and "within 0.3s" in result.text
        assert f"pid={holder.pid}" in result.text and "actor=member-7" in result.text
        assert 0.3 <= waited < 5
        assert snapshot(root) == before, "a refused lock wrote something"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)
    assert holder.returncode == 0
    again = run_action(store, {"action": "idea", "text": "Audit src/b.py"}, run="r1")
    assert again.ok and again.id == "#2"


def test_the_lock_of_a_killed_holder_is_free_at_once(root: Path) -> None:
    holder = start_holder(root, "member-3")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=20)
    lock = HordeLock(HordeStore(root, "member-1").paths, "member-1")
    with lock.held(timeout=2):
        assert "actor=member-1" in (root / ".lock.holder").read_text()


def test_lock_timeout_error_without_a_holder_note(root: Path) -> None:
    """No note: the kernel still names the process holding the lock."""
    holder = start_holder(root, "member-4")
    try:
        (root / ".lock.holder").unlink()
        paths = HordeStore(root, "member-1").paths
        with (
            pytest.raises(LockTimeoutError, match=rf"held by pid={holder.pid} actor=unknown"),
            HordeLock(paths, "member-1").held(timeout=0.05),
        ):
            pass
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)


def _voluntary_switches() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def test_a_waiter_sleeps_in_the_kernel_instead_of_polling(root: Path) -> None:
    """Polling every few ms wakes the waiter hundreds of times a second (and hands the lock
    over late and unfairly); a blocking `flock` sleeps until the kernel hands it over."""
    holder = start_holder(root, "member-5")
    try:
        lock = HordeLock(HordeStore(root, "member-1").paths, "member-1")
        before = _voluntary_switches()
        with pytest.raises(LockTimeoutError), lock.held(timeout=1.0):
            pass
        woke = _voluntary_switches() - before
        assert woke < 40, f"the waiter woke {woke} times in one second: it polls"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)


def test_a_blocked_waiter_takes_the_lock_at_once_when_the_holder_is_killed(root: Path) -> None:
    holder = start_holder(root, "member-6")
    lock = HordeLock(HordeStore(root, "member-1").paths, "member-1")
    took: list[float] = []

    def wait_for_it() -> None:
        with lock.held(timeout=30):
            took.append(time.monotonic())

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    time.sleep(0.3)  # the waiter is blocked by now
    assert not took
    killed = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=20)
    waiter.join(timeout=30)
    assert took, "the waiter never took the lock of a killed holder"
    assert took[0] - killed < 5


def test_a_timed_out_waiter_leaves_no_claim_on_the_lock(root: Path) -> None:
    """A wait that gave up must not take the lock later behind the caller's back."""
    holder = start_holder(root, "member-7")
    lock = HordeLock(HordeStore(root, "member-1").paths, "member-1")
    with pytest.raises(LockTimeoutError, match=r"actor=member-7"), lock.held(timeout=0.2):
        pass
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=20)
    other = start_holder(root, "member-8")  # another process takes it after the release
    try:
        assert "actor=member-8" in (root / ".lock.holder").read_text()
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait(timeout=20)
    with lock.held(timeout=5):
        assert "actor=member-1" in (root / ".lock.holder").read_text()


def test_contended_waits_reuse_one_waiting_thread(root: Path) -> None:
    """A thread started for every contended wait cost ~100 us of CPU and a scheduling
    round before the wait began; twelve writers wait up to three times a write."""
    lock = HordeLock(HordeStore(root, "member-1").paths, "member-1")
    seen: set[int] = set()
    for n in range(3):
        holder = start_holder(root, f"member-{n + 2}")
        took: list[bool] = []

        def wait_for_it(took: list[bool] = took) -> None:
            with lock.held(timeout=30):
                took.append(True)

        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        assert wait_until(
            lambda: any(t.name == "horde-lock-wait" for t in threading.enumerate()), 10
        )
        seen |= {
            t.native_id
            for t in threading.enumerate()
            if t.name == "horde-lock-wait" and t.native_id is not None
        }
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)
        waiter.join(timeout=30)
        assert took == [True]
    assert len(seen) == 1, f"{len(seen)} waiting threads for 3 waits one after another"


def test_a_refusal_names_the_real_holder_not_a_stale_note(root: Path) -> None:
    """A process that is no horde writer holds `.lock` (`flock .horde/.lock sleep`, as a
    member's script could without the sandbox) while the holder note still names the last
    writer: the refusal names the process holding it, and the member it claims to be."""
    root.mkdir(parents=True)
    (root / ".lock.holder").write_text("pid=1 actor=member-9 since=0\n")
    env = {**os.environ, "HORDE_MEMBER": "member-2"}
    holder = subprocess.Popen(["flock", str(root / ".lock"), "sleep", "30"], env=env)
    try:
        assert wait_until(lambda: (root / ".lock").exists(), 10)
        time.sleep(0.2)
        paths = HordeStore(root, "member-1").paths
        with pytest.raises(LockTimeoutError) as refused, HordeLock(paths, "member-1").held(0.2):
            pass
        message = str(refused.value)
        assert f"pid={holder.pid}" in message and "member-2" in message, message
        assert "member-9" not in message, message
    finally:
        holder.kill()
        holder.wait()
