"""Members of a run as the files show them: lifecycle events plus session transcripts.

When the app hosts the supervisor it has `MemberState`s from status lines. Attached to a
run another process supervises, or looking at an old run, it has only the disk, folded
here into the same `MemberState`s (`MemberFold`): the
parent's lifecycle events (`member-spawn`, `member-exit`, `member-reset`, `pause`, ...)
say who ran when and how each session ended, and each member's newest transcript says
how far its current session got (turns, tokens, the tool it is running). Both are read
incrementally, so a refresh costs what was appended.

Status words: `pending` (not spawned yet), `running`, `paused`, `starting` (reset, the
next session is being spawned), `waiting` (`--until-stop`: the next session is
scheduled), `exited`.
"""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from horde_tui.store.members import MemberState
from horde_tui.store.timestamps import epoch
from horde_tui.transcript import SessionStats


def content(state: MemberState) -> tuple[Any, ...]:
    """Every field, shallow (`astuple` deep-copies and costs ten times more, twelve
    members per refresh): equal contents mean nothing to repaint."""
    return tuple(getattr(state, f.name) for f in fields(state))


class MemberFold:
    """Folds lifecycle events and transcripts into the `MemberState`s the screens show
    (the type the hosted supervisor keeps, so both read alike)."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any] | None = None) -> None:
        self.run_dir = run_dir
        self.states: dict[str, MemberState] = {}
        """Name -> what the lifecycle events say (transcripts are laid over in `members`)."""
        self._sessions: dict[str, SessionStats] = {}
        self._transcripts: dict[str, list[str]] = {}
        self._dir_mtime: dict[str, int] = {}
        self.add_manifest(manifest or {})

    def add_manifest(self, manifest: dict[str, Any]) -> None:
        """The planned members, in order, before any of them spawned."""
        for m in manifest.get("members", []):
            if isinstance(m, dict) and m.get("name") and m["name"] not in self.states:
                layers = tuple(str(x) for x in m.get("layers") or ())
                self.states[m["name"]] = MemberState(
                    str(m["name"]), str(m.get("role", "member")), layers
                )

    def apply(self, ev: dict[str, Any]) -> bool:
        """Fold one lifecycle event; True if it concerned a member."""
        kind = ev.get("kind")
        if kind in ("pause", "resume", "stop-hard"):
            targets = [t for t in ev.get("targets") or [] if t in self.states]
            for name in targets:
                state = self.states[name]
                if kind == "pause" and state.status == "running":
                    state.status = "paused"
                elif kind == "resume" and state.status == "paused":
                    state.status = "running"
            return bool(targets)
        name = ev.get("member")
        if not name or not isinstance(name, str):
            return False
        known = self.states.get(name)
        if known is None:  # a helper (synthesis, post-mortem) or a member the manifest lacks
            known = self.states[name] = MemberState(name, str(ev.get("role") or name))
        state = known
        when = epoch(ev.get("ts"))
        if kind == "member-spawn":
            state.attempt = int(ev.get("attempt") or state.attempt + 1)
            state.pid = ev.get("pid") if isinstance(ev.get("pid"), int) else None
            state.started = state.started or when
            state.status, state.ended, state.exit_cause, state.detail = "running", None, None, ""
        elif kind == "member-exit":
            state.exit_cause = str(ev.get("cause")) if ev.get("cause") is not None else None
            state.detail = str(ev.get("detail") or "")
            state.ended, state.status = when, "exited"
        elif kind == "member-reset":
            state.resets = int(ev.get("resets") or state.resets + 1)
            state.status = "starting"
        elif kind == "member-continue":
            state.status = "waiting"
        else:
            return False
        return True

    def refresh_transcripts(self) -> None:
        """Follow each member's newest transcript; look for a newer one only when its
        session folder changed (one `stat` per member otherwise)."""
        for name in self.states:
            folder = self.run_dir / "sessions" / name
            try:
                mtime = os.stat(folder).st_mtime_ns
            except OSError:
                continue
            if self._dir_mtime.get(name) != mtime:
                self._dir_mtime[name] = mtime
                self._pick_newest(name, folder)
            stats = self._sessions.get(name)
            if stats is not None:
                stats.refresh()

    def _pick_newest(self, name: str, folder: Path) -> None:
        files = []
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".jsonl") and entry.is_file():
                    files.append((entry.name[:15], entry.stat().st_mtime_ns, entry.name))
        # Session ids start with a second-resolution stamp: the name breaks mtime ties
        # and orders sessions of one second the same way every time.
        files.sort()
        self._transcripts[name] = [str(folder / f[2]) for f in files]
        if not files:
            return
        newest = folder / files[-1][2]
        current = self._sessions.get(name)
        if current is None or current.path != newest:
            if current is not None:
                current.close()
            self._sessions[name] = SessionStats(newest)

    def close(self) -> None:
        for stats in self._sessions.values():
            stats.close()

    def members(self, run_live: bool) -> list[MemberState]:
        """Members in manifest order then helpers in spawn order, each with its newest
        session's turns, tokens and tool laid over. When the run is no longer live, a
        member still marked running was lost with its supervisor: shown as exited
        `killed`, as `horde-tui finalize` reports it (the fold is not changed)."""
        out = []
        for state in self.states.values():
            shown = replace(state, transcripts=list(self._transcripts.get(state.name, ())))
            stats = self._sessions.get(state.name)
            if stats is not None:
                shown.turns, shown.prompt_tokens = stats.turns, stats.prompt_tokens
                shown.completion_tokens, shown.cost_usd = stats.completion_tokens, stats.cost_usd
                shown.final_message, shown.last_output = stats.last_text, stats.last_ts
                shown.current_tool = stats.current_tool if state.status == "running" else ""
            if not run_live and state.status in ("running", "paused", "starting", "waiting"):
                shown.status, shown.exit_cause, shown.current_tool = "exited", "killed", ""
                shown.detail = "the supervisor died while this member ran"
            if stats is not None:  # the running tool, or the last one (shown dimmed)
                shown.tool_summary = shown.current_tool or stats.last_tool
            out.append(shown)
        return out
