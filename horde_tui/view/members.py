"""Members of a run as the files show them: lifecycle events plus session transcripts.

When the app hosts the supervisor it has `MemberState`s from status lines. Attached to a
run another process supervises, or looking at an old run, it has only the disk: the
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
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from horde_tui.store.ledgers.common import one_line
from horde_tui.store.timestamps import epoch
from horde_tui.store.usage import fold_record
from horde_tui.view.linefile import LineIndex, parse_record

_TOOL_ROLE = b'"role": "tool"'
"""How a transcript's tool results start (`Transcript.write` keeps json's default
separators): such lines are counted without parsing their often large content."""


@dataclass
class SessionStats:
    """How far one session got, from its transcript, read incrementally."""

    path: Path
    turns: int = 0
    """Model answers (assistant messages): one per turn."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    """None once any answer was unpriced: the total is then unknown."""
    last_ts: float | None = None
    last_text: str = ""
    pending_tools: list[str] = field(default_factory=list)
    """Tools the last answer called whose results are not in the transcript yet."""
    last_tool: str = ""
    """The newest tool any answer called: the member table shows it, dimmed, between
    tools."""
    _index: LineIndex | None = field(default=None, repr=False, compare=False)
    _generation: int = field(default=0, repr=False, compare=False)

    def refresh(self) -> bool:
        """Fold the messages appended since the last call; True if any were."""
        if self._index is None:
            self._index = LineIndex(self.path, transactions=False)
        start = len(self._index)
        added = self._index.refresh()
        if self._index.generation != self._generation:  # rewritten: start over
            self._generation, start = self._index.generation, 0
            self.turns = self.prompt_tokens = self.completion_tokens = 0
            self.cost_usd, self.last_ts, self.last_text, self.pending_tools = 0.0, None, "", []
            self.last_tool = ""
        elif not added:
            return False
        for raw in self._index.raw_lines(start, len(self._index)):
            self._fold(raw)
        return True

    def _fold(self, raw: bytes) -> None:
        if _TOOL_ROLE in raw[:64]:
            if self.pending_tools:
                self.pending_tools.pop(0)
            return
        msg, _error = parse_record(raw)
        if msg is None:
            return
        self.last_ts = epoch(msg.get("ts")) or self.last_ts
        if msg.get("role") == "tool":
            if self.pending_tools:
                self.pending_tools.pop(0)
            return
        if msg.get("role") != "assistant":
            return
        self.turns += 1
        fold_record(self, msg.get("usage"))
        calls = msg.get("tool_calls") or []
        self.pending_tools = [
            str((c.get("function") or {}).get("name", "?")) for c in calls if isinstance(c, dict)
        ]
        if self.pending_tools:
            self.last_tool = self.pending_tools[-1]
        content = msg.get("content")
        if isinstance(content, str) and content.strip():
            self.last_text = one_line(content, 200)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()

    @property
    def current_tool(self) -> str:
        return self.pending_tools[0] if self.pending_tools else ""


@dataclass
class MemberRow:
    """One line of the members table, rebuilt from disk."""

    name: str
    role: str = "member"
    layers: tuple[str, ...] = ()
    status: str = "pending"
    attempt: int = 0
    resets: int = 0
    pid: int | None = None
    started: float | None = None
    """When the first session was spawned (epoch seconds)."""
    ended: float | None = None
    exit_cause: str | None = None
    detail: str = ""
    sessions: int = 0
    """Transcripts on disk; turns, tokens and cost below are the newest one's."""
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    current_tool: str = ""
    last_tool: str = ""
    last_text: str = ""
    last_activity: float | None = None
    transcript: Path | None = None
    version: int = 0
    """Moves on whenever another field changes, so a table repaints only changed rows."""

    def content(self) -> tuple[Any, ...]:
        """Every field but `version`, shallow: `astuple` deep-copies the layer list
        and costs ten times more, twelve rows per refresh."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "version")


class MemberTable:
    """Folds lifecycle events and transcripts into `MemberRow`s."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any] | None = None) -> None:
        self.run_dir = run_dir
        self.rows: dict[str, MemberRow] = {}
        self._sessions: dict[str, SessionStats] = {}
        self._dir_mtime: dict[str, int] = {}
        self._seen: dict[str, tuple[tuple[Any, ...], int]] = {}
        """Member -> (content, version) as last handed out."""
        self.add_manifest(manifest or {})

    def add_manifest(self, manifest: dict[str, Any]) -> None:
        """The planned members, in order, before any of them spawned."""
        for m in manifest.get("members", []):
            if isinstance(m, dict) and m.get("name") and m["name"] not in self.rows:
                layers = tuple(str(x) for x in m.get("layers") or ())
                self.rows[m["name"]] = MemberRow(
                    str(m["name"]), str(m.get("role", "member")), layers
                )

    def apply(self, ev: dict[str, Any]) -> bool:
        """Fold one lifecycle event; True if it concerned a member."""
        kind = ev.get("kind")
        if kind in ("pause", "resume", "stop-hard"):
            targets = [t for t in ev.get("targets") or [] if t in self.rows]
            for name in targets:
                target = self.rows[name]
                if kind == "pause" and target.status == "running":
                    target.status = "paused"
                elif kind == "resume" and target.status == "paused":
                    target.status = "running"
            return bool(targets)
        name = ev.get("member")
        if not name or not isinstance(name, str):
            return False
        row = self.rows.get(name)
        if row is None:  # a helper (synthesis, post-mortem) or a member the manifest lacks
            row = self.rows[name] = MemberRow(name, str(ev.get("role") or name))
        when = epoch(ev.get("ts"))
        if kind == "member-spawn":
            row.attempt = int(ev.get("attempt") or row.attempt + 1)
            row.pid = ev.get("pid") if isinstance(ev.get("pid"), int) else None
            row.started = row.started or when
            row.status, row.ended, row.exit_cause, row.detail = "running", None, None, ""
        elif kind == "member-exit":
            row.exit_cause = str(ev.get("cause")) if ev.get("cause") is not None else None
            row.detail = str(ev.get("detail") or "")
            row.ended, row.status = when, "exited"
        elif kind == "member-reset":
            row.resets = int(ev.get("resets") or row.resets + 1)
            row.status = "starting"
        elif kind == "member-continue":
            row.status = "waiting"
        else:
            return False
        return True

    def refresh_transcripts(self) -> None:
        """Follow each member's newest transcript; look for a newer one only when its
        session folder changed (one `stat` per member otherwise)."""
        for name in self.rows:
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
                    files.append((entry.stat().st_mtime_ns, entry.name))
        self.rows[name].sessions = len(files)
        if not files:
            return
        # Session ids start with a second-resolution stamp: the name breaks mtime ties
        # and orders sessions of one second the same way every time.
        newest = folder / max(files, key=lambda f: (f[1][:15], f[0], f[1]))[1]
        current = self._sessions.get(name)
        if current is None or current.path != newest:
            if current is not None:
                current.close()
            self._sessions[name] = SessionStats(newest)

    def close(self) -> None:
        for stats in self._sessions.values():
            stats.close()

    def member_rows(self, run_live: bool) -> list[MemberRow]:
        """Rows in manifest order then helpers in spawn order. When the run is no longer
        live, a member still marked running was lost with its supervisor: shown as
        exited `killed`, as `horde-tui finalize` reports it (the fold is not changed)."""
        out = []
        for row in self.rows.values():
            stats = self._sessions.get(row.name)
            if stats is not None:
                row.turns, row.prompt_tokens = stats.turns, stats.prompt_tokens
                row.completion_tokens, row.cost_usd = stats.completion_tokens, stats.cost_usd
                row.last_text, row.last_activity = stats.last_text, stats.last_ts
                row.transcript = stats.path
                row.current_tool = stats.current_tool if row.status == "running" else ""
                row.last_tool = stats.last_tool
            if not run_live and row.status in ("running", "paused", "starting", "waiting"):
                row = replace(
                    row,
                    status="exited",
                    exit_cause="killed",
                    current_tool="",
                    detail="the supervisor died while this member ran",
                )
            content = row.content()
            seen = self._seen.get(row.name)
            version = seen[1] if seen is not None and seen[0] == content else self._bump(seen)
            self._seen[row.name] = (content, version)
            row.version = version
            out.append(row)
        return out

    @staticmethod
    def _bump(seen: tuple[tuple[Any, ...], int] | None) -> int:
        return 1 if seen is None else seen[1] + 1
