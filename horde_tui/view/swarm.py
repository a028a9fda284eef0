"""The read side of swarms: `SWARM.json`, one line per horde, and swarms in the runs list.

A swarm (`H/M`) lives in `.horde/swarms/<id>/`: `SWARM.json` (rewritten atomically by the
swarm supervisor on every change) says what it is and where it stands, and each started
horde is a complete horde directory whose one run keeps the normal run format. So a
horde's line is read with the run readers (`RunView` for state, outcome, members and
cost; `LedgerView` for findings; `acceptance_all` for accepted artifacts), never parsed
a second way, and everything works the same whether this app hosts the swarm or another
process does.

SWARM.json is parsed one way, by `store.runs` (`SwarmInfo`); state follows the runs
list's rule there: a swarm whose `SWARM.json` says it is pending, active or finalizing
but whose `parent_pid` is gone is `interrupted`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from horde_tui.store.acceptance import acceptance_all
from horde_tui.store.paths import HordePaths
from horde_tui.store.runs import (
    SWARM_LIVE_STATES,
    SwarmInfo,
    horde_run_dirs,
    read_swarm,
    subfolders,
    swarm_json_path,
    swarm_state,
)
from horde_tui.store.usage import sum_cost
from horde_tui.view.ledgers import LedgerView
from horde_tui.view.run import RunRow, RunsIndex, RunView

SWARM_DOCUMENTS = ("SWARM.md", "REPORT.md", "DELIVERABLE.md")
"""The swarm's own documents, in the order the swarm screen offers them."""
ACCEPTED = frozenset({"accepted", "accepted-with-limits"})


def swarm_json_stamp(swarm_dir: Path) -> int | None:
    """SWARM.json's mtime: it is replaced whole on every change, so re-read it only then."""
    try:
        return os.stat(swarm_json_path(swarm_dir)).st_mtime_ns
    except OSError:
        return None


def swarm_files(swarm_dir: Path) -> tuple[str, ...]:
    """The swarm documents present, in `SWARM_DOCUMENTS` order."""
    return tuple(name for name in SWARM_DOCUMENTS if (swarm_dir / name).is_file())


@dataclass(frozen=True)
class HordeLine:
    """One horde of a swarm, as the swarm screen's table shows it."""

    horde: str
    state: str
    """The run's state (`active`, `finalizing`, `finished`, `interrupted`, ...) or
    `pending` before the horde started."""
    outcome: str
    members: int
    """The horde's members (the manifest's; its synthesis and review helpers are not)."""
    findings: int
    """Current findings of the horde's run (superseded ones are not counted)."""
    accepted: int
    """Findings and artifacts (F#, A#) of the run whose current revision is accepted
    (with or without limits): the reference's "accepted artifacts"."""
    cost_usd: float | None
    """Every session of the horde, its helpers' included; unknown if any one is."""
    workstream: str
    run_dir: Path | None
    statuses: tuple[str, ...] = ()
    """Each member's status (`running`, `paused`, ...): what the controls can act on."""
    names: tuple[str, ...] = ()
    """Each member's name, in the order of `statuses`."""


@dataclass
class _Horde:
    """A started horde's readers, kept between refreshes so each reads only what was
    appended."""

    run: RunView
    ledgers: LedgerView
    accepted: int = 0
    findings: int = 0


