"""Carry a run on after its supervisor is gone: `horde-tui resume RUN`, which is also
how a handed-off run goes on (the hosting side of a handoff is `handoff.py`).

Everything a new supervisor needs is on disk: the request and settings in MANIFEST.json
and TASK.md, the lifecycle so far in `events.jsonl` (phase, each member's attempts and
resets, a clean stop under way, the start time that deadlines count from), and each
member's conversation in its newest transcript. `load_resume` reads them, `resume_run`
records `run-resume`, starts a new gateway, carries on every member that had not
finished (`HORDE_RESUME_SESSION`: the same session, not a fresh one) and goes on with
the normal lifecycle; a run interrupted after discovery goes straight to repair or
finalize, as its events say.

A handoff (`Supervisor.handoff`, then `handoff.release_for_handoff`) is the hosted side of the
same path: the hosting process stops its members and gateway, records them as handed
off (neither failed nor finished), clears its live marker and does not finalize; the
detached `horde-tui resume RUN` it then starts picks the sessions up.

`horde-tui resume RUN --member member-3` carries one member's session on: in a live run
its supervisor does it (a `reset` control with `session`, `Supervisor.continue_session`);
in a run whose supervisor is gone, ended or not, `load_resume(..., member=)` and
`resumed_supervisor` start a one-member continuation under the same run (same ledgers,
the transcript reloaded, the run's own settings) that finalizes the run again when that
session ends, REPORT.md saying so.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from horde_tui.common import prompts
from horde_tui.common.reaper import end_session
from horde_tui.common.settings import Settings, SettingsError, load_settings
from horde_tui.common.watchdog import POLL_S, pid_alive
from horde_tui.protocol.outcome import RunSummary
from horde_tui.store import runs, usage
from horde_tui.store.causes import HANDOFF
from horde_tui.store.members import MemberState, fold_lifecycle
from horde_tui.store.runs import run_state, supervisor_pid
from horde_tui.store.timestamps import epoch
from horde_tui.store.transcript import SessionStats, sessions
from horde_tui.supervisor.context import RunContext, StopState
from horde_tui.supervisor.finalize import read_events
from horde_tui.supervisor.observe import Sink
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

OLD_MEMBERS_WAIT_S = 5 * POLL_S
"""How long a resume waits for the previous supervisor's members to notice it is gone
(their watchdogs poll every `POLL_S`) before it ends the ones still there."""
LEAST_BUDGET_USD = 1e-6
"""The gateway takes only a positive budget."""
AT_WORK = ("running", "paused")
"""A member in one of these statuses had a session going when its supervisor stopped."""


class ResumeRefused(ValueError):
    """The run cannot be resumed; the message is the one line to show."""


class MemberRefused(ResumeRefused):
    """`resume RUN --member` named a member the run cannot carry on (bad input: exit 2)."""


@dataclass
class ResumePoint:
    """A run's position in its lifecycle, read from its events."""

    run_id: str
    request: RunRequest
    settings: Settings
    started: float
    phase: str = "discovery"
    """discovery, repair or finalize: where the run goes on."""
    canary_passed: bool = False
    members: dict[str, MemberState] = field(default_factory=dict)
    """Where each planned member stood, folded as every reader folds it
    (`store.members.fold_lifecycle`)."""
    stop: dict[str, Any] | None = None
    """The last whole-run `stop-clean` event, if one was under way."""
    hard_stopped: bool = False
    solved_seen: dict[str, float] = field(default_factory=dict)
    forecast: dict[str, Any] | None = None
    """The `forecast` event made after the canary, carried to the report."""
    resumed_at: list[float] = field(default_factory=list)
    only: str | None = None
    """A one-member continuation's member (`resume RUN --member`)."""
    ended: str = ""
    """The outcome of the run's last `run-end`, if it had ended."""


def check_resumable(run_dir: Path, ended_too: bool = False) -> None:
    """Refuse a run that is live, not a supervisor's run, or ended (unless `ended_too`:
    a one-member continuation goes on after the end), one line each."""
    run = run_dir.name
    if not (run_dir / "MANIFEST.json").is_file():
        raise ResumeRefused(
            f"refused: {run_dir} is not a run a supervisor started (no MANIFEST.json); "
            "`horde-tui app` lists the runs"
        )
    if run_state(run_dir) == "active":
        pid = supervisor_pid(run_dir)
        raise ResumeRefused(
            f"refused: run {run} is live (supervisor pid {pid}); only a run whose "
            f"supervisor is gone can be resumed; watch it with `horde-tui attach {run}`"
        )
    ended = [e for e in read_events(run_dir) if e.get("kind") == "run-end"]
    if ended and not ended_too:
        raise ResumeRefused(
            f"refused: run {run} already ended ({ended[-1].get('outcome')}); its report is "
            f"{run_dir / 'REPORT.md'}; start a new run instead"
        )


