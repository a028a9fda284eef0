"""The read side of runs: `RunView` for one run, `RunsIndex` for all of them.

For the app when it does not host the supervisor (attaching to a detached run, browsing
history): everything comes from the run directory. The lifecycle events in
`events.jsonl` are tailed from the last offset; only lines that say
`"type":"lifecycle"` are parsed, so tool traffic costs a substring test per line.

Run states are `store.runs.run_state`'s (`active`, `interrupted`, `finished`, `manual`,
`not started`) plus `finalizing`: a live run whose events show `phase-start finalize`
and no `run-end` yet, which is what the reference's index calls it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import parse_record
from horde_tui.store.linefile import BATCH, LineIndex
from horde_tui.store.members import MemberState
from horde_tui.store.paths import HordePaths
from horde_tui.store.runs import run_files, run_state, subfolders
from horde_tui.store.timestamps import epoch
from horde_tui.view.members import MemberFold, content

LIVE_STATES = frozenset({"active", "finalizing"})
_LIFECYCLE = b'"type":"lifecycle"'


def task_prompt(task_md: str) -> tuple[str, str]:
    """(first line, whole task text) of TASK.md: the text between `# Task` and the next
    heading (`## Configuration`), which is what the user asked."""
    body: list[str] = []
    for line in task_md.splitlines():
        if line.startswith("# ") and not body:
            continue
        if line.startswith("## "):
            break
        body.append(line)
    text = "\n".join(body).strip()
    return (text.splitlines()[0].strip() if text else ""), text


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class RunInfo:
    """What a run is: from TASK.md and MANIFEST.json (written once, at setup)."""

    run_id: str
    prompt: str = ""
    task: str = ""
    model: str = ""
    demo: bool = False
    created: float | None = None
    member_count: int = 0
    layers: tuple[str, ...] = ()
    until_stop: bool = False
    baseline: str = ""
    """`--baseline RUN|last` as asked (`supervisor.baseline`), or `""`."""


def info_stamp(run_dir: Path) -> tuple[int | None, ...]:
    """Modification times of TASK.md and MANIFEST.json: re-read them only when changed."""
    out: list[int | None] = []
    for name in ("TASK.md", "MANIFEST.json"):
        try:
            out.append(os.stat(run_dir / name).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def read_info(run_dir: Path) -> tuple[RunInfo, dict[str, Any]]:
    """The run's info and its raw manifest (`{}` for a manual run)."""
    manifest = _read_json(run_dir / "MANIFEST.json")
    try:
        prompt, task = task_prompt((run_dir / "TASK.md").read_text(encoding="utf-8"))
    except OSError:
        prompt, task = "", ""
    request = manifest.get("request")
    if not isinstance(request, dict):
        request = {}
    created = manifest.get("created")
    info = RunInfo(
        run_id=run_dir.name,
        prompt=prompt,
        task=task,
        model=str(manifest.get("model") or ""),
        demo=bool(manifest.get("demo_model")),
        created=float(created) if isinstance(created, (int, float)) else None,
        member_count=len(manifest.get("members") or []),
        layers=tuple(str(x) for x in request.get("layers") or ()),
        until_stop=bool(request.get("until_stop")),
        baseline=str(request.get("baseline") or ""),
    )
    return info, manifest


