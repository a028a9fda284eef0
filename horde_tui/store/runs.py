"""Runs and swarms on disk: where they live, what state they are in, which exist.

The one home of the on-disk contract every reader shares (the CLI, the app, a resume,
the launcher): a run is `<horde>/runs/<id>/`, a swarm `<horde>/swarms/<id>/` with its
hordes' runs in `hN/runs/<id>-hN/`. A run is *live* while `runs/<id>/.live` names a
supervisor pid that exists; a `.live` whose pid is gone marks an interrupted run. A
swarm's state is its SWARM.json (rewritten whole by the swarm supervisor), read the same
way: still going by the file but its `parent_pid` gone means interrupted. SWARM.json is
parsed here only (`parse_swarm` -> `SwarmInfo`; a malformed one is refused in one line),
and a swarm is told from a run here only (`is_swarm_dir`). Plain file reads, no
supervisor imports.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.common.inputs import whole_number
from horde_tui.common.watchdog import pid_alive
from horde_tui.store.identity import clear_processes
from horde_tui.store.paths import HordePaths, atomic_write_text, valid_run_id

RUN_STATES = ("active", "interrupted", "finished", "manual", "not started")
"""What `run_state` says of a run directory."""

INPUT_DOCUMENTS = ("TASK.md", "PLAN.md", "SYSTEM.md")
"""What a run is asked (setup writes them): the task, the plan, the members' protocol."""
RESULT_DOCUMENTS = (
    "REPORT.md",
    "DELIVERABLE.md",
    "POSTMORTEM.md",
    "SUMMARY.md",
    "ANSWER.md",
    "ACCEPTANCE.md",
    "ACCEPTANCE.json",
    "GRAPH.md",
)
"""What a run produced, most useful first."""
RUN_DOCUMENTS = INPUT_DOCUMENTS + RESULT_DOCUMENTS
"""Every document of a run, in the order the run writes them."""
READING_ORDER = RESULT_DOCUMENTS + INPUT_DOCUMENTS
"""The documents as the files pane offers them: what the run produced first."""
LISTED_DOCUMENTS = tuple(name for name in RUN_DOCUMENTS if name != "SYSTEM.md")
"""The documents the runs list names (SYSTEM.md is the same protocol in every run)."""

SWARM_LIVE_STATES = frozenset({"pending", "active", "finalizing"})
"""States in which the hosting process is still responsible for the swarm."""
SWARM_STATES = ("pending", "active", "finalizing", "finished", "not started")


def run_dir(horde_dir: Path, run_id: str) -> Path:
    """`<horde>/runs/<id>`; ValueError for an id that is not a plain directory name."""
    return HordePaths(Path(horde_dir)).run_dir(run_id)


def swarm_dir(horde_dir: Path, swarm_id: str) -> Path:
    """`<horde>/swarms/<id>`; ValueError for an id that is not a plain directory name."""
    if not valid_run_id(swarm_id):
        raise ValueError(f"invalid swarm id {swarm_id!r}: use letters, digits, '.', '_' or '-'")
    return HordePaths(Path(horde_dir)).swarms / swarm_id


def subfolders(folder: Path) -> list[str]:
    """Names of the folders in `folder`, sorted; none when it does not exist (yet)."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.is_dir())
    except OSError:
        return []


def run_ids(horde_dir: Path) -> list[str]:
    """Every run directory's name, oldest first (run ids start with a timestamp)."""
    return subfolders(HordePaths(Path(horde_dir)).runs)


def swarm_ids(horde_dir: Path) -> list[str]:
    """Every swarm directory's name, oldest first."""
    return subfolders(HordePaths(Path(horde_dir)).swarms)


def sessions_dir(run_dir: Path, member: str | None = None) -> Path:
    """Where a run's members keep their transcripts, `<run>/sessions/`, or one member's
    folder in it, `<run>/sessions/<member>/` (a `.jsonl` file a session, named by its
    start: `transcript.sessions` lists them)."""
    folder = run_dir / "sessions"
    return folder / member if member else folder


# -- the live marker ---------------------------------------------------------------------------


DETACHED_LOG_ENV = "HORDE_DETACHED_LOG"
"""Set by `launch.start_detached` for the process it starts: the log its output goes to.
A supervisor that finds it carries its run on in the background, with no terminal to
tell where to re-attach, so it says so in the run's events and log (`reattach`)."""


def reattach(folder: Path, run_id: str) -> str:
    """The command that opens the app on `run_id` again: attach finds a run by the folder
    it runs in (a demo's is a temporary one), so it names the folder."""
    return f"cd {folder.resolve()} && horde-tui attach {run_id}"