def member_transcript(run_dir: Path, member: str) -> Path:
    """The newest transcript of `member`, which the run must have had; `MemberRefused`
    says which rule a bad name breaks."""
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
        names = [str(m["name"]) for m in manifest.get("members") or []]
    except (OSError, ValueError, KeyError, TypeError):
        names = []
    if member not in names:
        raise MemberRefused(
            f"refused: run {run_dir.name} has no member named {member!r} (its members: "
            f"{', '.join(names) or 'none recorded'}); name one of them"
        )
    found = sessions(run_dir, member)
    if not found:
        raise MemberRefused(
            f"refused: {member} of run {run_dir.name} has no transcript (sessions/{member}/ "
            "holds none: it never started), so there is no session to carry on"
        )
    return found[-1]


def load_resume(
    horde_dir: Path,
    run_id: str,
    environ: Mapping[str, str] | None = None,
    member: str | None = None,
) -> ResumePoint:
    """Read a resumable run's request, settings and lifecycle position from disk; with
    `member`, for a one-member continuation of that member's session (`MemberRefused`
    when it has none)."""
    run_dir = runs.run_dir(horde_dir, run_id)
    check_resumable(run_dir, ended_too=member is not None)
    if member is not None:
        member_transcript(run_dir, member)
    try:
        manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
        task = (run_dir / "TASK.md").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise ResumeRefused(
            f"refused: run {run_id}'s MANIFEST.json or TASK.md is unreadable: {exc}"
        ) from None
    asked = manifest.get("request") or {}
    request = RunRequest(
        prompt=prompt_of(task),
        count=int(asked.get("count") or len(manifest.get("members") or [])),
        layers=list(asked.get("layers") or []),
        verifier=bool(asked.get("verifier", True)),
        until_stop=bool(asked.get("until_stop", False)),
        demo=bool(manifest.get("demo_model")),
        baseline=str(asked.get("baseline") or ""),
    )
    point = ResumePoint(
        run_id,
        request,
        recorded_settings(horde_dir, manifest, environ),
        started=float(manifest.get("created") or time.time()),
        members={
            str(m["name"]): MemberState(
                str(m["name"]), str(m.get("role", "member")), tuple(m.get("layers") or ())
            )
            for m in manifest.get("members") or []
        },
    )
    point.only = member
    for ev in read_events(run_dir):
        if ev.get("type") == "lifecycle":
            _fold(point, ev)
    return point


def prompt_of(task: str) -> str:
    """The prompt inside TASK.md (`setup.task_text`: the text between the title and the
    configuration)."""
    body = task.removeprefix("# Task\n\n")
    return body.rpartition("\n\n## Configuration\n")[0].strip() or body.strip()


def recorded_settings(
    horde_dir: Path, manifest: dict[str, Any], environ: Mapping[str, str] | None
) -> Settings:
    """The run's own settings (MANIFEST.json keeps all but the key, a swarm's
    CONFIG.json the same); the key, which is never written down, comes from this
    environment or the config file as for any run."""
    try:
        key = load_settings(horde_dir / "config.toml", environ).gateway.api_key
        return Settings.model_validate({**(manifest.get("config") or {}), "api_key": key})
    except (SettingsError, ValueError) as exc:
        raise ResumeRefused(f"refused: the run's settings cannot be read again: {exc}") from None


def _fold(point: ResumePoint, ev: dict[str, Any]) -> None:
    kind, member = ev.get("kind"), ev.get("member")
    when = epoch(ev.get("ts")) or time.time()
    if kind == "run-start":
        point.started = when
    elif kind == "run-resume":
        point.resumed_at.append(when)
    elif kind == "run-end":
        point.ended = str(ev.get("outcome") or "ended")
    elif kind == "phase-end" and ev.get("phase") == "discovery":
        point.phase = "repair"
    elif (kind == "phase-end" and ev.get("phase") == "repair") or (
        kind == "repair-skipped" and member is None
    ):
        point.phase = "finalize"
    elif kind == "phase-start" and ev.get("phase") not in ("discovery", "repair"):
        point.phase = "finalize"  # finalize or a helper phase began
    elif kind == "forecast":
        point.forecast = ev
    elif kind == "stop-clean":
        point.stop = ev
    elif kind == "stop-hard" and ev.get("whole_run"):
        point.hard_stopped = True
    elif isinstance(kind, str) and kind.startswith("solved-") and member is not None:
        status = kind.removeprefix("solved-")
        # `solved-proposed` and `solved-reopened` announce a pending round.
        status = "pending" if status in ("proposed", "reopened") else status
        point.solved_seen[f"{ev.get('round')}:{status}"] = when
    elif kind == "canary" and str(ev.get("result", "")).startswith("ok"):
        point.canary_passed = True  # the only sign of it in a one-member run
    elif fold_lifecycle(point.members, ev):
        if kind == "member-spawn" and member != next(iter(point.members)):
            point.canary_passed = True


