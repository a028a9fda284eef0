"""Members of a run as the files show them: lifecycle events plus session transcripts.

A run another process supervises, or an old run, is shown from here (`MemberFold`):
the parent's lifecycle events (`member-spawn`, `member-exit`, `member-reset`, `pause`,
...), folded by the one transition the hosted supervisor applies to its own members
(`store.members.fold_lifecycle`), say who ran when and how each session ended; the
member's transcripts add what its status lines tell a hosted supervisor (turns, tokens
and cost over all its sessions, the call its newest session is running, its last
words). Both are read incrementally, so a refresh costs what was appended.

Status words: `pending` (not spawned yet), `running`, `paused`, `starting` (reset, the
next session is being spawned), `waiting` (`--until-stop`: the next session is
scheduled), `exited`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from horde_tui.common.settings import SETTING_FIELDS
from horde_tui.common.watchdog import pid_alive
from horde_tui.protocol.controls import pending_requests
from horde_tui.store import usage
from horde_tui.store.activity import last_write, read_backoff
from horde_tui.store.members import MemberState, fold_lifecycle
from horde_tui.store.runs import sessions_dir
from horde_tui.store.transcript import SessionStats, sessions

_MID_CALL = frozenset({"running", "paused"})
"""A member whose newest answer's call is still going (a paused one is frozen in it)."""


@dataclass(frozen=True)
class StallRule:
    """The run's stall time (0: stalls are off), as its MANIFEST.json recorded the
    settings (the default where it did not): what `store.activity.next_step` weighs."""

    stall_s: float = SETTING_FIELDS["stall_ms"].default / 1000


_RULES: dict[Path, tuple[int, StallRule]] = {}


def stall_rule(run_dir: Path) -> StallRule:
    """The run's `StallRule`, read again only when MANIFEST.json changed."""
    path = run_dir / "MANIFEST.json"
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return StallRule()
    cached = _RULES.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        config = json.loads(path.read_text(encoding="utf-8")).get("config") or {}
        default = StallRule()
        rule = StallRule(float(config.get("stall_ms", default.stall_s * 1000)) / 1000)
    except (OSError, ValueError, TypeError, AttributeError):
        rule = StallRule()
    _RULES[path] = (stamp, rule)
    return rule


def content(state: MemberState) -> tuple[Any, ...]:
    """Every field, shallow (`astuple` deep-copies and costs ten times more, twelve
    members per refresh): equal contents mean nothing to repaint."""
    return tuple(getattr(state, f.name) for f in fields(state))