def live_file(run_dir: Path) -> Path:
    return run_dir / ".live"


def mark_live(run_dir: Path) -> None:
    """This process supervises the run now."""
    atomic_write_text(live_file(run_dir), f"{os.getpid()}\n")


def clear_live(run_dir: Path) -> None:
    live_file(run_dir).unlink(missing_ok=True)
    clear_processes(run_dir)  # the run's names are no longer reserved (store.identity)


def supervisor_pid(run_dir: Path) -> int | None:
    try:
        raw = live_file(run_dir).read_text().strip()
    except OSError:
        return None
    return whole_number(raw)


def run_state(run_dir: Path) -> str:
    """`active`, `interrupted`, `finished`, `manual` (entries written with `horde-tui
    tool`, no supervisor) or `not started` (no TASK.md)."""
    if not (run_dir / "TASK.md").exists():
        return "not started"
    if not (run_dir / "MANIFEST.json").exists():
        return "manual"
    pid = supervisor_pid(run_dir)
    if pid is not None:
        return "active" if pid_alive(pid) else "interrupted"
    return "finished" if (run_dir / "REPORT.md").exists() else "interrupted"


def runs_by_state(horde_dir: Path) -> dict[str, list[str]]:
    """Run ids of `horde_dir/runs/` by state, oldest first."""
    out: dict[str, list[str]] = {}
    runs = HordePaths(Path(horde_dir)).runs
    for name in run_ids(horde_dir):
        out.setdefault(run_state(runs / name), []).append(name)
    return out


def existing_run(horde_dir: Path, run_id: str) -> Path | None:
    """The single run named `run_id`, or None when there is none (or no run could have
    that name: a lookup by a person's word never leaves `runs/`)."""
    path = run_dir(horde_dir, run_id) if valid_run_id(run_id) else None
    return path if path is not None and path.is_dir() else None


def existing_swarm(horde_dir: Path, swarm_id: str) -> Path | None:
    """The swarm named `swarm_id`, or None when there is none (or no swarm could have
    that name)."""
    path = swarm_dir(horde_dir, swarm_id) if valid_run_id(swarm_id) else None
    return path if path is not None and path.is_dir() else None


def find_run(
    horde_dir: Path, run: str | None, states: tuple[str, ...] = ("active",)
) -> Path | None:
    """The run named `run` (a single run, or a swarm's horde run `<swarm>-hN`), or the
    newest run in one of `states` when none is named (a run id begins with its start
    time, so the greatest is the newest whatever its state); None when there is no such run."""
    horde_dir = Path(horde_dir)
    if run:
        if not valid_run_id(run):
            return None  # no run directory can have that name
        path = existing_run(horde_dir, run)
        if path is not None:
            return path
        # A swarm's horde run (`<swarm>-h2`) lives in its horde's own directory.
        return next(iter(sorted(horde_dir.glob(f"swarms/*/h[1-4]/runs/{run}"))), None)
    by_state = runs_by_state(horde_dir)
    candidates = [r for s in states for r in by_state.get(s, [])]
    return HordePaths(horde_dir).runs / max(candidates) if candidates else None


class UnknownRun(LookupError):
    """A run (or swarm) id a person typed that names none: bad usage, exit status 2, in
    every command that takes one. The message is one line naming the nearest ids."""


LAST = "last"
"""What a person types for the newest run (`ask last`, `share last`, `replay last`)."""
ENDED = ("finished", "interrupted")


def resolve_run(
    horde_dir: Path,
    run: str,
    *,
    swarms: bool = False,
    last: tuple[str, ...] | None = None,
) -> Path:
    """The run named `run` (`find_run`), or with `swarms` also the swarm of that name;
    `UnknownRun` naming the nearest ids when there is none: the one resolver of a run id
    a person typed (status, attach, replay, fork, export, resume, finalize, the controls,
    mcp, ask, share). With `last` (run states), `run` may be `last`: the newest run in
    one of them."""
    horde_dir = Path(horde_dir)
    if last is not None and run == LAST:
        newest = find_run(horde_dir, None, last)
        if newest is not None:
            return newest
        which = "run" if last == RUN_STATES else "run has ended"
        raise UnknownRun(
            f"no {which} in {horde_dir} yet; give a run id once there is one (`horde-tui runs`)"
        )
    found = find_run(horde_dir, run) or (existing_swarm(horde_dir, run) if swarms else None)
    if found is not None:
        return found
    what = "run or swarm" if swarms else "run"
    known = run_ids(horde_dir) + (swarm_ids(horde_dir) if swarms else [])
    close = difflib.get_close_matches(run, known, n=3, cutoff=0.6)
    if close:
        hint = f" (nearest: {', '.join(close)})"
    elif known:
        hint = f" (newest: {', '.join(sorted(known)[-3:][::-1])})"
    else:
        hint = " (there is none yet)"
    shown = run[:80] if run.isprintable() else repr(run[:80])
    raise UnknownRun(f"no {what} named {shown} in {horde_dir}{hint}; `horde-tui runs` lists them")


