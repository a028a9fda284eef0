"""`SwarmSupervisor`: H hordes of M members on one task ("horde of hordes").

The task is partitioned first: `plan H/M a; b; c` deals the layers round-robin, a plain
prompt is split by a read-only planner helper into exactly H workstreams with one
acceptance criterion each. Each horde then runs the normal lifecycle unchanged (its own
`Supervisor`, ledgers and run under `.horde/swarms/<id>/hN/`), started
`swarm_stagger_ms` apart so H canaries do not hit the provider at once. Hordes share by
reading each other's ledgers (`store.siblings`), never by writing. When every horde has
finished, a merge helper writes the swarm's DELIVERABLE.md and code writes REPORT.md.
SWARM.json (the contract other readers rely on) is rewritten on every change.

Controls are routed here only (`_split`): a method call from the app hosting the swarm,
or a request in the swarm's own `control/` from any other shell (the CLI, the swarm
screen of another app), answered by `controls.serve`. Each horde the target names gets
its part once (`h2:member-3` -> h2's `member-3`); a stop also keeps hordes not started
from starting.

Textual-free: the CLI hosts it headless, the app builds one with `launch.build_swarm`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.common import prompts
from horde_tui.common.settings import Settings, settings_record
from horde_tui.protocol import controls
from horde_tui.protocol.outcome import WITH_FAILURES, RunSummary, exit_code
from horde_tui.protocol.targets import TargetError, parse_targets, per_horde
from horde_tui.sandbox.shell import scrubbed_env
from horde_tui.store.members import MemberState
from horde_tui.store.paths import HordePaths, atomic_write_text
from horde_tui.store.runs import Workstream, swarm_dir, write_swarm_json
from horde_tui.supervisor import finalize
from horde_tui.supervisor.observe import Sink, SupervisorEvent
from horde_tui.supervisor.processes import (
    GatewayHandle,
    GatewayStartError,
    spawn_gateway,
    stop_gateway,
)
from horde_tui.supervisor.run import Supervisor, gateway_env, member_settings_env
from horde_tui.supervisor.setup import MemberSpec, RunRequest, new_run_id
from horde_tui.supervisor.swarm_plan import SwarmError, deal_layers, parse_partition
from horde_tui.supervisor.swarm_report import render_report, render_swarm_md

PLANNER = "planner"
MERGE = "merge"
SESSIONS = {PLANNER: "planner-sessions", MERGE: "deliverable-sessions"}
MERGE_FILES = ("DELIVERABLE.md", "REPORT.md", "ACCEPTANCE.md")
"""Each horde's files the merge helper is pointed at, those its run wrote."""
"""Where each swarm helper's transcripts go, inside the swarm directory."""
CONFIG = "CONFIG.json"
"""The swarm's request switches and settings (no key), for `horde-tui resume SWARM`."""
NORMAL_ENDS = frozenset({"finished", "solved", "solved-unvalidated"})
CONTROL_POLL_S = 0.25
"""How often the swarm looks in its own `control/` (a horde's supervisor ticks as often)."""
ABNORMAL_ORDER = ("stopped by user", "stopped at deadline", "stopped at budget")
"""The swarm outcome when hordes ended abnormally: the first of these any horde has,
else `failed`."""


@dataclass
class SwarmSummary:
    """How a swarm ended, with each horde's own run summary."""

    swarm_id: str
    state: str
    outcome: str
    diagnosis: str
    hordes: dict[str, RunSummary] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """A run's status for the same outcome (`outcome.OUTCOME_TABLE`; `completed`, every
        horde finished, is a run's `finished`)."""
        return exit_code("finished" if self.outcome == "completed" else self.outcome)


def swarm_outcome(summaries: dict[str, RunSummary]) -> tuple[str, str]:
    """The swarm's outcome and one-line diagnosis from its hordes' outcomes."""
    if not summaries:
        return "stopped by user", "stopped before any horde started"
    each = "; ".join(f"{h} {s.outcome}" for h, s in summaries.items())
    outcomes = {s.outcome for s in summaries.values()}
    if outcomes == {"solved"}:
        return "solved", f"every horde solved its workstream ({each})"
    if outcomes <= NORMAL_ENDS:
        return "completed", f"every horde finished its workstream ({each})"
    if outcomes <= NORMAL_ENDS | {WITH_FAILURES}:
        return WITH_FAILURES, each
    abnormal = next((o for o in ABNORMAL_ORDER if o in outcomes), "failed")
    return abnormal, each


