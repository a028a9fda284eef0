"""Carry a swarm on after its host is gone: `horde-tui resume SWARM`, and the other half
of the app's Detach of a hosted swarm (`SwarmSupervisor.handoff`).

Everything is on disk: SWARM.json (prompt, partition, which hordes started, the
timeline), the swarm's CONFIG.json (settings but the key) and each started horde's own
run. `load_swarm` refuses a swarm that is live, ended or unknown, and reads each
started horde's position the way `horde-tui resume RUN` reads a run's. `ResumedSwarm`
then goes on with the normal swarm lifecycle: the recorded partition (the planner runs
again only if it had not finished), hordes whose run ended stand, hordes whose run did
not end are resumed (`resume.resumed_supervisor` in their horde directory), hordes
never started start staggered as usual, then the merge and the reports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

from horde_tui.protocol.outcome import RunSummary
from horde_tui.store import runs
from horde_tui.store.runs import (
    SWARM_LIVE_STATES,
    SwarmFileError,
    SwarmInfo,
    Workstream,
    swarm_info,
    swarm_state,
)
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor.finalize import read_events
from horde_tui.supervisor.observe import Sink
from horde_tui.supervisor.recover import rebuild_members
from horde_tui.supervisor.resume import (
    ResumePoint,
    ResumeRefused,
    load_resume,
    recorded_settings,
    resumed_supervisor,
)
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.swarm import CONFIG, SwarmSummary, SwarmSupervisor


def check_swarm_resumable(swarm_dir: Path) -> SwarmInfo:
    """SWARM.json of a swarm whose host is gone; refuse a live, ended or unreadable
    one (one line)."""
    swarm = swarm_dir.name
    try:
        info = swarm_info(swarm_dir)
    except SwarmFileError as exc:
        raise ResumeRefused(str(exc)) from None
    state = swarm_state(info)
    if state in SWARM_LIVE_STATES:
        raise ResumeRefused(
            f"refused: swarm {swarm} is live (host pid {info.parent_pid}); only a "
            "swarm whose host is gone can be resumed; watch it with `horde-tui status`"
        )
    if state != "interrupted":
        raise ResumeRefused(
            f"refused: swarm {swarm} already ended ({info.outcome or None}); its report is "
            f"{swarm_dir / 'REPORT.md'}; start a new swarm instead"
        )
    return info


def load_swarm(
    workdir: Path, swarm_id: str, sink: Sink | None = None, environ: Mapping[str, str] | None = None
) -> ResumedSwarm:
    """A supervisor for an interrupted swarm, every started horde's position read."""
    horde_dir = workdir / ".horde"
    swarm_dir = runs.swarm_dir(horde_dir, swarm_id)
    info = check_swarm_resumable(swarm_dir)
    try:
        recorded = json.loads((swarm_dir / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ResumeRefused(
            f"refused: swarm {swarm_id} has no readable {CONFIG} (its settings); finalize "
            f"each started horde instead: `horde-tui finalize {swarm_id}-hN`"
        ) from None
    asked = recorded.get("request") or {}
    request = RunRequest(
        prompt=info.prompt,
        count=info.members or 1,
        layers=list(info.layers),
        verifier=bool(asked.get("verifier", True)),
        until_stop=bool(asked.get("until_stop", False)),
        demo=info.demo,
    )
    settings = recorded_settings(horde_dir, recorded, environ)
    swarm = ResumedSwarm(workdir, request, settings, info.hordes or 1, sink, swarm_id)
    swarm.restore(info, environ)
    return swarm


def ended_summary(run_dir: Path) -> RunSummary | None:
    """The summary of a horde's run that ended (its `run-end` event), else None."""
    events = read_events(run_dir)
    end = next((e for e in reversed(events) if e.get("kind") == "run-end"), None)
    if end is None:
        return None
    manifest = json.loads((run_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    starts = [epoch(e.get("ts")) for e in events if e.get("kind") == "run-start"]
    started = (starts[0] if starts else None) or float(manifest.get("created") or time.time())
    return RunSummary(
        run_id=run_dir.name,
        outcome=str(end.get("outcome") or "failed"),
        diagnosis=str(end.get("diagnosis") or ""),
        canary="ok",
        started=started,
        ended=epoch(end.get("ts")) or time.time(),
        model=str(manifest.get("model") or ""),
        demo=bool(manifest.get("demo_model")),
        members=rebuild_members(manifest, events),
        layers=list((manifest.get("request") or {}).get("layers") or []),
    )


class ResumedSwarm(SwarmSupervisor):
    """A swarm supervisor that carries an interrupted swarm on from its files."""

    def restore(self, info: SwarmInfo, environ: Mapping[str, str] | None) -> None:
        """Stand where SWARM.json and the hordes' runs left the swarm."""
        self.started = info.started or self.started
        self.timeline = [
            {"ts": ts, "kind": kind, "horde": horde} for ts, kind, horde in info.timeline
        ]
        self.partition = list(info.partition)
        self.runs = dict(info.runs)
        self.standing: dict[str, RunSummary] = {}
        """Hordes whose run ended: they stand as they are."""
        self.carried: dict[str, ResumePoint] = {}
        """Hordes whose run did not end: resumed where their events left them."""
        for name, rel in self.runs.items():
            run_dir = self.swarm_dir / rel
            if not (run_dir / "MANIFEST.json").is_file():
                continue  # its host died before the run was set up: it starts again
            summary = ended_summary(run_dir)
            if summary is not None:
                self.standing[name] = summary
            else:
                self.carried[name] = load_resume(self.swarm_dir / name, run_dir.name, environ)

    async def run(self) -> SwarmSummary | None:
        self.state = "active" if self.partition else "pending"
        self.swarm_dir.mkdir(parents=True, exist_ok=True)
        self._mark(
            "swarm-resume",
            standing=sorted(self.standing),
            resumed=sorted(self.carried),
            planned=bool(self.partition),
        )
        return await super().run()

    async def _partition(self) -> bool:
        """The recorded partition; the planner again only if it had not finished."""
        return True if self.partition else await super()._partition()

    def _take_up(self, n: int, share: Workstream, siblings: dict[str, Path]) -> bool:
        name = share.horde
        if name in self.standing:
            summary = self.standing[name]
            self.hordes[name] = Supervisor(
                self.workdir,
                self._horde_request(share, siblings),
                self.settings,
                run_id=summary.run_id,
                horde=n,
                horde_dir=self.swarm_dir / name,
            )
            self.summaries[name] = summary
            return True
        point = self.carried.get(name)
        if point is None:
            return False
        point.request.siblings = siblings
        sup = resumed_supervisor(
            self.workdir, point, self._horde_sink(name), self.swarm_dir / name, n
        )
        self._host_horde(name, sup)
        return True