def run_files(run_dir: Path) -> tuple[Path, ...]:
    """The documents the runs list names that are present, in `RUN_DOCUMENTS` order."""
    return tuple(p for p in (run_dir / name for name in LISTED_DOCUMENTS) if p.is_file())


# -- swarms: SWARM.json ------------------------------------------------------------------------


def is_swarm_dir(path: Path) -> bool:
    """A swarm's directory (`<horde>/swarms/<id>`) rather than a run's: told by where it
    lives, the one rule (a swarm's horde runs live in `hN/runs/`, so they are runs)."""
    return Path(path).parent.name == "swarms"


def host_pid(path: Path) -> int | None:
    """The process that has taken a run (its live marker) or a swarm (SWARM.json's
    `parent_pid`); None when nothing names one."""
    if is_swarm_dir(path):
        info = read_swarm(path)
        return info.parent_pid if info is not None else None
    return supervisor_pid(path)


@dataclass(frozen=True)
class Workstream:
    """One horde's share of the task: an entry of SWARM.json's `partition`."""

    horde: str
    workstream: str
    criterion: str
    layers: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "horde": self.horde,
            "workstream": self.workstream,
            "criterion": self.criterion,
            "layers": list(self.layers),
        }


@dataclass(frozen=True)
class SwarmInfo:
    """SWARM.json, typed: what every reader of a swarm (the lists, the swarm screen, a
    resume, the CLI) takes from it. A key an older or newer supervisor did not write
    reads as empty; a key of the wrong shape is refused (`parse_swarm`)."""

    swarm_id: str
    prompt: str = ""
    hordes: int = 0
    members: int = 0
    model: str = ""
    demo: bool = False
    layers: tuple[str, ...] = ()
    state: str = ""
    """As written; `swarm_state` turns a dead host's live state into `interrupted`."""
    parent_pid: int | None = None
    started: float | None = None
    ended: float | None = None
    outcome: str = ""
    diagnosis: str = ""
    partition: tuple[Workstream, ...] = ()
    runs: tuple[tuple[str, str], ...] = ()
    """(horde, run dir relative to the swarm dir) of the hordes started so far."""
    merge: str = ""
    timeline: tuple[tuple[float, str, str | None], ...] = ()
    """(epoch, kind, horde or None for the swarm's own steps), oldest first."""

    @property
    def count(self) -> str:
        return f"{self.hordes}/{self.members}"

    def horde_names(self) -> list[str]:
        """h1..hH, plus any horde the partition or the runs name beyond that."""
        names = [f"h{n}" for n in range(1, self.hordes + 1)]
        names += [w.horde for w in self.partition] + [h for h, _ in self.runs]
        return list(dict.fromkeys(names))

    def workstream(self, horde: str) -> Workstream | None:
        return next((w for w in self.partition if w.horde == horde), None)


class SwarmFileError(ValueError):
    """SWARM.json cannot be read as a swarm's state; the message is one line."""


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """`isinstance`, except that a bool is not a number here (JSON true is not 1)."""
    return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)


