"""`Supervisor`: one run from setup to REPORT.md, as plain asyncio.

Canary (member-1 alone until the model answers), fan-out, supervision (exits, resets,
stalls, the solved poll, controls, deadline, budget), then finalize. Observers (the app,
headless mode) get `SupervisorEvent`s through one injected sink and never poll internals.
Lifecycle events also go to `events.jsonl` under actor `parent`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from horde_tui.common import prompts
from horde_tui.common.settings import Settings, env_name, setting_text
from horde_tui.protocol import controls
from horde_tui.protocol.outcome import RunSummary, ending_of, outcome_of
from horde_tui.protocol.targets import ALL, Target, parse_targets, selects
from horde_tui.sandbox.policy import SandboxPolicy, passed_through
from horde_tui.sandbox.policy import resolve as resolve_sandbox
from horde_tui.sandbox.shell import scrubbed_env
from horde_tui.store import identity
from horde_tui.store.causes import (
    FINISHED_CAUSES,
    NO_LEDGER_PROGRESS,
    RESET_CAUSES,
    USER_RESET,
    USER_STOP,
)
from horde_tui.store.ledgers.findings import pending_reviews
from horde_tui.store.members import MemberState, external_members, fold_lifecycle
from horde_tui.store.runs import DETACHED_LOG_ENV, clear_live, mark_live, reattach, run_dir
from horde_tui.store.siblings import siblings_json
from horde_tui.store.standing import standing
from horde_tui.store.store import HordeStore
from horde_tui.store.transcript import sessions
from horde_tui.supervisor import finalize, handoff, lessons, lifecycle, repair, reviews, watch
from horde_tui.supervisor.confirm import DECISIONS, ConfirmDesk
from horde_tui.supervisor.context import StopState
from horde_tui.supervisor.forecast import canary_forecast
from horde_tui.supervisor.observe import Sink, SupervisorEvent
from horde_tui.supervisor.processes import (
    GatewayHandle,
    GatewayStartError,
    MemberProcess,
    spawn_gateway,
    spawn_member,
    stop_gateway,
)
from horde_tui.supervisor.setup import (
    MemberSpec,
    RunRequest,
    assign_roles,
    new_run_id,
    seed_plan,
    write_run_files,
)

TICK_S = 0.25
SESSION_HANDLED = frozenset({"exited", "stopped", "waiting"})
"""A member in one of these has no session going whose end is still to be handled
(`waiting`: its ended session led to an --until-stop continuation, due later)."""


class Supervisor:
    """Runs one horde. Construct, then `await run()`; controls may be called meanwhile.

    The phases in their own modules (watch, reviews, repair, finalize, handoff, resume)
    see it as a `context.RunContext` and use only the names listed there."""

    def __init__(
        self,
        workdir: Path,
        request: RunRequest,
        settings: Settings,
        sink: Sink | None = None,
        run_id: str | None = None,
        horde: int = 1,
        horde_dir: Path | None = None,
    ) -> None:
        self.workdir = workdir.resolve()
        self.horde_dir = horde_dir.resolve() if horde_dir else self.workdir / ".horde"
        """Ledgers and runs: `.horde/`, or a swarm's `.horde/swarms/<id>/hN/` while the
        members still work in `workdir`."""
        self.request = request
        self.settings = settings
        self.sink = sink or (lambda event: None)
        self.run_id = run_id or new_run_id()
        self.horde = horde
        self.run_dir = run_dir(self.horde_dir, self.run_id)
        self.specs: list[MemberSpec] = assign_roles(request)
        self.members: dict[str, MemberState] = {
            s.name: MemberState(s.name, s.role, s.layers) for s in self.specs
        }
        self.procs: dict[str, MemberProcess] = {}
        self.tasks: dict[str, asyncio.Task[int]] = {}
        self.gateway: GatewayHandle | None = None
        self.parent: HordeStore | None = None
        self.stop: StopState | None = None
        self.hard_stopped = False
        self.halted = asyncio.Event()
        """Set with `hard_stopped`: a finalize helper at work is stopped at once."""
        self._spawning = asyncio.Lock()
        """Held while a session starts, and by a hard stop: the stop waits for it."""
        self.outcome: str | None = None
        self.diagnosis = ""
        self.canary = "not run"
        self.forecast: dict[str, Any] | None = None
        """The `forecast` event's data once the canary passed (`supervisor.forecast`)."""
        self.started = time.time()
        self.solved_seen: dict[str, float] = {}
        self._next_review_pass = time.time() + reviews.INTERVAL_S
        self._continuing: set[str] = set()
        """--until-stop: members between a finished session and their next one."""
        self._background: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()
        self._supervising = False
        """True while `_supervise` runs: the only phase whose exits lead to resets."""
        self._phases: asyncio.Task[None] | None = None
        self.handing_off = False
        """Set by `handoff`: the phases were ended to let another process carry on."""
        self.resumed_at: list[float] = []
        """When `horde-tui resume` carried this run on (its report says so)."""
        self.reattach: str | None = None
        """Where to re-attach, when a detached process carries the run (`carry_on`)."""
        self.one_member: str | None = None
        """A one-member continuation (`horde-tui resume RUN --member`): the member whose
        session it carries on. No repair follows; the others stay as they ended."""
        self.deadline_from: float | None = None
        """When the deadline counts from, if not `started`: a one-member continuation's
        own start (the run's own deadline may be long past)."""
        mode, self.sandbox_note = resolve_sandbox(
            settings.sandboxing.sandbox, settings.sandboxing.sandbox_network
        )
        self.sandbox = SandboxPolicy(
            mode,
            settings.sandboxing.sandbox_network,
            tuple(settings.sandboxing.sandbox_env),
            git_write=settings.sandboxing.sandbox_git_write,
        )
        """How members' commands are confined, decided once for the run; `sandbox_note`
        says so when they run without a sandbox (run header, REPORT.md)."""
        self.member_procs: dict[str, identity.Proc | None] = dict.fromkeys(self.members)
        """Each member's latest process, for the run's identity record (`store.identity`)."""
        self.confirms = ConfirmDesk(self.run_dir, self.emit, self._asking, horde)
        """Confirm mode's queue of commands waiting for a person (`supervisor/confirm.py`)."""

    # -- observing ------------------------------------------------------------------------

    def emit(self, kind: str, member: str | None = None, record: bool = True, **data: Any) -> None:
        """Tell observers; lifecycle kinds also go to events.jsonl as the parent. A
        member's step changes its state here, by the transition every reader of the
        file uses (`store.members.fold_lifecycle`), so memory and disk agree."""
        fields = {"type": "lifecycle", "kind": kind, **data}
        if member:
            fields["member"] = member
        if record and self.parent is not None:
            lifecycle.append(self.parent, self.run_id, fields)
        fold_lifecycle(self.members, fields, when=time.time())
        self.sink(SupervisorEvent(kind, member, data))

    def on_status(self, state: MemberState, event: dict[str, Any]) -> None:
        """A member's status line: observers hear it; usage and exits wake the loop."""
        self.sink(SupervisorEvent("member-status", state.name, event))
        if event.get("type") in ("usage", "exit"):
            self._wake.set()

    # -- the lifecycle ------------------------------------------------------------------------

    async def run(self) -> RunSummary | None:
        """Set up, canary, fan out, supervise, finalize; return the run's summary (None:
        handed off to another process, see `handoff`)."""
        write_run_files(self.horde_dir, self.run_id, self.request, self.settings, self.specs)
        return await self.carry_on(self._open)

    async def _open(self) -> str:
        """A new run's start: the plan, the gateway, the canary, the fan-out. Returns the
        phase the run goes on with (`discovery`, or `finalize` after a failed canary)."""
        if self.request.layers:
            seed_plan(self.horde_dir, self.run_id, self.specs)
        self.emit(
            "run-start",
            members=len(self.specs),
            model=self.settings.gateway.model,
            layers=self.request.layers,
            sandbox=self.sandbox_note or self.sandbox.mode,
        )
        await self.start_gateway()
        self.emit("phase-start", phase="discovery")
        if not await self.run_canary():
            self.emit("phase-end", phase="discovery")
            return "finalize"
        self.forecast = canary_forecast(
            self.members[self.specs[0].name],
            len(self.specs),
            time.time(),
            self.settings.supervisor.max_minutes,
            self.settings.gateway.max_cost_usd,
        ).as_event()
        self.emit("forecast", **self.forecast)
        for spec in self.specs[1:]:
            if not await self.spawn(spec.name):
                break  # stopped during the fan-out: the rest never start
        return "discovery"

    async def carry_on(self, start: Callable[[], Awaitable[str]]) -> RunSummary | None:
        """Run the lifecycle from `start` (a new run's `_open`, or a resume's) to the
        report. The phases run as their own task so that `handoff` can end them without
        finalizing; anything else that ends them (an error, this coroutine cancelled)
        still finalizes, so a report is written."""
        mark_live(self.run_dir)
        identity.record_processes(self.run_dir, self.member_procs)
        self.parent = HordeStore(self.horde_dir, "parent")
        self.parent.ensure_run(self.run_id, None)
        log = os.environ.get(DETACHED_LOG_ENV)
        if log:  # no terminal saw the detach message (a hang-up): the events and log say it
            # The detached process runs in the run's folder (`launch.start_detached`).
            self.reattach = reattach(Path.cwd(), self.run_id)
            self.emit("run-detached", reattach=self.reattach, log=log)
        phases = self._phases = asyncio.create_task(self._through_repair(start))
        serving = asyncio.create_task(self._serve_controls())
        summary: RunSummary | None = None
        try:
            await asyncio.wait({phases})
        finally:
            if not phases.done():  # this coroutine was cancelled: end the phases, report
                phases.cancel()
                await asyncio.wait({phases})
            if self.handing_off and phases.cancelled():
                serving.cancel()
                await handoff.release_for_handoff(self)
            else:
                try:
                    summary = await self._finalize()
                finally:
                    serving.cancel()
            clear_live(self.run_dir)
        return summary

    async def _serve_controls(self) -> None:
        """Controls from other shells and confirm mode's requests, in every phase: a
        stop-clean must reach the canary, repair and finalize too, not only discovery."""
        while True:
            self.confirms.serve()
            await controls.answer_pending(self.run_dir, self, controls.CONFIRM_ACTIONS)
            await asyncio.sleep(TICK_S)

    def _asking(self, name: str, pid: int | None) -> bool:
        """Whether the session of `name` that asked (its pid) still runs."""
        handle = self.procs.get(name)
        return name in self.running() and handle is not None and pid in (None, handle.pid)

    async def _through_repair(self, start: Callable[[], Awaitable[str]]) -> None:
        try:
            phase = await start()
            if phase == "discovery":
                self._supervising = True
                try:
                    await self._supervise()
                finally:
                    self._supervising = False
                self._settle_answer()
                self.emit("phase-end", phase="discovery")
                phase = "repair"
                if self.one_member:  # the others' threads waited for the whole run
                    self.emit("repair-skipped", reason="a one-member continuation")
                    phase = "finalize"
            if phase == "repair":
                await repair.run_repair(self)
                self._settle_answer()  # repair may have validated the pending answer
        except Exception as exc:  # a supervisor bug must still leave a report
            self.outcome = self.outcome or "failed"
            self.diagnosis = self.diagnosis or f"supervisor error: {type(exc).__name__}: {exc}"
            await self._stop_all_hard()

    def handoff(self) -> str:
        """End this process's part in the run without ending the run, so a detached
        `horde-tui resume` can carry it on: the phases stop, members and the gateway are
        stopped and recorded as handed off (`handoff.release_for_handoff`), and nothing is
        finalized. `run()` then returns None."""
        phases = self._phases
        if self.handing_off:
            return "a handoff is already under way"
        if phases is None or phases.done():
            return "refused: the run is finalizing (writing its report); it ends in moments"
        self.handing_off = True
        phases.cancel()
        return "handing the run off: members stop now and carry on in a detached supervisor"

    async def start_gateway(self) -> None:
        """Start the run's gateway; a start failure's own line becomes the diagnosis."""
        env = dict(os.environ)
        env.update(self._gateway_env())
        try:
            self.gateway = await spawn_gateway(self.run_dir, env, self.gateway_budget_usd())
        except GatewayStartError as exc:
            # Not a supervisor bug: the gateway's own line (a budget it cannot enforce, a
            # missing model) is the diagnosis, without "supervisor error" in front.
            self.diagnosis = str(exc)
            raise

    def gateway_budget_usd(self) -> float | None:
        """What the gateway may spend: it counts from zero each time it starts, so a
        resumed run (`resume.ResumedSupervisor`) gives it only what is left."""
        return self.settings.gateway.max_cost_usd

    def _gateway_env(self) -> dict[str, str]:
        return gateway_env(self.settings)

    def member_env(self, spec: MemberSpec, attempt: int, **extra: str) -> dict[str, str]:
        """A member's environment: no provider keys, its identity, the gateway, the
        sandbox policy (with the variables the user let through to commands)."""
        assert self.gateway is not None
        env = scrubbed_env(os.environ)
        env.pop(DETACHED_LOG_ENV, None)  # a `run` started inside a member is not detached
        env.update(passed_through(os.environ, self.sandbox.env_names))
        env.update(self.sandbox.as_env())
        env.update(
            HORDE_MEMBER=spec.name,
            HORDE_NAME=spec.name,
            HORDE_DIR=str(self.horde_dir),
            HORDE_RUN=self.run_id,
            HORDE_ROLE=spec.role,
            HORDE_ATTEMPT=str(attempt),
            HORDE_PARENT_PID=str(os.getpid()),
            HORDE_GATEWAY_URL=self.gateway.url,
            HORDE_GATEWAY_TOKEN=self.gateway.token,
        )
        env.update(member_settings_env(self.settings))
        if spec.layers:
            env["HORDE_LAYER"] = "; ".join(spec.layers)
        if self.request.siblings:
            env.update(
                HORDE_HORDE=f"h{self.horde}", HORDE_SIBLINGS=siblings_json(self.request.siblings)
            )
        env.update(extra)
        return env

    def closed(self) -> str:
        """Why no session may start any more ('' while one may): after a hard stop, or a
        clean stop other than the wind-down that follows a solve (repair still serves
        that one), nothing is spawned or respawned, whenever the stop came (issue 28)."""
        if self.hard_stopped:
            return "the run was stopped hard"
        if self.stop is not None and self.stop.reason not in repair.REPAIR_AFTER_STOPS:
            return f"the run is stopping ({self.stop.reason})"
        return ""

    async def spawn(self, name: str, brief: str = "", **env: str) -> bool:
        """The member's next session (a new attempt), recorded in the run's identity;
        False, and nothing started, once the run is stopping (`closed`). A hard stop
        that comes while a session starts waits for it (`_spawning`), then stops it with
        the rest: none is left running after the stop."""
        async with self._spawning:
            if self.closed():
                return False
            state = self.members[name]
            spec = next(s for s in self.specs if s.name == name)
            state.attempt += 1  # the next attempt's number (resume carries one on in place)
            state.produced_output = False
            state.first_output = None
            state.first_turn = None
            state.status = "starting"
            extra = {"HORDE_BRIEF": brief, **env} if brief else dict(env)
            handle, task = await spawn_member(
                state,
                self.member_env(spec, state.attempt, **extra),
                self.workdir,
                self.run_dir / f"{name}.log",
                self.on_status,
            )
            self.procs[name] = handle
            self.tasks[name] = task
            self.member_procs[name] = identity.proc_of(handle.pid)
            identity.record_processes(self.run_dir, self.member_procs)
            self.emit("member-spawn", name, attempt=state.attempt, pid=handle.pid, role=state.role)
        return True

    async def continue_session(self, name: str, asked: bool = False) -> bool:
        """Carry the member's newest session on from its transcript
        (`HORDE_RESUME_SESSION`): the same session and attempt, not a new one. `asked`: a
        person asked for it (`resume RUN --member`), recorded as `session-resume` for
        the report. False, and nothing started, without a transcript or once the run
        is stopping (`closed`)."""
        latest = sessions(self.run_dir, name)
        if not latest or self.closed():
            return False
        if asked:
            self.emit("session-resume", name, transcript=str(latest[-1].relative_to(self.run_dir)))
        state = self.members[name]
        state.attempt -= 1  # `spawn` counts one on: the same attempt goes on
        if await self.spawn(name, HORDE_RESUME_SESSION=str(latest[-1])):
            return True
        state.attempt += 1
        return False

    # -- canary ----------------------------------------------------------------------------------

    async def run_canary(self) -> bool:
        """member-1 alone until the model answers; one retry; else stop with the cause."""
        first = self.specs[0].name
        for attempt in (1, 2):
            if not await self.spawn(first):
                return self._canary_stopped()
            ok = await self.await_output(first, self.settings.supervisor.canary_ms / 1000)
            if ok:
                self.canary = "ok" if attempt == 1 else "ok after a retry"
                self.emit("canary", first, result=self.canary)  # the run screen's canary line
                return True
            state = self.members[first]
            cause = state.exit_cause or "silent"
            detail = (
                state.detail or f"no model output within {self.settings.supervisor.canary_ms} ms"
            )
            if not self.tasks[first].done():
                await self.procs[first].stop_hard()
                await self.tasks[first]
            if self.closed():  # the stop ended this attempt, not the model
                self.emit("member-exit", first, cause=USER_STOP, canary=True)
                return self._canary_stopped()
            self.emit("member-exit", first, cause=cause, detail=detail[:500], canary=True)
        self.canary = f"failed: {cause}: {detail[:300]}"
        self.emit("canary", first, result=f"failed: {cause}")
        self.outcome = "canary failed"
        self.diagnosis = f"the canary (member-1) failed twice ({cause}): {detail[:200]}"
        return False

    def _canary_stopped(self) -> bool:
        """The run was stopped before member-1 answered: it ends as stopped, not failed."""
        self.canary = "not passed: the run was stopped before member-1 answered"
        self.emit("canary", self.specs[0].name, result="stopped")
        return False

    async def await_output(self, name: str, timeout_s: float) -> bool:
        """Whether the member's session produced model output within `timeout_s` (a
        stop ends the wait: `closed`)."""
        deadline = time.monotonic() + timeout_s
        state, task = self.members[name], self.tasks[name]
        while time.monotonic() < deadline:
            if state.produced_output:
                return True
            if task.done() or self.closed():
                return state.produced_output
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), min(TICK_S, deadline - time.monotonic()))
            except TimeoutError:
                pass
        return state.produced_output

    # -- supervision -------------------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            for name, task in list(self.tasks.items()):
                if task.done() and self.members[name].status not in SESSION_HANDLED:
                    await self._on_exit(name, task.result())
            if self.hard_stopped or not (self.running() or self._continuing):
                break
            watch.check_deadline(self)
            watch.check_budget(self)
            watch.check_stalls(self)
            watch.poll_solved(self)
            if time.time() >= self._next_review_pass:
                self._next_review_pass = time.time() + reviews.INTERVAL_S
                reviews.assign_reviews(self)
            await watch.check_stop_deadline(self)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), TICK_S)
            except TimeoutError:
                pass

    def _verifier_owes(self, name: str) -> list[str]:
        """Critical or high findings of this run the verifier left unchecked at their
        current revision: a verifier that stops with these owes them one more session."""
        if self.members[name].role != "verifier" or self.parent is None:
            return []
        self.parent.refresh()
        state = self.parent.state
        pending = pending_reviews(state, name, self.run_id)
        return [i for i in pending if state.findings[i].importance in ("critical", "high")]

    def _settle_answer(self) -> None:
        """The last member may exit before the next solved poll, and repair may validate an
        answer committed as unvalidated: read the answer once more."""
        if self.outcome not in (None, "solved-unvalidated") or self.parent is None:
            return
        prop = watch.record_answer(self)
        if prop is not None and prop.status == "validated":
            self.outcome = "solved"
            self.diagnosis = f"answer by {prop.by} validated by {prop.validated_by}"
        elif prop is not None and prop.status == "pending":
            self.outcome = "solved-unvalidated"
            self.diagnosis = f"answer by {prop.by} was not validated by another member"

    def running(self) -> list[str]:
        """Members whose session task has not ended."""
        return [n for n, t in self.tasks.items() if not t.done()]

    async def _on_exit(self, name: str, code: int) -> None:
        state = self.members[name]
        handle = self.procs[name]
        cause = state.exit_cause
        stopping = self.stop is not None or self.hard_stopped  # no reset, no continuation
        user_reset = handle.reset_requested and not stopping
        if user_reset:
            cause = USER_RESET
        elif handle.stop_requested and cause in (None, "killed"):
            cause = USER_STOP if self.stop is None or self.hard_stopped else "killed"
        elif cause is None:
            cause = "exit_nonzero" if code != 0 else "no_output"
        detail = state.detail
        if handle.stalled and not user_reset:
            cause, detail = NO_LEDGER_PROGRESS, handle.stalled
        self.emit(
            "member-exit",
            name,
            cause=cause,
            code=code,
            turns=state.turns,
            detail=detail[:500],
        )
        watch.check_budget(self)  # a member refused for budget must not be reset into it
        if user_reset and handle.carry_on:
            await self.continue_session(name, asked=True)
            return
        if user_reset:
            # Asked for by a person, so the reset cap (a guard against crash loops) does
            # not apply; the reset still counts and still releases the member's claims.
            await self._reset(name, "user")
            return
        owed = self._verifier_owes(name) if cause in FINISHED_CAUSES else []
        if owed and not stopping and state.resets < self.settings.supervisor.reset_cap:
            self.emit("member-reset", name, cause="unreviewed", resets=state.resets + 1, owed=owed)
            brief = prompts.VERIFIER_OWES.format(findings=", ".join(owed))
            await self.spawn(name, brief)
            return
        if cause in FINISHED_CAUSES and self.request.until_stop and not stopping:
            self._schedule_continuation(name)
            return
        if (
            cause in RESET_CAUSES
            and not stopping
            and state.resets < self.settings.supervisor.reset_cap
        ):
            await self._reset(name, cause)

    async def _reset(self, name: str, cause: str) -> None:
        """A fresh session for a member whose session ended: its claims go back to the
        pool first, so the new attempt (or anyone) can take them again."""
        state = self.members[name]
        # Read before the release: the fresh session learns which ideas it held.
        held = ""
        if self.parent is not None:
            self.parent.refresh()
            held = standing(self.parent.state, name, self.run_id).render()
        released = lifecycle.release_ideas(self.parent, self.run_id, name)
        self.emit("member-reset", name, cause=cause, resets=state.resets + 1, released=released)
        # Told why (a looping model would send the same call again) and where it stood.
        why = "a person asked for a fresh session" if cause == "user" else state.detail
        await self.spawn(name, prompts.reset_brief(cause, why, held))

    def _schedule_continuation(self, name: str) -> None:
        """--until-stop: a finished session gets a fresh one that extends the work.

        Continuations are not resets and count against no cap; a session that finished
        within HORDE_CONTINUE_COOLDOWN_MS of starting waits out the rest first, so a member
        with nothing to do cannot spin.
        """
        state = self.members[name]
        age = time.time() - (state.started or time.time())
        delay = max(0.0, self.settings.supervisor.continue_cooldown_ms / 1000 - age)
        self._continuing.add(name)
        self.emit("member-continue", name, after_s=round(delay, 1))

        async def later() -> None:
            await asyncio.sleep(delay)
            self._continuing.discard(name)
            if self.stop is None and not self.hard_stopped:
                await self.spawn(name, prompts.CONTINUATION_BRIEF)
            else:
                state.status = "exited"

        task = asyncio.create_task(later())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def cancel_continuations(self) -> None:
        """A stop drops --until-stop sessions still waiting to start."""
        for task in list(self._background):
            task.cancel()
        for name in self._continuing:
            self.members[name].status = "exited"
        self._continuing.clear()

    # -- controls --------------------------------------------------------------------------------

    def select(self, targets: tuple[Target, ...]) -> list[str]:
        return [n for n in self.members if selects(targets, self.horde, n)]

    def status(self, target: str = "all") -> str:
        return watch.status_text(self, target)

    def decide(self, action: str, target: str) -> str:
        """A confirm-mode decision, as the confirm desk takes it from `control/`."""
        return self.confirms.decide(target, DECISIONS[action], "control")

    def pause(self, target: str = "all") -> str:
        names = [n for n in self.select(parse_targets(target)) if n in self.running()]
        for n in names:
            self.procs[n].pause()
        self.emit("pause", targets=names)
        return f"paused {', '.join(names) or 'nothing (no running member matched)'}"

    def resume(self, target: str = "all") -> str:
        names = [
            n for n in self.select(parse_targets(target)) if self.members[n].status == "paused"
        ]
        for n in names:
            self.procs[n].resume()
        self.emit("resume", targets=names)
        return f"resumed {', '.join(names) or 'nothing (no paused member matched)'}"

    def stop_clean(
        self,
        target: str = "all",
        grace_s: float | None = None,
        postmortem: bool = False,
        reason: str = "stopped by user",
    ) -> str:
        targets = parse_targets(target)
        if targets != ALL:
            names = self.select(targets)
            for n in names:
                if n in self.running():
                    self.procs[n].signal(signal.SIGTERM)
                    self.procs[n].stop_requested = True
            return f"stopping {', '.join(names)} (the rest of the run continues)"
        if self.hard_stopped:
            return "the run is already stopped hard"
        if self.stop is not None and not (
            reason == USER_STOP and self.stop.reason in repair.REPAIR_AFTER_STOPS
        ):
            return f"a clean stop is already under way ({self.stop.reason})"
        if self._nothing_to_wrap_up():
            when = "before the canary answered" if self.canary == "not run" else "at finalize"
            self._halt(reason, f"stopped clean by the user {when}")
            self.emit(
                "stop-hard", targets=self.running(), whole_run=True, reason=f"{reason}, {when}"
            )
            self._wake.set()
            return (
                f"stopped ({reason}) {when}: nothing to wrap up, so the stop is hard; "
                "no member or helper starts again"
            )
        grace = 90.0 if grace_s is None else grace_s
        if self.outcome is None and reason == USER_STOP:
            self.outcome, self.diagnosis = reason, "stopped clean by the user"
        # A person's stop replaces a solve's wind-down: then no repair follows either.
        self.stop = StopState(reason, time.time() + grace, postmortem)
        self.cancel_continuations()
        lifecycle.request_wind_down(self.parent, self.run_id, reason, grace)
        self.emit(
            "stop-clean",
            reason=reason,
            grace_s=grace,
            postmortem=postmortem,
            outcome=self.outcome,
            diagnosis=self.diagnosis,
        )
        self._wake.set()
        return f"clean stop requested ({reason}); members have {grace:g}s to wrap up"

    async def stop_hard(self, target: str = "all") -> str:
        targets = parse_targets(target)
        async with self._spawning:  # a session starting now is stopped with the rest
            names = [n for n in self.select(targets) if n in self.running()]
            if targets == ALL:
                self._halt(USER_STOP, "stopped hard by the user")
            self.emit("stop-hard", targets=names, whole_run=targets == ALL)
        await asyncio.gather(*(self.procs[n].stop_hard() for n in names))
        self._wake.set()
        return f"stopped {', '.join(names) or 'nothing running'}"

    def _nothing_to_wrap_up(self) -> bool:
        """A clean stop gives members time to wrap up their work. Before the canary has
        answered there is none yet, and once the run is finalizing there is none left:
        such a stop is hard (issue 28)."""
        finalizing = self._phases is not None and self._phases.done()
        return self.canary == "not run" or finalizing

    def _halt(self, outcome: str, diagnosis: str) -> None:
        """The whole run stops now: no session or helper starts any more (`closed`), the
        canary's wait and a helper's end (`halted`), --until-stop sessions waiting to
        start are dropped. Whoever is running is stopped by the caller or the phase."""
        self.hard_stopped = True
        self.halted.set()
        self.cancel_continuations()
        if self.outcome is None:
            self.outcome, self.diagnosis = outcome, diagnosis

    async def reset(self, target: str, session: bool = False) -> str:
        """Kill members' current sessions and start fresh attempts, as the automatic
        resets do (claims released, counted in `resets`); the restart itself happens
        when the supervision loop sees the exit, in `_on_exit`. With `session`, each
        member's own session is carried on from its transcript instead (`_carry_on`)."""
        targets = parse_targets(target)
        if targets == ALL:
            return "refused: reset needs members (reset member-N); to end every session, stop"
        if self.stop is not None or self.hard_stopped:
            reason = self.stop.reason if self.stop is not None else "stopped hard"
            return f"refused: the run is stopping ({reason}); a reset would start work it ends"
        if not self._supervising:
            return (
                "refused: resets happen during discovery only (the canary is still running "
                "or the run has moved on); try again once members are at work"
            )
        if session:
            return await self._carry_on(self.select(targets))
        names = [n for n in self.select(targets) if n in self.running()]
        if not names:
            return "reset nothing (no running member matched)"
        for n in names:
            self.procs[n].reset_requested = True
        self.emit("reset-requested", targets=names)
        await asyncio.gather(*(self.procs[n].stop_hard() for n in names))
        self._wake.set()
        return f"reset {', '.join(names)}: session stopped, a fresh attempt starts"

    async def _carry_on(self, names: list[str]) -> str:
        """`reset` with `session`: each member's session goes on from its transcript; a
        running one is stopped first (its exit starts the carried-on session, in
        `_on_exit`), one whose session ended starts at once. All or none: a member with
        no transcript, or between sessions, refuses the request."""
        for n in names:
            state, task = self.members[n], self.tasks.get(n)
            if not sessions(self.run_dir, n):
                return (
                    f"refused: {n} has no transcript in run {self.run_id} (it never "
                    f"started); `horde-tui reset {n}` starts a fresh session"
                )
            ended = task is not None and task.done()
            if task is None or (ended and state.status != "exited"):
                return (
                    f"refused: {n} is between sessions ({state.status}); try again once "
                    "its next session runs or has ended"
                )
        running = [n for n in names if n in self.running()]
        for n in running:
            self.procs[n].reset_requested = self.procs[n].carry_on = True
        if running:
            self.emit("reset-requested", targets=running, session=True)
        await asyncio.gather(*(self.procs[n].stop_hard() for n in running))
        for n in names:
            if n not in running:
                await self.continue_session(n, asked=True)
        self._wake.set()
        return f"carrying on {', '.join(names)}: the same session, from its transcript"

    async def _stop_all_hard(self) -> None:
        running = self.running()
        await asyncio.gather(*(self.procs[n].stop_hard() for n in running), return_exceptions=True)

    # -- finalize --------------------------------------------------------------------------------

    async def _finalize(self) -> RunSummary:
        await self._stop_all_hard()
        for name, task in self.tasks.items():
            if task.done() and self.members[name].status not in SESSION_HANDLED:
                await self.record_exit(name, task.result())
        events = finalize.read_events(self.run_dir)
        # The outcome table decides, from what the run decided and how its members ended.
        ending = ending_of(self.outcome, self.members.values(), events, self._provider())
        self.outcome, self.diagnosis = outcome_of(ending, self.diagnosis)
        summary = RunSummary(
            run_id=self.run_id,
            outcome=self.outcome,
            diagnosis=self.diagnosis,
            canary=self.canary,
            started=self.started,
            ended=time.time(),
            model=self.settings.gateway.model or "",
            demo=self.request.demo,
            members=[*self.members.values(), *external_members(events)],
            stop_clean_at=self.stop.started if self.stop else None,
            layers=self.request.layers,
            resumed_at=self.resumed_at,
            continued=finalize.continued_sessions(events),
            sandbox_note=self.sandbox_note,
            forecast=self.forecast,
            baseline=self.request.baseline,
            lessons=lessons.report_line(self.run_dir),
        )
        try:
            await finalize.finalize(self, summary)
        finally:
            await self.stop_gateway()
        return summary

    def _provider(self) -> str:
        """The model and its endpoint, as a failed run's diagnosis names them."""
        model = self.settings.gateway.model or "the model"
        return (
            f"{model} at {self.settings.gateway.api_base}"
            if self.settings.gateway.api_base
            else model
        )

    async def stop_gateway(self) -> None:
        await stop_gateway(self.gateway)

    async def record_exit(self, name: str, code: int) -> None:
        """Record a session's end while the run ends (finalize, handoff): no reset."""
        state = self.members[name]
        if state.exit_cause is None:
            state.exit_cause = (
                "stopped by user"
                if self.procs[name].stop_requested
                else ("exit_nonzero" if code else "no_output")
            )
        self.emit(
            "member-exit",
            name,
            cause=state.exit_cause,
            code=code,
            turns=state.turns,
            detail=state.detail[:500],
        )


def _settings_env(part: BaseModel, leave_out: frozenset[str] = frozenset()) -> dict[str, str]:
    """A part of the settings as the variables its process validates it from
    (`load_part`); an unset one is passed empty (read as unset), so a value in this
    process's environment cannot reach the child in its place."""
    env: dict[str, str] = {}
    for name, value in part:
        if name not in leave_out:
            env[env_name(name)] = "" if value is None else setting_text(value)
    return env


def member_settings_env(s: Settings) -> dict[str, str]:
    """The member's part of the settings as its variables (the sandbox policy, which the
    supervisor resolves first, goes apart: `SandboxPolicy.as_env`)."""
    return _settings_env(s.member)


def gateway_env(s: Settings) -> dict[str, str]:
    """The gateway's environment from its part of the settings (the key among
    them) and a fresh token. A swarm starts its own gateway (for its planner and merge
    helpers) with the same."""
    # the cost budget goes as `--max-cost-usd`, which a resumed run lowers
    # (`gateway_budget_usd`)
    env = _settings_env(s.gateway, leave_out=frozenset({"max_cost_usd"}))
    env.update(HORDE_GATEWAY_TOKEN=secrets.token_urlsafe(32), HORDE_PARENT_PID=str(os.getpid()))
    return env