class MemberFold:
    """Folds lifecycle events and transcripts into the `MemberState`s the screens show."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any] | None = None) -> None:
        self.run_dir = run_dir
        self.states: dict[str, MemberState] = {}
        """Name -> what the lifecycle events say (transcripts are laid over in `members`)."""
        self._sessions: dict[str, SessionStats] = {}
        """Name -> its newest session, followed as it grows."""
        self._older: dict[Path, SessionStats] = {}
        """Sessions before a member's newest: read once (they no longer grow), closed."""
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
        """Fold one lifecycle event (`store.members.fold_lifecycle`, as the supervisor
        does); True if it concerned a member. A helper (synthesis, post-mortem) or a
        member the manifest lacks gets a row when it spawns."""
        return fold_lifecycle(self.states, ev, helpers=True, externals=True)

    def refresh_transcripts(self) -> None:
        """Follow each member's newest transcript; look for a newer one only when its
        session folder changed (one `stat` per member otherwise)."""
        for name in self.states:
            try:
                mtime = os.stat(sessions_dir(self.run_dir, name)).st_mtime_ns
            except OSError:
                continue
            if self._dir_mtime.get(name) != mtime:
                self._dir_mtime[name] = mtime
                self._pick_newest(name)
            stats = self._sessions.get(name)
            if stats is not None:
                stats.refresh()

    def _pick_newest(self, name: str) -> None:
        found = sessions(self.run_dir, name)
        self._transcripts[name] = [str(path) for path in found]
        if not found:
            return
        current = self._sessions.get(name)
        for path in found[:-1]:
            if path not in self._older:
                older = current if current is not None and current.path == path else None
                older = older or SessionStats(path)
                older.refresh()
                older.close()
                self._older[path] = older
        if current is None or current.path != found[-1]:
            if current is not None:
                current.close()
            self._sessions[name] = SessionStats(found[-1])

    def _totals(self, shown: MemberState, newest: SessionStats) -> None:
        """Turns, tokens and cost of all the member's sessions, as the supervisor
        counts them from its status lines and the report adds them up."""
        shown.turns, shown.prompt_tokens, shown.completion_tokens = 0, 0, 0
        shown.cost_usd = 0.0
        for path in self._transcripts.get(shown.name, ())[:-1]:
            older = self._older.get(Path(path))
            if older is not None:
                shown.turns += older.turns
                usage.fold(shown, older.prompt_tokens, older.completion_tokens, older.cost_usd)
        shown.turns += newest.turns
        usage.fold(shown, newest.prompt_tokens, newest.completion_tokens, newest.cost_usd)

    def _asking(self) -> dict[str, str]:
        """Member -> the command it waits to have approved (confirm mode)."""
        return {
            req.target: req.command or ""
            for _, req in pending_requests(self.run_dir)
            if not isinstance(req, str) and req.action == "confirm"
        }

    def _activity(self, shown: MemberState, stats: SessionStats, asking: dict[str, str]) -> None:
        """What `store.activity` reads, as the newest session's transcript, the gateway's
        back-off note and the confirm queue tell it (the supervisor's status lines say
        the same to it)."""
        if shown.status != "running":
            return
        shown.call_since, shown.tool_since = stats.call_since, stats.tool_since
        shown.repeat, shown.repeat_since = stats.repeat, stats.repeat_since
        shown.backoff = read_backoff(self.run_dir, shown.name) if stats.call_since else None
        shown.approval = asking.get(shown.name, "") if shown.current_tool else ""
        shown.last_write = last_write(self.run_dir, shown.name) or None

    def close(self) -> None:
        for stats in self._sessions.values():
            stats.close()

    def members(self, run_live: bool) -> list[MemberState]:
        """Members in manifest order then helpers in spawn order, each with its sessions'
        turns, tokens and cost and its newest session's tool and words laid over. When the run is no longer live, a
        member still marked running was lost with its supervisor: shown as exited
        `killed`, as `horde-tui finalize` reports it (the fold is not changed)."""
        out = []
        asking = self._asking() if run_live else {}
        for state in self.states.values():
            shown = replace(state, transcripts=list(self._transcripts.get(state.name, ())))
            stats = self._sessions.get(state.name)
            if stats is not None:
                self._totals(shown, stats)
                shown.final_message, shown.last_output = stats.last_text, stats.last_ts
                shown.current_tool = stats.current_tool if state.status in _MID_CALL else ""
                self._activity(shown, stats, asking)
            lost = state.status in ("running", "paused", "starting", "waiting")
            if not run_live and lost and not state.external:  # an agent outside lives on
                shown.status, shown.exit_cause, shown.current_tool = "exited", "killed", ""
                shown.detail = "the supervisor died while this member ran"
            elif state.external and lost and state.pid and not pid_alive(state.pid):
                # Its MCP server is its heartbeat: gone without a `member-leave`.
                shown.status, shown.exit_cause, shown.current_tool = "exited", "killed", ""
                shown.detail = f"its MCP server (pid {state.pid}) ended without leaving"
            if stats is not None:  # the running call, or the last one (shown dimmed)
                running = stats.current_summary if shown.current_tool else ""
                shown.tool_summary = running or stats.last_summary
            out.append(shown)
        return out