class ResumedSupervisor(Supervisor):
    """A supervisor whose `run()` carries an existing run on from `point` instead of
    setting up a new one, so the app and headless mode host it like any other."""

    def __init__(
        self,
        workdir: Path,
        point: ResumePoint,
        sink: Sink | None = None,
        horde_dir: Path | None = None,
        horde: int = 1,
    ) -> None:
        super().__init__(
            workdir,
            point.request,
            point.settings,
            sink,
            run_id=point.run_id,
            horde=horde,
            horde_dir=horde_dir,
        )
        self.point = point

    async def run(self) -> RunSummary | None:
        """Carry the run on to its report (None: handed off again)."""
        if self.point.only:
            return await self.carry_on(partial(_continue_one, self, self.point))
        return await self.carry_on(partial(_restart, self, self.point))

    def gateway_budget_usd(self) -> float | None:
        """The budget less what the run's sessions have spent so far (their transcripts'
        priced calls); a spent budget leaves the least the gateway takes, and the run's
        `.budget-reached` stops it clean as before."""
        limit = self.settings.gateway.max_cost_usd
        if limit is None:
            return None
        spent = sum(m.cost_usd or 0.0 for m in self.members.values())
        return max(limit - spent, LEAST_BUDGET_USD)


def resumed_supervisor(
    workdir: Path,
    point: ResumePoint,
    sink: Sink | None = None,
    horde_dir: Path | None = None,
    horde: int = 1,
) -> ResumedSupervisor:
    """A supervisor for the run, standing where its events left it (`horde_dir`: a
    swarm's horde, `.horde/swarms/<id>/hN/`, whose members still work in `workdir`)."""
    sup = ResumedSupervisor(workdir, point, sink, horde_dir, horde)
    sup.started = point.started
    sup.resumed_at = [*point.resumed_at, time.time()]
    sup.solved_seen = dict(point.solved_seen)
    sup.forecast = point.forecast
    if point.only:  # a new bout of one session: the run's old stop and deadline are over
        sup.one_member, sup.deadline_from = point.only, time.time()
        sup.request.until_stop = False  # it ends when that session ends
    else:
        _carry_stop(sup, point)
    for name, state in sup.members.items():
        m = point.members.get(name)
        if m is None:
            continue
        state.attempt, state.resets = m.attempt, m.resets
        if m.status in ("exited", "waiting"):
            state.status, state.exit_cause = "exited", m.exit_cause
        _count_sessions(sup.run_dir, state)
    return sup


def _carry_stop(sup: ResumedSupervisor, point: ResumePoint) -> None:
    """The stop under way when the supervisor went: a whole-run resume goes on with it."""
    sup.hard_stopped = point.hard_stopped
    if point.stop is not None:
        ev = point.stop
        began = epoch(ev.get("ts")) or time.time()
        sup.stop = StopState(
            str(ev.get("reason") or "stopped by user"),
            began + float(ev.get("grace_s") or 0),
            bool(ev.get("postmortem")),
            started=began,
        )
        sup.outcome = ev.get("outcome") or None
        sup.diagnosis = str(ev.get("diagnosis") or "")
    if point.hard_stopped:
        sup.outcome = sup.outcome or "stopped by user"
        sup.diagnosis = sup.diagnosis or "stopped hard by the user"


def _count_sessions(run_dir: Path, state: Any) -> None:
    """A member's turns, tokens and cost so far, from all its transcripts: the report
    adds up every session, and the resumed ones continue from these."""
    for path in sessions(run_dir, state.name):
        stats = SessionStats(path)
        stats.refresh()
        stats.close()
        state.transcripts.append(str(path))
        state.turns += stats.turns
        usage.fold(state, stats.prompt_tokens, stats.completion_tokens, stats.cost_usd)