@dataclass
class RunLifecycle:
    """A run's lifecycle as its events tell it, tailed incrementally."""

    path: Path
    started: float | None = None
    members: int = 0
    model: str = ""
    phase: str = ""
    """The phase started last and not ended (`discovery`, `finalize`, ...), or `""`."""
    finalizing: bool = False
    outcome: str = ""
    diagnosis: str = ""
    ended: float | None = None
    stop_clean: tuple[float, float] | None = None
    """(requested at, grace seconds) of a clean stop: the countdown's inputs."""
    stop_reason: str = ""
    """Why the clean stop was asked for (`stopped by user`, `deadline`, ...)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """External members' `horde` calls (outcome events) the last `refresh` took in: an
    agent joined through MCP shows its work through them, as it has no transcript."""
    _external: dict[str, bytes] = field(default_factory=dict, repr=False)
    """External member -> the bytes its outcome lines carry (`"actor":"ext-1"`)."""
    index: LineIndex = field(init=False, repr=False)
    generation: int = 0
    """Moves on when the event log was replaced and the story restarted."""

    def __post_init__(self) -> None:
        self.index = LineIndex(self.path)

    def refresh(self) -> list[dict[str, Any]]:
        """Lifecycle events appended since the last call (folded into this summary)."""
        start = len(self.index)
        added = self.index.refresh()
        if self.index.generation != self.generation:  # replaced: start the story over
            self.generation, start = self.index.generation, 0
            self.started, self.members, self.model, self.phase = None, 0, "", ""
            self.finalizing, self.outcome, self.diagnosis = False, "", ""
            self.ended, self.stop_clean, self.stop_reason = None, None, ""
            self._external = {}
        elif not added:
            self.calls = []
            return []
        events: list[dict[str, Any]] = []
        self.calls = []
        stop = len(self.index)
        for first in range(start, stop, BATCH):  # bounded reads: a long log is not loaded whole
            for raw in self.index.raw_lines(first, min(stop, first + BATCH)):
                if _LIFECYCLE in raw:
                    ev = parse_record(raw)[0]
                    if ev is not None and ev.get("type") == "lifecycle":
                        self._apply(ev)
                        events.append(ev)
                elif self._external and any(mark in raw for mark in self._external.values()):
                    ev = parse_record(raw)[0]
                    if ev is not None and ev.get("type") == "outcome":
                        self.calls.append(ev)
        return events

    def _apply(self, ev: dict[str, Any]) -> None:
        kind, when = ev.get("kind"), epoch(ev.get("ts"))
        if kind == "member-join" and ev.get("member"):
            name = str(ev["member"])
            self._external[name] = b'"actor":' + json.dumps(name).encode()
        if kind == "run-start":
            self.started = self.started or when
            self.members = int(ev.get("members") or 0)
            self.model = str(ev.get("model") or "")
        elif kind == "phase-start":
            self.phase = str(ev.get("phase") or "")
            self.finalizing = self.finalizing or self.phase == "finalize"
        elif kind == "phase-end" and ev.get("phase") == self.phase:
            self.phase = ""
        elif kind == "stop-clean" and when is not None:
            self.stop_clean = (when, float(ev.get("grace_s") or 0))
            self.stop_reason = str(ev.get("reason") or "")
        elif kind == "run-end":
            self.outcome = str(ev.get("outcome") or "")
            self.diagnosis = str(ev.get("diagnosis") or "")
            self.ended, self.phase = when, ""


def state_of(run_dir: Path, life: RunLifecycle) -> str:
    """`store.runs.run_state`, with `finalizing` for a live run past `phase-start finalize`."""
    state = run_state(run_dir)
    if state == "active" and life.finalizing:
        return "finalizing"
    return state


class RunView:
    """One run, read from disk: info, state, phase, outcome, members, documents."""

    def __init__(self, run_dir: Path, hosted: bool = False) -> None:
        """`hosted`: this process supervises the run, so it is live until its events
        say it ended (`run-end`), whatever its files say meanwhile (the screen opens
        before the supervisor writes TASK.md and marks the run live)."""
        self.run_dir = Path(run_dir)
        self.hosted = hosted
        self._stamp = info_stamp(self.run_dir)
        self.info, self._manifest = read_info(self.run_dir)
        self.life = RunLifecycle(self.run_dir / "events.jsonl")
        self.fold = MemberFold(self.run_dir, self._manifest)
        self.state = "not started"
        self.files: tuple[Path, ...] = ()
        self.new_events: list[dict[str, Any]] = []
        """The lifecycle events the last `refresh` took in, oldest first."""
        self._members: list[MemberState] = []
        self._contents: list[tuple[object, ...]] = []

    def refresh(self) -> set[str]:
        """Catch up with the disk; return what changed: `info`, `state`, `members`,
        `files`, `events` (any lifecycle event)."""
        changed: set[str] = set()
        stamp = info_stamp(self.run_dir)
        if stamp != self._stamp:
            self._stamp = stamp
            info, self._manifest = read_info(self.run_dir)
            self.fold.add_manifest(self._manifest)
            if info != self.info:
                self.info = info
                changed.add("info")
        generation = self.life.generation
        events = self.new_events = self.life.refresh()
        if self.life.generation != generation:
            self.fold = MemberFold(self.run_dir, self._manifest)
        if events:
            changed.add("events")
        for ev in [*events, *self.life.calls]:
            self.fold.apply(ev)
        self.fold.refresh_transcripts()
        state = state_of(self.run_dir, self.life)
        if state != self.state:
            self.state = state
            changed.add("state")
        files = run_files(self.run_dir)
        if files != self.files:
            self.files = files
            changed.add("files")
        self._members = self.fold.members(self.live)
        contents = [content(state) for state in self._members]
        if contents != self._contents:
            self._contents = contents
            changed.add("members")
        return changed

    @property
    def live(self) -> bool:
        if self.hosted:
            return not self.life.outcome
        return self.state in LIVE_STATES

    def close(self) -> None:
        """Release file descriptors (event log, transcripts); a later refresh reopens."""
        self.life.index.close()
        self.fold.close()

    def members(self) -> list[MemberState]:
        """The members as the last `refresh` read them: manifest order, then helpers
        (built once a refresh, not again for each reader)."""
        return self._members


@dataclass(frozen=True)
class RunRow:
    """One line of the runs list."""

    run_id: str
    state: str
    started: float | None
    members: int
    model: str
    outcome: str
    prompt: str
    files: tuple[str, ...]
    """Names of the run documents present (`REPORT.md`, ...)."""
    hordes: int = 0
    """A swarm's horde count (`view.swarm`); 0 for a run."""

    @property
    def count(self) -> str:
        """Members as the list shows them: `M` for a run, `H/M` for a swarm."""
        if self.hordes:
            return f"{self.hordes}/{self.members or '?'}"
        return str(self.members or "-")


