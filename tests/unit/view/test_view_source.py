"""The run source interface: both adapters, the supervisor and the test fake conform.

`view.source.RunSource` is what the run screen reads and drives; `HostedSource` (a
supervisor in this process) and `AttachedSource` (another process's run, through its
`control/` folder) implement it. `HostedRun` is what the app and the
hosted adapter use of a supervisor; the real `Supervisor` and the tests' `FakeSupervisor`
implement it. A member missing, a parameter renamed, a default changed or a coroutine
turned into a plain method fails here, so a fake cannot drift from what it stands for.
"""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from support.app import FakeSupervisor

from horde_tui.common.settings import Settings
from horde_tui.protocol import controls
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import SwarmSupervisor
from horde_tui.view.source import (
    AttachedSource,
    HostedRun,
    HostedSource,
    RunControls,
    RunSource,
)


def protocol_members(protocol: type) -> dict[str, Any]:
    """The members a Protocol declares (its own and its bases'), by name."""
    out: dict[str, Any] = {}
    for base in reversed(protocol.__mro__):
        if (
            base is object
            or not getattr(base, "_is_protocol", False)
            or base.__name__ == "Protocol"
        ):
            continue
        for name, value in vars(base).items():
            if not name.startswith("_"):
                out[name] = value
        for name in getattr(base, "__annotations__", {}):
            if not name.startswith("_"):
                out.setdefault(name, "attribute")
    return out


def implemented(cls: type, name: str) -> object | None:
    """`name` as `cls` itself defines it: a Protocol's own stub (inherited by a class
    that subclasses the Protocol, as `FakeSupervisor` does) is not an implementation."""
    for klass in cls.__mro__:
        if getattr(klass, "_is_protocol", False):
            continue
        if name in vars(klass):
            return vars(klass)[name]
    return None


def drift(instance: object, protocol: type) -> list[str]:
    """What `instance` lacks of `protocol` or its class declares differently, one line
    each: attributes are looked for on the instance, methods on its class."""
    cls = type(instance)
    problems = []
    for name, declared in protocol_members(protocol).items():
        if declared == "attribute":
            if not hasattr(instance, name):
                problems.append(f"{cls.__name__} lacks the attribute {name}")
            continue
        actual = implemented(cls, name)
        if actual is None:
            problems.append(f"{cls.__name__} lacks {name}")
            continue
        if isinstance(declared, property):
            if not isinstance(actual, property):
                problems.append(f"{cls.__name__}.{name} is not a property")
            continue
        if inspect.iscoroutinefunction(declared) != inspect.iscoroutinefunction(actual):
            problems.append(f"{cls.__name__}.{name}: async differs from {protocol.__name__}")
        want, got = inspect.signature(declared), inspect.signature(actual)
        want_params = [(p.name, p.kind, p.default) for p in want.parameters.values()]
        got_params = [(p.name, p.kind, p.default) for p in got.parameters.values()]
        if want_params != got_params:
            problems.append(f"{cls.__name__}.{name}{got} differs from {protocol.__name__}{want}")
    return problems


def test_adapters_implement_run_source(tmp_path: Path) -> None:
    hosted = HostedSource(FakeSupervisor(tmp_path))
    attached = AttachedSource(hosted.run_dir)
    try:
        assert drift(hosted, RunSource) == []
        assert drift(attached, RunSource) == []
    finally:
        attached.close()


def test_supervisor_and_fake_implement_the_hosted_interface(tmp_path: Path) -> None:
    settings = Settings(model="stub/demo-model")
    real = Supervisor(tmp_path, RunRequest("Review the sample target", 2, demo=True), settings)
    assert drift(real, HostedRun) == []
    assert drift(FakeSupervisor(tmp_path), HostedRun) == []


def test_drift_is_caught() -> None:
    """The check itself: a renamed parameter, a lost coroutine and a missing control fail."""

    class Drifted:
        async def pause(self, member: str) -> str:
            return ""

        def resume(self, target: str) -> str:
            return ""

    problems = drift(Drifted(), RunControls)
    assert any("pause" in p and "differs" in p for p in problems), problems
    assert any("resume" in p and "async" in p for p in problems), problems
    assert any("lacks stop_hard" in p for p in problems), problems

    class Inherits(RunControls):
        """Subclasses the Protocol, as the fake does, and implements nothing."""

    assert any("lacks pause" in p for p in drift(Inherits(), RunControls))


async def test_attached_source_answers_through_control(tmp_path: Path) -> None:
    """An attached control is a request in `control/` and the supervisor's answer."""
    run_dir = tmp_path / ".horde" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    source = AttachedSource(run_dir, answer_timeout_s=10)

    def answer_one() -> None:
        for _ in range(200):
            for path, request in controls.pending_requests(run_dir):
                assert not isinstance(request, str)
                controls.answer(
                    run_dir, path, request.id, True, f"{request.action} {request.target}"
                )
                return
            threading.Event().wait(0.02)

    answerer = threading.Thread(target=answer_one)
    answerer.start()
    try:
        assert await source.pause("member-2") == "pause member-2"
    finally:
        answerer.join()
        source.close()