async def _restart(sup: RunContext, point: ResumePoint) -> str:
    """Record the resume, start a gateway, carry on the members that were at work;
    return the phase the run goes on with."""
    phase = "finalize" if point.hard_stopped else point.phase
    carry = carried_on(sup, point) if phase == "discovery" else {}
    if point.canary_passed:
        sup.canary = "ok"
    if phase != "discovery":
        _lost_sessions(sup, point)
    sup.emit(
        "run-resume",
        phase=phase,
        members=sorted(carry),
        interrupted_at=_last_event_time(sup.run_dir),
    )
    await _end_old_members(point)
    if phase == "finalize":
        if not sup.hard_stopped:
            await sup.start_gateway()  # the deliverable and post-mortem helpers need it
        return phase
    await sup.start_gateway()
    if phase == "repair":
        return phase
    first = sup.specs[0].name
    if not point.canary_passed:
        # The canary may not have answered yet: member-1 carries on alone first, and a
        # session that stays silent gets the canary's fresh attempts.
        if first in carry:
            await _carry_on_member(sup, first, carry.pop(first))
            if await sup.await_output(first, sup.settings.supervisor.canary_ms / 1000):
                sup.canary = "ok"
            elif not await _canary_again(sup, first):
                return "finalize"
        elif not await _canary_again(sup, first):
            return "finalize"
        carry.update({s.name: "fresh" for s in sup.specs[1:] if s.name not in carry})
    for name, how in carry.items():
        await _carry_on_member(sup, name, how)
    return "discovery"


async def _continue_one(sup: RunContext, point: ResumePoint) -> str:
    """A one-member continuation: the run's clean stop (if any) is over, the member's
    session goes on from its transcript under a new gateway, and the run is finalized
    again when it ends (`Supervisor.one_member`: no repair)."""
    member = point.only
    assert member is not None
    sup.canary = "ok" if point.canary_passed else sup.canary
    if sup.parent is not None:  # members read the wind-down from this sentinel
        sup.parent.paths.stop_clean_sentinel(sup.run_id).unlink(missing_ok=True)
    _lost_sessions(sup, point, but=member)
    sup.emit(
        "run-resume",
        phase="discovery",
        members=[member],
        continuation=member,
        ended=point.ended or None,
        interrupted_at=_last_event_time(sup.run_dir),
    )
    await _end_old_members(point)
    await sup.start_gateway()
    sup.emit("phase-start", phase="discovery")
    if not await sup.continue_session(member, asked=True):
        sup.emit("phase-end", phase="discovery")
        return "finalize"
    return "discovery"


async def _canary_again(sup: RunContext, first: str) -> bool:
    if first in sup.tasks and not sup.tasks[first].done():
        await sup.procs[first].stop_hard()
        await sup.tasks[first]
    if await sup.run_canary():
        return True
    sup.emit("phase-end", phase="discovery")
    return False


def _lost_sessions(sup: RunContext, point: ResumePoint, but: str | None = None) -> None:
    """After discovery nothing is carried on (repair starts its own sessions), nor in a
    one-member continuation but its member (`but`): a session that was running when the
    supervisor stopped ended with it."""
    for name, m in point.members.items():
        if m.status in AT_WORK and name in sup.members and name != but:
            detail = "its supervisor stopped while this session ran"
            sup.emit("member-exit", name, cause="killed", detail=detail)


def carried_on(sup: RunContext, point: ResumePoint) -> dict[str, str]:
    """Members to start again and how: `resume` (their session was cut short: running
    when the supervisor died, or handed off), `fresh` (a reset decided but not started,
    or never started after the canary) or `continue` (an --until-stop continuation)."""
    carry: dict[str, str] = {}
    for spec in sup.specs:
        m = point.members.get(spec.name) or MemberState(spec.name, spec.role)
        if m.status in AT_WORK or (m.status == "exited" and m.exit_cause == HANDOFF):
            carry[spec.name] = "resume"
        elif m.status == "starting" or (m.status == "pending" and point.canary_passed):
            carry[spec.name] = "fresh"
        elif m.status == "waiting" and sup.stop is None:
            carry[spec.name] = "continue"
    return carry


async def _carry_on_member(sup: RunContext, name: str, how: str) -> None:
    if how == "continue":
        await sup.spawn(name, prompts.CONTINUATION_BRIEF)
        return
    if how == "resume" and await sup.continue_session(name):
        return  # the same session, carried on: not a new attempt
    await sup.spawn(name)


def _last_event_time(run_dir: Path) -> float | None:
    events = read_events(run_dir)
    return epoch(events[-1].get("ts")) if events else None


async def _end_old_members(point: ResumePoint) -> None:
    """Wait for the previous supervisor's members to exit (their watchdogs, and the old
    gateway's, end them once it is gone); end those still running a member after the
    wait, with their commands, so no session is carried on by two processes."""
    pids = [m.pid for m in point.members.values() if m.pid and m.status in AT_WORK]
    deadline = time.monotonic() + OLD_MEMBERS_WAIT_S
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        await asyncio.sleep(0.1)
    for pid in pids:
        if pid_alive(pid) and _is_member(pid):
            await asyncio.to_thread(end_session, pid)  # the member with its commands


def _is_member(pid: int) -> bool:
    """The process is a horde member (not an unrelated one that reused the pid)."""
    try:
        return b"horde_tui.member" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
