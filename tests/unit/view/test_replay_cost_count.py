"""The replay's cost line counts its findings without keeping the tabs waiting.

The count (`supervisor.forecast.finding_yield`: each finding's acceptance) runs in a
worker under the ledger tabs' lock, after the tab's own reload. A step across a write
recounts every finding, and the next step's reload waited for the whole count. Here a
reload that asks for the lock while the count is under way gets it after the part of
the count in progress, and the count, made in parts, equals `finding_yield` of a fresh
fold at every event of the scene (the scene is `test_replay`'s, through the real tool).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from support.app import RUN_ID
from support.replay_scene import ended_scene

import horde_tui.view.replay as replay_mod
from horde_tui.screens.replay import ReplayLedgers
from horde_tui.supervisor import forecast
from horde_tui.view.replay import Replay, fold_upto, ledger_records


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ended_scene(tmp_path_factory.mktemp("replay-cost")) / "runs" / RUN_ID


async def test_a_reload_waiting_for_the_lock_goes_before_the_rest_of_the_count(
    scene: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_mod, "YIELD_PART", 1, raising=False)  # one finding a hold
    replay = Replay(scene)
    source = ReplayLedgers(replay)
    counted: list[str] = []
    go = threading.Event()
    real = forecast.acceptance

    def acceptance(state: Any, target: str) -> Any:
        counted.append(target)
        assert go.wait(10), "the test never let the count go on"
        return real(state, target)

    monkeypatch.setattr(forecast, "acceptance", acceptance)
    try:
        count = asyncio.create_task(source.finding_yield())
        for _ in range(1000):  # the count's thread is in its first acceptance
            if counted:
                break
            await asyncio.sleep(0.01)
        assert counted, "the count never started"
        reload = asyncio.create_task(source.rows("findings", "newest", refresh=False))
        await asyncio.sleep(0.05)  # the reload is queued on the lock
        go.set()
        await reload
        counted_before_reload = len(counted)
        findings, accepted = await count
    finally:
        go.set()
        replay.close()
    assert findings >= 2, "the scene has findings to count"
    assert counted_before_reload < len(counted) == findings, (
        f"the reload waited for {counted_before_reload} of {findings} findings' acceptance"
    )
    assert (findings, accepted) == forecast.finding_yield(
        fold_upto(ledger_records(scene.parent.parent), replay.cursor().seq), RUN_ID
    )


def test_the_count_in_parts_equals_finding_yield_at_every_event(
    scene: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_mod, "YIELD_PART", 2)
    replay = Replay(scene)
    view = replay_mod.ReplayLedgerView(replay, RUN_ID)
    records = ledger_records(scene.parent.parent)
    seen = set()
    try:
        for at in [*range(1, replay.total + 1), *range(replay.total, 0, -3)]:
            replay.seek(at)
            tally = view.start_yield()
            while not tally.done:
                assert view.count_part(tally)
            expected = forecast.finding_yield(fold_upto(records, replay.cursor().seq), RUN_ID)
            assert tally.counts == expected, f"at event {at}"
            seen.add(expected)
    finally:
        replay.close()
    assert len(seen) > 2, f"the scene's counts move: {seen}"
