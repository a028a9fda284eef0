"""`horde-tui replay RUN [--at E#]`: the app on a finished run, with a time cursor.

RUN is a run id or `last` (the newest run that is not live) in the `.horde/` that
`store.paths.default_horde_dir` finds. The run opens at its last event, or after E#
with `--at`; `screens.replay` shows it and `view.replay` folds it. A run that is
missing, still live, or without events, and an E# it lacks, are refused in one line
with exit status 2, before the app starts.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from textual.screen import Screen

from horde_tui.app.app import HordeApp
from horde_tui.screens.base import AppConfig
from horde_tui.screens.replay import ReplayScreen
from horde_tui.store.events import EVENT_ID
from horde_tui.store.paths import default_horde_dir
from horde_tui.store.runs import LAST, UnknownRun, resolve_run
from horde_tui.view.replay import Replay, ReplayRefused
from horde_tui.view.run import LIVE_STATES, RunsIndex, state_of

BIG_LOG = 5_000_000
"""Bytes of event log past which opening takes a noticeable while (~1 s per 8 MB)."""


class ReplayApp(HordeApp):
    """The app with one screen, the replay's (nothing hosted, nothing watched)."""

    def __init__(self, replay: Replay, *, config: AppConfig | None = None) -> None:
        config = replace(config or AppConfig(), watch_files=False)  # the run is over
        super().__init__(horde_dir=replay.horde_dir, config=config)
        self.replay = replay
        self._label(f"run {replay.run_dir.name} · replay", replay.info.model, replay.info.demo)

    def get_default_screen(self) -> Screen[object]:
        return ReplayScreen(self.replay)


def run_to_replay(horde_dir: Path, run: str) -> Path:
    """The run directory `run` names (`last`: the newest run not live); ReplayRefused
    with what to do when there is none or it is still going."""
    if run == LAST:
        index = RunsIndex(horde_dir)
        index.refresh()
        ended = [row.run_id for row in index.rows() if row.state not in LIVE_STATES]
        if not ended:
            raise ReplayRefused(f"refused: no run has ended in {horde_dir}; nothing to replay")
        run = ended[0]
    try:
        run_dir = resolve_run(horde_dir, run)
    except UnknownRun as exc:
        raise ReplayRefused(f"refused: {exc} (or give `last`)") from None
    from horde_tui.view.run import RunLifecycle

    life = RunLifecycle(run_dir / "events.jsonl")
    life.refresh()
    life.index.close()
    if state_of(run_dir, life) in LIVE_STATES:
        raise ReplayRefused(
            f"refused: run {run} is still live; watch it with `horde-tui attach {run}` "
            "and replay it once it has ended"
        )
    return run_dir


def open_replay(horde_dir: Path, run: str, at: str | None = None) -> Replay:
    """The replay of `run` with its cursor after `at` (E#; default its last event)."""
    number = None
    if at is not None:
        m = EVENT_ID.fullmatch(at.strip())
        if m is None:
            raise ReplayRefused(f"refused: --at {at!r} is not an event id; give E# (e.g. E42)")
        number = int(m[1])
    run_dir = run_to_replay(horde_dir, run)
    size = (run_dir / "events.jsonl").stat().st_size if (run_dir / "events.jsonl").exists() else 0
    if size > BIG_LOG:  # seconds of reading before the app shows: say so
        print(
            f"horde-tui: reading run {run_dir.name} ({size / 1e6:.0f} MB of events)",
            file=sys.stderr,
        )
    replay = Replay(run_dir)
    if number is not None:
        try:
            replay.seek_event(number)
            replay.sync_ledger()
        except ReplayRefused:
            replay.close()
            raise
    return replay


def cmd_replay(args: argparse.Namespace) -> int:
    try:
        replay = open_replay(default_horde_dir(), args.run, args.at)
    except ReplayRefused as exc:
        print(f"horde-tui: {exc}", file=sys.stderr)
        return 2
    try:
        ReplayApp(replay).run(mouse=not args.no_mouse)
    finally:
        replay.close()
    return 0