@dataclass
class SwarmView:
    """One swarm, read from disk and kept current incrementally."""

    swarm_dir: Path
    info: SwarmInfo | None = None
    state: str = "not started"
    files: tuple[str, ...] = ()
    _stamp: int | None = None
    _hordes: dict[str, _Horde] = field(default_factory=dict)
    _lines: list[HordeLine] = field(default_factory=list)

    @property
    def swarm_id(self) -> str:
        return self.info.swarm_id if self.info else self.swarm_dir.name

    @property
    def live(self) -> bool:
        return self.state in SWARM_LIVE_STATES

    def run_dir(self, horde: str) -> Path | None:
        """The horde's run directory once it started (SWARM.json names it)."""
        return horde_run_dirs(self.swarm_dir, self.info).get(horde) if self.info else None

    def refresh(self) -> bool:
        """Catch up with SWARM.json and every started horde; True if anything shown changed."""
        stamp = swarm_json_stamp(self.swarm_dir)
        info_changed = stamp != self._stamp
        if info_changed:
            self._stamp, self.info = stamp, read_swarm(self.swarm_dir)
        state = swarm_state(self.info) if self.info else "not started"
        files = swarm_files(self.swarm_dir)
        lines = self._read_lines()
        changed = info_changed or (state, files, lines) != (self.state, self.files, self._lines)
        self.state, self.files, self._lines = state, files, lines
        return changed

    def _read_lines(self) -> list[HordeLine]:
        if self.info is None:
            return []
        out = []
        for horde in self.info.horde_names():
            share = self.info.workstream(horde)
            workstream = share.workstream if share else ""
            run_dir = self.run_dir(horde)
            tracked = self._track(horde, run_dir) if run_dir is not None else None
            if tracked is None:
                line = HordeLine(
                    horde, "pending", "", self.info.members, 0, 0, 0.0, workstream, None
                )
                out.append(line)
                continue
            run = tracked.run
            members = run.members()
            out.append(
                HordeLine(
                    horde=horde,
                    state=run.state,
                    outcome=run.life.outcome,
                    members=run.info.member_count or len(members),
                    findings=tracked.findings,
                    accepted=tracked.accepted,
                    cost_usd=sum_cost([m.cost_usd for m in members]),
                    workstream=workstream,
                    run_dir=run.run_dir,
                    statuses=tuple(m.status for m in members),
                    names=tuple(m.name for m in members),
                )
            )
        return out

    def _track(self, horde: str, run_dir: Path) -> _Horde | None:
        """The horde's readers, caught up; None until its run directory exists."""
        tracked = self._hordes.get(horde)
        if tracked is None:
            if not run_dir.is_dir():
                return None
            tracked = self._hordes[horde] = _Horde(
                RunView(run_dir), LedgerView(run_dir.parent.parent, run_dir.name)
            )
        tracked.run.refresh()
        tracked.run.close()  # no descriptors held between refreshes (up to four hordes)
        if tracked.ledgers.refresh():
            state, run = tracked.ledgers.state, run_dir.name
            rows = tracked.ledgers.rows("findings")
            tracked.findings = sum(1 for r in rows if r.status != "superseded")
            tracked.accepted = sum(1 for a in acceptance_all(state, run) if a.state in ACCEPTED)
        return tracked

    def lines(self) -> list[HordeLine]:
        return list(self._lines)

    def line(self, horde: str) -> HordeLine | None:
        return next((line for line in self._lines if line.horde == horde), None)

    def ledgers_markdown(self, kind: str, extra: bool = True) -> str:
        """Every horde's `kind` ledger (a `LedgerView` kind) under its own heading, newest
        first, as the reference's swarm ledger pages show them; ids repeat per horde.
        `extra`: the ledger's own columns after id, status, owner and text (a narrow
        screen leaves them out). Reads what the last `refresh` folded."""
        if self.info is None:
            return ""
        parts = []
        for horde in self.info.horde_names():
            share = self.info.workstream(horde)
            parts.append(f"## {horde}" + (f" · {_cell(share.workstream)}" if share else ""))
            tracked = self._hordes.get(horde)
            rows = tracked.ledgers.rows(kind) if tracked is not None else []
            if tracked is None:
                parts.append("Not started yet.")
            elif not rows:
                parts.append(f"No {kind} in {horde} yet.")
            else:
                columns = tracked.ledgers.columns(kind)[: None if extra else 4]
                table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                table += [
                    "| " + " | ".join(_cell(c) for c in r.cells()[: len(columns)]) + " |"
                    for r in rows
                ]
                parts.append("\n".join(table))
        return "\n\n".join(parts) + "\n"

    def close(self) -> None:
        for tracked in self._hordes.values():
            tracked.run.close()


