"""One member state, folded from the lifecycle events one way wherever it is read.

The hosted supervisor keeps its members in memory, the run screen folds an attached
run's `events.jsonl` (`view.members.MemberFold`), `horde-tui resume` folds the same file
to decide who carries on (`load_resume`) and `horde-tui finalize` to write the report
(`recover.rebuild_members`). The same events must give the same member in each, and a
respawned member is running again: its start is the respawn's, and the end and detail
of its previous session are gone.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from support.plans import CLAIMING_PLANS, HELPERS, settings
from support.rundir import EPOCH_0, RunDir

from horde_tui.store.runs import clear_live
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.supervisor import recover
from horde_tui.supervisor.resume import load_resume
from horde_tui.supervisor.run import Supervisor, SupervisorEvent
from horde_tui.supervisor.setup import RunRequest
from horde_tui.view.members import MemberFold

RUN = "20260102-120000-fold"
LIFECYCLE_FIELDS = (
    "status",
    "attempt",
    "resets",
    "pid",
    "started",
    "ended",
    "exit_cause",
    "detail",
)
"""What the lifecycle events say about a member (turns and tokens come from elsewhere)."""


def lifecycle_of(state: Any) -> dict[str, Any]:
    return {name: getattr(state, name) for name in LIFECYCLE_FIELDS}


def disk_folds(horde: Path, run_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Each disk reader's members: the run screen's, resume's and finalize's."""
    run_dir = horde / "runs" / run_id
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    fold = MemberFold(run_dir, manifest)
    for ev in events:
        if ev.get("type") == "lifecycle":
            fold.apply(ev)
    point = load_resume(horde, run_id, environ={})
    return {
        "view": {name: lifecycle_of(s) for name, s in fold.states.items()},
        "resume": {name: lifecycle_of(s) for name, s in point.members.items()},
        "finalize": {s.name: lifecycle_of(s) for s in recover.rebuild_members(manifest, events)},
    }


def respawned_run(horde: Path) -> RunDir:
    """member-2 fails, is reset and runs again; member-1 runs; member-3 finished."""
    run = RunDir(horde, RUN)
    run.event(0, "run-start", members=3)
    run.event(1, "phase-start", phase="discovery")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11)
    run.event(3, "member-spawn", "member-2", attempt=1, pid=12)
    run.event(4, "member-spawn", "member-3", attempt=1, pid=13)
    run.event(5, "member-exit", "member-2", cause="model_error", detail="HTTP 500 from the model")
    run.event(6, "member-reset", "member-2", cause="model_error", resets=1)
    run.event(8, "member-spawn", "member-2", attempt=2, pid=22)
    run.event(9, "member-exit", "member-3", cause="completed", detail="filed F1")
    return run


RUNNING_AGAIN = {
    "status": "running",
    "attempt": 2,
    "resets": 1,
    "pid": 22,
    "started": EPOCH_0 + 8,
    "ended": None,
    "exit_cause": None,
    "detail": "",
}
"""member-2 of `respawned_run`: running its second session since second 8."""


def test_every_disk_reader_folds_a_respawn_the_same_way(in_dir: Path) -> None:
    """The run screen, resume and finalize read member-2 as running again since its
    respawn, with nothing left of the session that failed; finalize then reads it as
    killed with its supervisor (the run is over), which changes only how it ended."""
    respawned_run(in_dir / ".horde")
    folds = disk_folds(in_dir / ".horde", RUN)
    assert folds["view"]["member-2"] == RUNNING_AGAIN
    assert folds["resume"]["member-2"] == RUNNING_AGAIN
    killed = folds["finalize"]["member-2"]
    assert killed == {
        **RUNNING_AGAIN,
        "status": "exited",
        "exit_cause": "killed",
        "detail": "the supervisor died while this member ran",
    }
    finished = {"status": "exited", "exit_cause": "completed", "detail": "filed F1"}
    for reader, members in folds.items():
        assert {k: members["member-3"][k] for k in finished} == finished, reader
        assert members["member-3"]["ended"] == EPOCH_0 + 9, reader
        assert members["member-3"]["started"] == EPOCH_0 + 4, reader


def test_the_supervisor_folds_what_it_emits_as_the_readers_fold_the_file(tmp_path: Path) -> None:
    """The supervisor's own members follow its lifecycle events through the same
    transition: emitting `respawned_run`'s member events leaves its member-2 as the
    readers see it (times are the emit's own, so only their order is compared)."""
    sup = Supervisor(tmp_path, RunRequest("Review app.py", 3), settings_for_no_model())
    sup.emit("member-spawn", "member-2", attempt=1, pid=12)
    sup.emit("member-exit", "member-2", cause="model_error", detail="HTTP 500 from the model")
    ended = sup.members["member-2"].ended
    sup.emit("member-reset", "member-2", cause="model_error", resets=1)
    assert sup.members["member-2"].status == "starting"
    sup.emit("member-spawn", "member-2", attempt=2, pid=22)
    got = lifecycle_of(sup.members["member-2"])
    assert ended is not None and got["started"] is not None and got["started"] >= ended
    assert {**got, "started": EPOCH_0 + 8} == RUNNING_AGAIN


def settings_for_no_model() -> Any:
    from horde_tui.common.settings import load_settings

    return load_settings(environ={"HORDE_MODEL": "openai/stub", "HORDE_API_KEY": "stub"})