@dataclass
class _Tracked:
    life: RunLifecycle
    info: RunInfo
    stamp: tuple[int | None, ...]


class RunsIndex:
    """Every run under `<horde>/runs`, newest first, kept current incrementally.

    A refresh lists the folder, and per run stats its event log (reading only what was
    appended) and the state files. Event logs are not held open between refreshes, so a
    long history costs no file descriptors. Swarms (`swarms/<id>/`) are listed beside the
    runs by `view.swarm.RunsAndSwarms`; their hordes' runs are not listed here.
    """

    def __init__(self, horde_dir: Path) -> None:
        self.runs_dir = HordePaths(Path(horde_dir)).runs
        self._runs: dict[str, _Tracked] = {}
        self._rows: list[RunRow] = []

    def refresh(self) -> bool:
        """Catch up; True if any row changed."""
        names = subfolders(self.runs_dir)
        rows = []
        for name in names:
            run_dir = self.runs_dir / name
            tracked = self._runs.get(name)
            stamp = info_stamp(run_dir)
            if tracked is None:
                tracked = self._runs[name] = _Tracked(
                    RunLifecycle(run_dir / "events.jsonl"), read_info(run_dir)[0], stamp
                )
            elif stamp != tracked.stamp:
                tracked.info, tracked.stamp = read_info(run_dir)[0], stamp
            tracked.life.refresh()
            tracked.life.index.close()
            rows.append(self._row(run_dir, tracked))
        for gone in set(self._runs) - set(names):
            del self._runs[gone]
        rows.sort(key=lambda r: (r.started or 0.0, r.run_id), reverse=True)
        changed = rows != self._rows
        self._rows = rows
        return changed

    @staticmethod
    def _row(run_dir: Path, tracked: _Tracked) -> RunRow:
        life, info = tracked.life, tracked.info
        return RunRow(
            run_id=run_dir.name,
            state=state_of(run_dir, life),
            started=life.started or info.created,
            members=life.members or info.member_count,
            model=life.model or info.model,
            outcome=life.outcome,
            prompt=info.prompt,
            files=tuple(p.name for p in run_files(run_dir)),
        )

    def rows(self) -> list[RunRow]:
        return list(self._rows)