@dataclass
class _TrackedSwarm:
    stamp: int | None
    info: SwarmInfo | None


class RunsAndSwarms(RunsIndex):
    """The runs list's index: every run, and every swarm in `.horde/swarms/`, newest first.

    A swarm's SWARM.json is re-read only when replaced; its state is re-derived on every
    refresh (the host process may die without writing anything)."""

    def __init__(self, horde_dir: Path) -> None:
        super().__init__(horde_dir)
        self.swarms_dir = HordePaths(Path(horde_dir)).swarms
        self._swarms: dict[str, _TrackedSwarm] = {}
        self._all: list[RunRow] = []

    def refresh(self) -> bool:
        super().refresh()
        names = subfolders(self.swarms_dir)
        swarm_rows = []
        for name in names:
            swarm_dir = self.swarms_dir / name
            stamp = swarm_json_stamp(swarm_dir)
            tracked = self._swarms.get(name)
            if tracked is None or tracked.stamp != stamp:
                tracked = self._swarms[name] = _TrackedSwarm(stamp, read_swarm(swarm_dir))
            if tracked.info is not None:
                swarm_rows.append(swarm_row(name, tracked.info, swarm_files(swarm_dir)))
        for gone in set(self._swarms) - set(names):
            del self._swarms[gone]
        rows = super().rows() + swarm_rows
        rows.sort(key=lambda r: (r.started or 0.0, r.run_id), reverse=True)
        changed = rows != self._all
        self._all = rows
        return changed

    def rows(self) -> list[RunRow]:
        return list(self._all)

    def is_swarm(self, row: RunRow) -> bool:
        return row.hordes > 0

    def swarm_dir(self, row: RunRow) -> Path:
        return self.swarms_dir / row.run_id


def swarm_row(name: str, info: SwarmInfo, files: tuple[str, ...]) -> RunRow:
    """A swarm as a line of the runs list; `name` is its directory (the swarm id)."""
    return RunRow(
        run_id=name,
        state=swarm_state(info),
        started=info.started,
        members=info.members,
        model=info.model,
        outcome=info.outcome,
        prompt=info.prompt,
        files=files,
        hordes=max(info.hordes, 1),
    )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "-"


def overview_markdown(view: SwarmView, time_text: Callable[[float], str]) -> str:
    """The swarm's prompt, partition, merge state and timeline as Markdown: what the
    reference's swarm page shows beside the hordes table."""
    info = view.info
    if info is None:
        return (
            f"`{view.swarm_dir.name}` has no readable SWARM.json yet: the swarm supervisor "
            "writes it as the swarm starts."
        )
    started = time_text(info.started) if info.started else "not started"
    lines = [
        f"**{info.prompt or '(no prompt)'}**",
        "",
        f"{view.state} · {info.count} · {info.model or 'no model'}"
        f"{' (DEMO MODEL)' if info.demo else ''} · started {started}"
        + (f" · {info.outcome}" if info.outcome else ""),
    ]
    if info.diagnosis:
        lines += ["", info.diagnosis]
    lines += ["", f"Merge: {info.merge or 'pending'}", "", "## Partition", ""]
    if info.partition:
        lines += ["| horde | workstream | acceptance criterion | layers |", "|---|---|---|---|"]
        lines += [
            f"| {w.horde} | {_cell(w.workstream)} | {_cell(w.criterion)} "
            f"| {_cell('; '.join(w.layers))} |"
            for w in info.partition
        ]
    else:
        lines.append("Not partitioned yet (the planner writes it before the hordes start).")
    if info.timeline:
        lines += ["", "## Timeline", ""]
        lines += [
            f"- {time_text(ts)} {kind}{f' {horde}' if horde else ''}"
            for ts, kind, horde in info.timeline
        ]
    return "\n".join(lines) + "\n"