def _get(data: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    """`data[key]` when it has the contract's type; the default when absent or null."""
    value = data.get(key)
    if value is None:
        return default
    if not _is(value, kind):
        raise SwarmFileError(f"`{key}` is {type(value).__name__} {json.dumps(value)[:40]}")
    return value


def _texts(data: dict[str, Any], key: str) -> tuple[str, ...]:
    values = _get(data, key, list, [])
    if not all(isinstance(v, str) for v in values):
        raise SwarmFileError(f"`{key}` must be a list of texts")
    return tuple(values)


def _share(entry: Any) -> Workstream:
    if not isinstance(entry, dict) or not _is(entry.get("horde"), str) or not entry["horde"]:
        raise SwarmFileError(f"`partition` has {json.dumps(entry)[:40]}, not a horde's share")
    return Workstream(
        entry["horde"],
        _get(entry, "workstream", str, ""),
        _get(entry, "criterion", str, ""),
        _texts(entry, "layers"),
    )


def _step(entry: Any) -> tuple[float, str, str | None]:
    if not isinstance(entry, dict):
        raise SwarmFileError(f"`timeline` has {json.dumps(entry)[:40]}, not a step")
    try:
        return (
            float(_get(entry, "ts", (int, float), 0.0)),
            _get(entry, "kind", str, ""),
            _get(entry, "horde", str, None),
        )
    except SwarmFileError as exc:
        raise SwarmFileError(f"`timeline` has a step whose {exc}") from None


def parse_swarm(data: Any) -> SwarmInfo:
    """A SWARM.json document as `SwarmInfo`, the one parser of it; raises
    `SwarmFileError` (why, in a few words) for one that is not the contract's."""
    if not isinstance(data, dict):
        raise SwarmFileError("it is not a JSON object")
    swarm_id = _get(data, "id", str, "")
    if not swarm_id:
        raise SwarmFileError("it names no `id`")
    runs = _get(data, "runs", dict, {})
    if not all(isinstance(r, str) for r in runs.values()):
        raise SwarmFileError("`runs` must map each horde to its run directory")
    return SwarmInfo(
        swarm_id=swarm_id,
        prompt=_get(data, "prompt", str, ""),
        hordes=_get(data, "hordes", int, 0),
        members=_get(data, "members", int, 0),
        model=_get(data, "model", str, ""),
        demo=_get(data, "demo", bool, False),
        layers=_texts(data, "layers"),
        state=_get(data, "state", str, ""),
        parent_pid=_get(data, "parent_pid", int, None),
        started=_get(data, "started", (int, float), None),
        ended=_get(data, "ended", (int, float), None),
        outcome=_get(data, "outcome", str, ""),
        diagnosis=_get(data, "diagnosis", str, ""),
        partition=tuple(_share(w) for w in _get(data, "partition", list, [])),
        runs=tuple(runs.items()),
        merge=_get(data, "merge", str, ""),
        timeline=tuple(_step(t) for t in _get(data, "timeline", list, [])),
    )


def swarm_json_path(swarm_dir: Path) -> Path:
    return swarm_dir / "SWARM.json"


def write_swarm_json(swarm_dir: Path, data: dict[str, Any]) -> None:
    """Replace SWARM.json whole (tmp + fsync + rename): a reader never sees half of it."""
    atomic_write_text(swarm_json_path(swarm_dir), json.dumps(data, indent=2) + "\n")


def swarm_info(swarm_dir: Path) -> SwarmInfo:
    """The swarm's SWARM.json, parsed; `SwarmFileError` with the one line to show when
    it is missing, torn or not the contract's."""
    path = swarm_json_path(Path(swarm_dir))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return parse_swarm(data)
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    except SwarmFileError as exc:
        why = f"is not a swarm's state: {exc}"
    except ValueError:
        why = "is not JSON (torn or edited by hand)"
    raise SwarmFileError(
        f"refused: {path} {why}; only the swarm supervisor writes it, whole: restore it or "
        "start a new swarm"
    )


def read_swarm(swarm_dir: Path) -> SwarmInfo | None:
    """`swarm_info`, or None when there is none to read (a swarm being created, or a
    file that is not the contract's): the lists skip such a swarm."""
    try:
        return swarm_info(swarm_dir)
    except SwarmFileError:
        return None


def swarm_state(info: SwarmInfo) -> str:
    """The state to show: SWARM.json's, or `interrupted` when it says the swarm is still
    going but the process hosting it is gone."""
    state = info.state or "pending"
    pid = info.parent_pid
    if state in SWARM_LIVE_STATES and not (pid is not None and pid_alive(pid)):
        return "interrupted"
    return state


def swarms_by_state(horde_dir: Path) -> dict[str, list[str]]:
    """Swarm ids of `horde_dir/swarms/` by shown state, oldest first."""
    out: dict[str, list[str]] = {}
    root = HordePaths(Path(horde_dir)).swarms
    for name in swarm_ids(horde_dir):
        info = read_swarm(root / name)
        if info is not None:
            out.setdefault(swarm_state(info), []).append(name)
    return out


def live_swarm(horde_dir: Path) -> Path | None:
    """The newest swarm whose host is alive and still responsible for it, if any."""
    by_state = swarms_by_state(horde_dir)
    live = [s for state in SWARM_LIVE_STATES for s in by_state.get(state, [])]
    return HordePaths(Path(horde_dir)).swarms / sorted(live)[-1] if live else None


def horde_run_dirs(swarm_dir: Path, info: SwarmInfo) -> dict[str, Path]:
    """`h1` -> its run directory, for every horde SWARM.json lists as started."""
    return {name: swarm_dir / rel for name, rel in sorted(info.runs)}