@pytest.mark.e2e
def test_a_hosted_respawn_reads_the_same_in_memory_and_on_disk(tmp_path: Path) -> None:
    """A real run whose member-1 a person resets: right after the respawn, the hosted
    supervisor's member and every disk reader's agree (start, end, detail, attempt,
    resets, pid), times within the write's own delay."""
    events: list[SupervisorEvent] = []
    seen: dict[str, Any] = {}

    def spawns() -> int:
        return sum(1 for e in events if e.kind == "member-spawn" and e.member == "member-1")

    async def until(predicate: Any, what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            assert time.monotonic() < deadline, (
                f"timed out waiting for {what}: {[e.kind for e in events]}"
            )
            await asyncio.sleep(0.05)

    async def scenario(sup: Supervisor) -> None:
        run = asyncio.create_task(sup.run())
        first = sup.members["member-1"]
        await until(lambda: first.produced_output, "member-1's first answer")
        # The respawn's start must be told apart from the first one's.
        await until(lambda: time.time() - (first.started or time.time()) > 1.5, "a second")
        await sup.reset("member-1")
        await until(lambda: spawns() == 2, "member-1's respawn")
        seen["memory"] = lifecycle_of(sup.members["member-1"])
        copy = tmp_path / "copy" / ".horde"
        shutil.copytree(sup.run_dir, copy / "runs" / sup.run_id)
        clear_live(copy / "runs" / sup.run_id)  # resume reads only a run nobody supervises
        seen["disk"] = disk_folds(copy, sup.run_id)
        await sup.stop_hard()
        await run

    with StubThread(policy=AgentPolicy(CLAIMING_PLANS)) as stub:
        cfg = settings(stub, deliverable=False, postmortem=False, reset_cap=0)
        sup = Supervisor(
            tmp_path, RunRequest("Review app.py", 1, verifier=False), cfg, events.append
        )
        asyncio.run(asyncio.wait_for(scenario(sup), 240))

    memory = seen["memory"]
    assert memory["status"] == "running" and memory["attempt"] == 2 and memory["resets"] == 1
    assert memory["ended"] is None and memory["exit_cause"] is None and memory["detail"] == ""
    for reader in ("view", "resume"):
        disk = seen["disk"][reader]["member-1"]
        assert disk["started"] == pytest.approx(memory["started"], abs=0.5), reader
        assert {**disk, "started": memory["started"]} == memory, reader
    assert seen["disk"]["finalize"]["member-1"]["started"] == pytest.approx(
        memory["started"], abs=0.5
    )


def test_one_listing_orders_sessions_by_start_then_by_last_write(tmp_path: Path) -> None:
    """Session files are named by their start second: two that started in the same
    second (a session that died at once and its reset) are told apart by which was
    written last. The member table's newest session, the member screen's list and the
    session `horde-tui resume` carries on all come from this one listing."""
    import os

    from horde_tui.store.transcript import sessions

    run = RunDir(tmp_path / ".horde", RUN, members=1)
    folder = run.path / "sessions" / "member-1"
    folder.mkdir()
    names = {
        "20260102T120000-ffffff.jsonl": EPOCH_0 + 1,  # started first, died at once
        "20260102T120000-aaaaaa.jsonl": EPOCH_0 + 5,  # the reset, same second, still going
        "20260102T115959-999999.jsonl": EPOCH_0 + 9,  # an older start written late (resumed)
    }
    for name, mtime in names.items():
        (folder / name).write_text(json.dumps({"role": "assistant", "content": name}) + "\n")
        os.utime(folder / name, (mtime, mtime))
    (folder / "notes.txt").write_text("")
    want = [
        "20260102T115959-999999.jsonl",
        "20260102T120000-ffffff.jsonl",
        "20260102T120000-aaaaaa.jsonl",
    ]
    assert [p.name for p in sessions(run.path, "member-1")] == want
    fold = MemberFold(run.path, json.loads((run.path / "MANIFEST.json").read_text()))
    fold.refresh_transcripts()
    (shown,) = fold.members(run_live=True)
    assert [Path(p).name for p in shown.transcripts] == want
    assert shown.final_message == "20260102T120000-aaaaaa.jsonl"  # the newest's text
    fold.close()


@pytest.mark.e2e
def test_a_member_waiting_for_its_continuation_is_not_ended_again(tmp_path: Path) -> None:
    """--until-stop: a session that finished within the cooldown waits for its next
    one (`member-continue`, status `waiting`). While it waits its ended session is not
    taken for a new exit: one `member-exit` and one `member-continue` per session."""
    from horde_tui.store.causes import FINISHED_CAUSES

    plans = {"member-1": [{"say": "nothing to do"}], **HELPERS}
    events: list[SupervisorEvent] = []

    async def scenario(sup: Supervisor) -> None:
        run = asyncio.create_task(sup.run())
        deadline = time.monotonic() + 60
        while not any(e.kind == "member-continue" for e in events):
            assert time.monotonic() < deadline, [e.kind for e in events]
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)  # six supervision ticks inside the cooldown
        sup.stop_clean(grace_s=1)
        await run

    with StubThread(policy=AgentPolicy(plans)) as stub:
        cfg = settings(stub, continue_cooldown_ms=60000, deliverable=False, postmortem=False)
        request = RunRequest("Answer", 1, until_stop=True)
        sup = Supervisor(tmp_path, request, cfg, sink=events.append)
        asyncio.run(asyncio.wait_for(scenario(sup), 120))

    mine = [e for e in events if e.member == "member-1"]
    exits = [e for e in mine if e.kind == "member-exit" and e.data["cause"] in FINISHED_CAUSES]
    continues = [e for e in mine if e.kind == "member-continue"]
    assert (len(exits), len(continues)) == (1, 1), [
        (e.kind, e.data.get("cause")) for e in mine if e.kind != "member-status"
    ]