async def test_hosted_source_calls_the_supervisor(tmp_path: Path) -> None:
    fake = FakeSupervisor(tmp_path)
    source = HostedSource(fake)
    assert await source.pause("member-1") == "paused member-1"
    assert await source.stop_clean() == "clean stop requested (stopped by user)"
    source.poll()  # the screen reads the stop from the run's files
    assert source.stop_reason == "stopped by user"
    assert await source.reset("member-2") == (
        "reset member-2: session stopped, a fresh attempt starts"
    )
    assert fake.calls == [("pause", "member-1"), ("stop_clean", "all"), ("reset", "member-2")]


def test_the_run_and_the_swarm_supervisor_take_the_same_controls(tmp_path: Path) -> None:
    """`control/` requests are answered by one loop (`controls.answer_pending`) for a
    run's supervisor and a swarm's alike: both take every control the same way."""
    settings = Settings(model="stub/demo-model")
    run = Supervisor(tmp_path, RunRequest("Review the sample target", 2, demo=True), settings)
    swarm = SwarmSupervisor(tmp_path, RunRequest("Review it", 2), settings, 2, swarm_id="s1")
    assert drift(run, controls.ControlTaker) == []
    assert drift(swarm, controls.ControlTaker) == []


def test_a_poll_builds_the_members_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folding the transcripts over the events is the costly part of a poll: the run
    view builds the members once and the source takes that list, not a second one."""
    from support.rundir import RunDir

    from horde_tui.view.members import MemberFold

    run = RunDir(tmp_path / ".horde", "20260102-120000-once")
    run.event(2, "member-spawn", "member-1", attempt=1, pid=11)
    built: list[bool] = []
    build = MemberFold.members

    def counted(self: MemberFold, run_live: bool) -> list[Any]:
        built.append(run_live)
        return build(self, run_live)

    monkeypatch.setattr(MemberFold, "members", counted)
    source = AttachedSource(run.path)
    try:
        source.poll()
        assert len(built) == 1
        assert list(source.members) == ["member-1", "member-2", "member-3"]
    finally:
        source.close()


def test_hosted_and_attached_show_one_run_alike(tmp_path: Path) -> None:
    """A run hosted here and the same run attached from another process show the same
    members: both read the run's files (lifecycle events, transcripts) through one view,
    so what the supervisor keeps in memory never decides what the table says."""
    from support.app import play_six

    from horde_tui.store.runs import mark_live
    from horde_tui.view.members import content

    fake = FakeSupervisor(tmp_path)
    hosted = HostedSource(fake)
    play_six(fake)
    (fake.run_dir / "TASK.md").write_text("# Task\n\nReview the sample target\n")
    planned = [{"name": s.name, "role": s.role, "layers": []} for s in fake.members.values()]
    (fake.run_dir / "MANIFEST.json").write_text(json.dumps({"members": planned}))
    mark_live(fake.run_dir)  # the other process's marker, for the attached side
    attached = AttachedSource(fake.run_dir)
    try:
        hosted.poll()
        attached.poll()
        assert list(hosted.members) == list(attached.members) == list(fake.members)
        for name, state in hosted.members.items():
            assert content(state) == content(attached.members[name]), name
        member_1 = hosted.members["member-1"]
        assert (member_1.turns, member_1.prompt_tokens + member_1.completion_tokens) == (3, 5200)
        assert member_1.transcripts, "the session the member wrote is listed"
    finally:
        hosted.close()
        attached.close()


def test_a_hosted_run_shows_what_its_files_say(tmp_path: Path) -> None:
    """The hosted source reads the members from disk, not from the supervisor: a
    finalize helper (which the supervisor does not keep among its members) and the
    answers in a member's transcript show; the supervisor's events only wake."""
    fake = FakeSupervisor(tmp_path, count=2)
    source = HostedSource(fake)
    fake.spawn("member-1", at=1)
    fake.answer("member-1", 2, (700, 50), 0.002, "bash", {"command": "ls"})
    fake.emit("member-spawn", "synthesis", 30, attempt=1, pid=4100, role="synthesis")
    fake.members["member-1"].turns = 99  # memory the screen must not read
    try:
        assert [s.status for s in source.members.values()] == ["pending", "pending"]
        events = source.poll()
        assert [e.kind for e in events] == ["member-spawn", "member-spawn"]
        assert list(source.members) == ["member-1", "member-2", "synthesis"]
        member_1 = source.members["member-1"]
        assert (member_1.status, member_1.turns, member_1.current_tool) == ("running", 1, "bash")
        assert member_1.prompt_tokens + member_1.completion_tokens == 750
        assert source.members["synthesis"].role == "synthesis"
        assert source.poll() == [], "each event is handed over once"
    finally:
        source.close()