class SwarmSupervisor:
    """Runs one swarm. Construct, then `await run()`; controls may be called meanwhile."""

    def __init__(
        self,
        workdir: Path,
        request: RunRequest,
        settings: Settings,
        hordes: int,
        sink: Sink | None = None,
        swarm_id: str | None = None,
    ) -> None:
        self.workdir = workdir.resolve()
        self.request = request
        self.settings = settings
        self.count = hordes
        self.sink = sink or (lambda event: None)
        self.swarm_id = swarm_id or new_run_id()
        self.swarm_dir = swarm_dir(self.workdir / ".horde", self.swarm_id)
        self.hordes: dict[str, Supervisor] = {}
        self.summaries: dict[str, RunSummary] = {}
        self.partition: list[Workstream] = []
        self.runs: dict[str, str] = {}
        self.state = "pending"
        self.outcome: str | None = None
        self.diagnosis = ""
        self.merge = "pending"
        self.timeline: list[dict[str, Any]] = []
        self.started = time.time()
        self.ended: float | None = None
        self.gateway: GatewayHandle | None = None
        self.halted = ""
        """Why hordes not started yet must not start (a stop of the whole swarm)."""
        self.hard_stopped = False
        self.skipped: set[str] = set()
        """Hordes a stop reached before they started: they never start."""
        self._halt = asyncio.Event()
        self._helper_pid: int | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.helpers: list[MemberState] = []
        """The planner and merge sessions, for the report's cost of the swarm itself."""
        self._gateway_start: asyncio.Task[None] | None = None
        self.handing_off = False
        """Set by `handoff`: the swarm goes on in a detached `horde-tui resume`."""
        self.released = False
        """Handed off: SWARM.json names no host, so the resume may take the swarm."""

    @property
    def run_dir(self) -> Path:
        """Where helper logs go (the helper-hosting interface `finalize.run_helper` uses)."""
        return self.swarm_dir

    @property
    def names(self) -> list[str]:
        return [f"h{n}" for n in range(1, self.count + 1)]

    # -- observing -------------------------------------------------------------------------

    def emit(self, kind: str, member: str | None = None, record: bool = True, **data: Any) -> None:
        """Helper lifecycle (`member-spawn`, `member-exit`) for observers, with `horde`
        None (the swarm's own, as its lifecycle events); the swarm has no events.jsonl of
        its own (its timeline is in SWARM.json)."""
        if kind == "member-spawn":
            self._helper_pid = data.get("pid")
        self.sink(SupervisorEvent(kind, member, {**data, "horde": None}))

    def on_status(self, state: MemberState, event: dict[str, Any]) -> None:
        self.sink(SupervisorEvent("member-status", state.name, {**event, "horde": None}))

    def _mark(self, kind: str, horde: str | None = None, **data: Any) -> None:
        """A swarm lifecycle step: the timeline, observers, SWARM.json."""
        self.timeline.append({"ts": time.time(), "kind": kind, "horde": horde})
        self.sink(SupervisorEvent(kind, None, {"horde": horde, **data}))
        self._write_state()

    def _horde_sink(self, name: str) -> Sink:
        def relay(event: SupervisorEvent) -> None:
            self.sink(
                SupervisorEvent(event.kind, event.member, {**event.data, "horde": name}, event.ts)
            )

        return relay

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.swarm_id,
            "prompt": self.request.prompt,
            "hordes": self.count,
            "members": self.request.count,
            "model": self.settings.gateway.model or "",
            "demo": self.request.demo,
            "layers": list(self.request.layers),
            "state": self.state,
            "parent_pid": None if self.released else os.getpid(),
            "started": self.started,
            "ended": self.ended,
            "outcome": self.outcome,
            "diagnosis": self.diagnosis,
            "partition": [w.as_json() for w in self.partition],
            "runs": dict(self.runs),
            "merge": self.merge,
            "timeline": list(self.timeline),
        }

    def _write_state(self) -> None:
        write_swarm_json(self.swarm_dir, self.as_json())
        atomic_write_text(self.swarm_dir / "SWARM.md", render_swarm_md(self.as_json()))

    def _write_config(self) -> None:
        """What `horde-tui resume SWARM` needs besides SWARM.json: the request's
        switches and every setting but the key (as a run's MANIFEST.json keeps them)."""
        config = {
            "request": {
                "verifier": self.request.verifier,
                "until_stop": self.request.until_stop,
            },
            "config": settings_record(self.settings),
        }
        atomic_write_text(self.swarm_dir / CONFIG, json.dumps(config, indent=2) + "\n")

    # -- the lifecycle ---------------------------------------------------------------------

    async def run(self) -> SwarmSummary | None:
        """Partition, start the hordes staggered, wait for all, merge, report (None:
        handed off to a detached `horde-tui resume`, see `handoff`)."""
        self.swarm_dir.mkdir(parents=True, exist_ok=True)
        HordePaths(self.workdir / ".horde").ensure()
        self._write_config()
        self._write_state()
        answering = asyncio.create_task(
            controls.serve(self.swarm_dir, self, CONTROL_POLL_S), name="swarm-controls"
        )
        if not self.request.layers or self.settings.supervisor.deliverable:
            # Started now, so the planner need not wait for it and it is up by the merge.
            self._gateway_start = asyncio.create_task(self._start_gateway(), name="swarm-gateway")
        try:
            if await self._partition():
                self.state = "active"
                self._write_state()
                await self._run_hordes()
                if self.handing_off:
                    return None  # the hordes were handed off: no merge, no report here
                self.state = "finalizing"
                self.outcome, self.diagnosis = swarm_outcome(self.summaries)
                if self.skipped:
                    held = ", ".join(sorted(self.skipped))
                    if self.outcome in ("completed", "solved"):
                        self.outcome = "stopped by user"
                    self.diagnosis += f"; {held} stopped before it started"
                self._write_state()
                await self._merge()
                atomic_write_text(self.swarm_dir / "REPORT.md", render_report(self))
        except Exception as exc:  # a swarm bug must still leave SWARM.json and the hordes' reports
            self.outcome = "failed"
            self.diagnosis = f"swarm supervisor error: {type(exc).__name__}: {exc}"
            await asyncio.gather(
                *(h.stop_hard() for h in self.hordes.values()), return_exceptions=True
            )
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        finally:
            answering.cancel()
            if self._gateway_start is not None:
                await asyncio.gather(self._gateway_start, return_exceptions=True)
            await self._stop_gateway()
            if self.handing_off:
                self.released = True
                self._mark("swarm-handoff", hordes=sorted(set(self.hordes) - set(self.summaries)))
            else:
                self.state = "not started" if self.state == "pending" else "finished"
                self.ended = time.time()
                self._mark("swarm-end", outcome=self.outcome, diagnosis=self.diagnosis)
        if self.handing_off:
            return None
        return SwarmSummary(
            self.swarm_id, self.state, self.outcome or "failed", self.diagnosis, self.summaries
        )

    async def _partition(self) -> bool:
        """Deal the plan's layers or ask the planner; False (state stays `pending`, to
        become `not started`) when the task could not be split into H workstreams."""
        if self.request.layers:
            try:
                self.partition = deal_layers(self.request.layers, self.count)
            except SwarmError as exc:
                self.outcome, self.diagnosis = "not started", str(exc)
                return False
            return True
        self._mark("planner-start")
        brief = prompts.PLANNER_BRIEF.format(hordes=self.count)
        helper = await self._helper(PLANNER, brief, self.settings.swarm.planner_ms / 1000)
        self._mark("planner-end", cause=helper.exit_cause)
        if self.handing_off:
            return False  # the resume runs the planner again
        if self.halted:
            self.outcome, self.diagnosis = (
                "stopped by user",
                f"stopped while planning: {self.halted}",
            )
            return False
        try:
            if helper.exit_cause != "completed":
                why = helper.detail or helper.exit_cause or "no output"
                raise SwarmError(f"the planner ended with {helper.exit_cause} ({why})")
            self.partition = parse_partition(helper.final_message, self.count)
        except SwarmError as exc:
            self.outcome = "not started"
            self.diagnosis = (
                f"the planner could not split the task into {self.count} workstreams: {exc}"
            )
            return False
        return True

    async def _helper(self, name: str, brief: str, timeout_s: float) -> MemberState:
        """A planner or merge session; a gateway that would not start ends it as the
        model error it is, with the gateway's own line."""
        try:
            await (self._gateway_start or self._start_gateway())
        except GatewayStartError as exc:
            failed = MemberState(name, name, exit_cause="model_error", detail=str(exc)[:500])
            return failed
        try:
            helper = await finalize.run_helper(self, name, brief, timeout_s)
        finally:
            self._helper_pid = None
        self.helpers.append(helper)
        return helper

    def member_env(self, spec: MemberSpec, attempt: int, **extra: str) -> dict[str, str]:
        """A swarm helper's environment: read-only on the project's ledgers, its task the
        swarm's SWARM.md, its transcripts in the swarm directory."""
        assert self.gateway is not None
        env = scrubbed_env(os.environ)
        env.update(
            HORDE_MEMBER=spec.name,
            HORDE_NAME=spec.name,
            HORDE_DIR=str(self.workdir / ".horde"),
            HORDE_RUN=self.swarm_id,
            HORDE_ROLE=spec.role,
            HORDE_ATTEMPT=str(attempt),
            HORDE_PARENT_PID=str(os.getpid()),
            HORDE_GATEWAY_URL=self.gateway.url,
            HORDE_GATEWAY_TOKEN=self.gateway.token,
            HORDE_SESSIONS=str(self.swarm_dir / SESSIONS[spec.name]),
            HORDE_TASK_FILE=str(self.swarm_dir / "SWARM.md"),
        )
        env.update(member_settings_env(self.settings))
        env.update(extra)
        return env

    async def _start_gateway(self) -> None:
        if self.gateway is None:
            env = dict(os.environ)
            env.update(gateway_env(self.settings))
            self.gateway = await spawn_gateway(self.swarm_dir, env)

    async def _stop_gateway(self) -> None:
        gateway, self.gateway = self.gateway, None
        await stop_gateway(gateway)

    async def _run_hordes(self) -> None:
        every = {name: self.swarm_dir / name for name in self.names}
        staggered = False
        for n, share in enumerate(self.partition, 1):
            siblings = {k: v for k, v in every.items() if k != share.horde}
            if self._take_up(n, share, siblings):
                continue
            if staggered and not self.halted:
                try:
                    await asyncio.wait_for(
                        self._halt.wait(), self.settings.swarm.swarm_stagger_ms / 1000
                    )
                except TimeoutError:
                    pass
            staggered = True
            if self.halted or self.handing_off or share.horde in self.skipped:
                continue
            self._start_horde(n, share, siblings)
        await asyncio.gather(*self._tasks.values())

    def _take_up(self, n: int, share: Workstream, siblings: dict[str, Path]) -> bool:
        """A horde an earlier host of this swarm started: True when it is taken care of
        (a resumed swarm, `swarm_resume.ResumedSwarm`); a new swarm has none."""
        return False

    def _horde_request(self, share: Workstream, siblings: dict[str, Path]) -> RunRequest:
        """A horde's own request: the swarm's prompt with its workstream."""
        task = self.request.prompt.strip() + prompts.WORKSTREAM_SECTION.format(
            horde=share.horde,
            hordes=self.count,
            swarm=self.swarm_id,
            workstream=share.workstream,
            criterion=share.criterion,
        )
        return RunRequest(
            task,
            self.request.count,
            list(share.layers),
            self.request.verifier,
            self.request.until_stop,
            demo=self.request.demo,
            siblings=siblings,
            preset=self.request.preset,
        )

    def _start_horde(self, n: int, share: Workstream, siblings: dict[str, Path]) -> None:
        name = share.horde
        horde_dir = self.swarm_dir / name
        HordePaths(horde_dir).ensure()
        sup = Supervisor(
            self.workdir,
            self._horde_request(share, siblings),
            self.settings,
            sink=self._horde_sink(name),
            run_id=f"{self.swarm_id}-{name}",
            horde=n,
            horde_dir=horde_dir,
        )
        self.runs[name] = str(sup.run_dir.relative_to(self.swarm_dir))
        self._host_horde(name, sup)
        self._mark("horde-start", name, run=sup.run_id)

    def _host_horde(self, name: str, sup: Supervisor) -> None:
        self.hordes[name] = sup
        self._tasks[name] = asyncio.create_task(self._run_horde(name, sup), name=f"horde-{name}")

    async def _run_horde(self, name: str, sup: Supervisor) -> None:
        summary = await sup.run()
        if summary is None:  # handed off with the swarm: its run goes on elsewhere
            return
        self.summaries[name] = summary
        self._mark("horde-end", name, outcome=summary.outcome)

    async def _merge(self) -> None:
        """The merge helper writes DELIVERABLE.md from the hordes' deliverables; when it
        cannot, the hordes' deliverables are put side by side under their hordes."""
        written = [n for n in self.summaries if (self._run_path(n) / "DELIVERABLE.md").is_file()]
        if not self.settings.supervisor.deliverable or self.hard_stopped or not written:
            # Nothing to merge: deliverables are off, or every horde was stopped hard
            # (from here or from another shell) before its synthesis.
            self.merge = "skipped"
            self._write_state()
            return
        self.merge = "running"
        self._mark("merge-start")
        files = "\n".join(
            f"- {name} (workstream: {self._share(name).workstream}; outcome: "
            f"{self.summaries[name].outcome}): "
            + ", ".join(
                finalize.existing_files(
                    self.workdir,
                    (self._run_path(name) / doc for doc in MERGE_FILES),
                )
                or ["no deliverable, report or acceptance written"]
            )
            for name in self.summaries
        )
        brief = prompts.MERGE_BRIEF.format(
            swarm=self.swarm_id, hordes=len(self.summaries), files=files
        )
        helper = await self._helper(MERGE, brief, self.settings.supervisor.postmortem_ms / 1000)
        if helper.exit_cause == "completed" and helper.final_message.strip():
            text = (
                helper.final_message.strip() + "\n" + self._unattributed_note(helper.final_message)
            )
            self.merge = "done"
        else:
            text = self._side_by_side(finalize.helper_document("Deliverable", helper))
            self.merge = "failed"
        atomic_write_text(self.swarm_dir / "DELIVERABLE.md", text)
        self._mark("merge-end", cause=helper.exit_cause)

    def _run_path(self, name: str) -> Path:
        return self.swarm_dir / self.runs[name]

    def _share(self, name: str) -> Workstream:
        return next(w for w in self.partition if w.horde == name)

    def _unattributed_note(self, text: str) -> str:
        """Name the hordes the merged text never attributes a claim to, so a reader knows
        to read their deliverables directly."""
        silent = [h for h in self.summaries if f"[{h}" not in text]
        if not silent:
            return ""
        return (
            f"\n> Note from horde-tui: the merge attributes nothing to {', '.join(silent)}; "
            "read their DELIVERABLE.md (listed in the swarm's REPORT.md).\n"
        )

    def _side_by_side(self, why: str) -> str:
        parts = [why.rstrip(), "", "The hordes' own deliverables, unmerged:"]
        for name in self.summaries:
            path = self._run_path(name) / "DELIVERABLE.md"
            try:
                body = path.read_text(encoding="utf-8").strip()
            except OSError:
                body = "_No DELIVERABLE.md._"
            parts += ["", f"## [{name}] {self._share(name).workstream}", "", body]
        return "\n".join(parts) + "\n"

    # -- controls --------------------------------------------------------------------------

    def handoff(self) -> str:
        """End this process's part in the swarm without ending it, so a detached
        `horde-tui resume SWARM` carries it on: every running horde is handed off
        (`Supervisor.handoff`), hordes not started stay so, a planner at work is ended
        (the resume plans again), nothing is merged. `run()` then returns None."""
        if self.handing_off:
            return "a handoff is already under way"
        if self.state not in ("pending", "active") or self.ended is not None:
            return "refused: the swarm is merging (writing its deliverable); it ends in moments"
        self.handing_off = True
        self._halt.set()
        running = [n for n in self.hordes if n not in self.summaries]
        for name in running:
            self.hordes[name].handoff()
        self._end_planner()
        which = ", ".join(running) or "no horde started yet"
        return f"handing the swarm off ({which}): it carries on in a detached supervisor"

    def _end_planner(self) -> None:
        if self._helper_pid is not None and self.state == "pending":
            try:
                os.killpg(self._helper_pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    def status(self, target: str = "all") -> str:
        """The swarm's line, then a block per horde the target names: its workstream and
        its own supervisor's status (what `horde-tui status` prints for a swarm)."""
        try:
            routed = self._route(target)
        except TargetError as exc:
            return f"refused: {exc}"
        lines = [
            f"swarm {self.swarm_id}: {self.state}, {self.count} hordes of "
            f"{self.request.count} members, merge {self.merge}"
        ]
        for name, sub in routed.items():
            share = next((w for w in self.partition if w.horde == name), None)
            lines += ["", f"{name}: {share.workstream if share else '(not partitioned yet)'}"]
            if name in self.summaries:
                lines.append(f"  finished ({self.summaries[name].outcome})")
            elif name in self.hordes:
                lines.append(self.hordes[name].status(sub))
            else:
                lines.append("  not started")
        return "\n".join(lines)

    def _route(self, target: str) -> dict[str, str]:
        return {f"h{n}": t for n, t in per_horde(parse_targets(target), self.count).items()}

    def _split(self, target: str) -> tuple[dict[str, str], dict[str, str]]:
        """The running hordes a target names (-> their own target) and the others it
        names (-> why nothing was done there); raises `TargetError`."""
        running, others = {}, {}
        for name, sub in self._route(target).items():
            if name in self.summaries:
                others[name] = f"nothing to do, it ended ({self.summaries[name].outcome})"
            elif name not in self.hordes:
                others[name] = "not started"
            else:
                running[name] = sub
        return running, others

    @staticmethod
    def _answer(answers: dict[str, str], others: dict[str, str]) -> str:
        return "\n".join(f"{name}: {text}" for name, text in sorted({**answers, **others}.items()))

    def _each(self, target: str, act: Callable[[Supervisor, str], str]) -> str:
        """Apply `act(supervisor, horde_target)` to every running horde the target names."""
        try:
            running, others = self._split(target)
        except TargetError as exc:
            return f"refused: {exc}"
        return self._answer({n: act(self.hordes[n], sub) for n, sub in running.items()}, others)

    async def _each_async(
        self, target: str, act: Callable[[Supervisor, str], Awaitable[str]]
    ) -> str:
        try:
            running, others = self._split(target)
        except TargetError as exc:
            return f"refused: {exc}"
        texts = await asyncio.gather(*(act(self.hordes[n], sub) for n, sub in running.items()))
        return self._answer(dict(zip(running, texts, strict=True)), others)

    def decide(self, action: str, target: str) -> str:
        """Confirm-mode decisions go to each horde's confirm desk, like a pause."""
        return self._each(target, lambda sup, sub: sup.decide(action, sub))

    def pause(self, target: str = "all") -> str:
        return self._each(target, lambda sup, sub: sup.pause(sub))

    def resume(self, target: str = "all") -> str:
        return self._each(target, lambda sup, sub: sup.resume(sub))

    def stop_clean(
        self,
        target: str = "all",
        grace_s: float | None = None,
        postmortem: bool = False,
        reason: str = "stopped by user",
    ) -> str:
        self._hold_back(target, reason)
        return self._each(target, lambda sup, sub: sup.stop_clean(sub, grace_s, postmortem, reason))

    async def stop_hard(self, target: str = "all") -> str:
        if self._hold_back(target, "stopped hard by the user"):
            self.hard_stopped = True
        return await self._each_async(target, lambda sup, sub: sup.stop_hard(sub))

    async def reset(self, target: str, session: bool = False) -> str:
        try:
            whole = [n for n, sub in self._route(target).items() if sub == "all"]
        except TargetError as exc:
            return f"refused: {exc}"
        if whole:
            return (
                f"refused: reset needs members, not whole hordes ({', '.join(whole)}); "
                "reset h2:member-3, or member-3 in every horde; to end a horde, stop it"
            )
        return await self._each_async(target, lambda sup, sub: sup.reset(sub, session))

    def _hold_back(self, target: str, reason: str) -> bool:
        """A stop of whole hordes also reaches the ones not started yet (they never start)
        and a planner still at work; True when it stops the whole swarm."""
        try:
            routed = self._route(target)
        except TargetError:
            return False
        whole = [n for n, sub in routed.items() if sub == "all"]
        self.skipped.update(n for n in whole if n not in self.hordes)
        if len(whole) < self.count:
            return False
        self.halted = self.halted or reason
        self._halt.set()
        self._end_planner()
        return True
