"""`EventView`: a run's `events.jsonl` as a filterable, tail-following list of lines.

Built on `LineIndex`. Each line's facets (actor, what it is, its type) are kept as
small integer codes in parallel arrays, extracted once when the line first appears, so:

- a refresh costs what was appended: new lines are classified and the matching ones
  appended to the list of matching line numbers;
- a filter change rescans the facet arrays only (no file read, no JSON parse): about
  10 ms for 200,000 events;
- rows are formatted on demand from the few records on screen (the index's LRU cache).

Facets come from the writer's fixed key order (`{"ts","actor","action",...,"type"}` for
tool events, `{"ts","actor","type":"lifecycle","kind"}` for lifecycle ones, see
`HordeStore`) with one regular expression on the raw bytes, five times faster than
parsing the JSON; a line of any other shape is parsed. A line that only *looks* right
is classified by its prefix and shown as corrupt when displayed.

Following: while `follow` is on, the app keeps the last row in view; when the user
scrolls up it sets `follow = False`, and `new_since_pause` counts the matching events
that arrived since, for an "N new lines" indicator. Setting `follow = True` clears it.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui.store.causes import exit_level
from horde_tui.store.jsonl import parse_record
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.linefile import BATCH, LineIndex

_FAST = re.compile(
    rb'\{"ts":"[^"\\]*","actor":"([^"\\]*)",(?:"action":"([^"\\]*)",'
    rb'(?:"requestId":"(?:[^"\\]|\\.)*",)?)?"type":"([^"\\]*)"(?:,"kind":"([^"\\]*)")?'
)
_MEMBER = re.compile(rb'"member":"([^"\\]*)"')
"""The member a lifecycle line is about (its `member` field comes after the data)."""
CORRUPT = "corrupt"
"""The kind and type of a line that is not a JSON object (a filter may ask for it)."""
_BLANK = "\x00blank"
"""The type of a blank line: never shown, it is not an event."""


def _natural(name: str) -> tuple[Any, ...]:
    """`member-2` before `member-10`."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass(frozen=True)
class EventFilter:
    """Which events to show; an empty set means "any"."""

    actors: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    """Matches an event's lifecycle `kind`, its tool `action`, or its `type`."""

    @classmethod
    def of(cls, actors: Iterable[str] = (), kinds: Iterable[str] = ()) -> EventFilter:
        return cls(frozenset(actors), frozenset(kinds))

    @classmethod
    def parse(cls, text: str, actors: Iterable[str], kinds: Iterable[str]) -> EventFilter:
        """A filter typed as words (`member-2 finding`) against the names seen so far.

        A word naming an actor or kind exactly picks just that one (`member-1` is not
        `member-12`); any other word picks every actor and kind containing it (`exit`
        picks `member-exit`). Actor words and kind words combine with "and"; a word
        that matches nothing stays in the filter, so it shows nothing rather than all.
        """
        known_actors, known_kinds = list(actors), list(kinds)
        want_actors: set[str] = set()
        want_kinds: set[str] = set()
        for word in text.lower().split():
            exact_a = [a for a in known_actors if a.lower() == word]
            exact_k = [k for k in known_kinds if k.lower() == word]
            if exact_a or exact_k:
                want_actors.update(exact_a)
                want_kinds.update(exact_k)
                continue
            some_a = [a for a in known_actors if word in a.lower()]
            some_k = [k for k in known_kinds if word in k.lower()]
            want_actors.update(some_a)
            want_kinds.update(some_k)
            if not some_a and not some_k:
                want_kinds.add(word)
        return cls(frozenset(want_actors), frozenset(want_kinds))


@dataclass
class _Codes:
    """Interned facet names: one small integer per distinct actor, kind or type."""

    names: list[str] = field(default_factory=list)
    by_name: dict[str, int] = field(default_factory=dict)
    by_bytes: dict[bytes, int] = field(default_factory=dict)

    def of(self, name: str) -> int:
        code = self.by_name.get(name)
        if code is None:
            code = self.by_name[name] = len(self.names)
            self.names.append(name)
        return code

    def of_bytes(self, raw: bytes) -> int:
        code = self.by_bytes.get(raw)
        if code is None:
            code = self.by_bytes[raw] = self.of(raw.decode("utf-8", "replace"))
        return code


def _facets(record: dict[str, Any] | None) -> tuple[str, str, str]:
    """(actor, kind-or-action, type) of a parsed line; corrupt lines get `CORRUPT`."""
    if record is None:
        return "", CORRUPT, CORRUPT
    return _who(record), _label(record), str(record.get("type", ""))


def _who(record: dict[str, Any]) -> str:
    """The actor, except that a lifecycle event about a member belongs to that member:
    filtering on `member-3` shows its spawns, exits and resets with its own writes."""
    if record.get("type") == "lifecycle" and record.get("member"):
        return str(record["member"])
    return str(record.get("actor", ""))


def _label(record: dict[str, Any]) -> str:
    """A lifecycle event's kind, a tool event's action, else its type."""
    typ = str(record.get("type", ""))
    kind = record.get("kind") if typ == "lifecycle" else None
    return str(kind or record.get("action") or typ)


class EventView:
    """The matching events of one `events.jsonl`, kept current by offset tailing."""

    def __init__(self, path: Path | str, flt: EventFilter | None = None, *, cache_size: int = 2048):
        self.index = LineIndex(path, cache_size=cache_size)
        self._filter = flt or EventFilter()
        self._codes = _Codes()
        self._blank = self._codes.of(_BLANK)
        self._actor = array("I")
        self._label = array("I")
        self._type = array("I")
        self._want_actors: set[int] = set()
        self._want_kinds: set[int] = set()
        self._seen_actors: set[int] = set()
        self._seen_kinds: set[int] = set()
        self._matching = array("I")
        """Line numbers of the events that pass the filter, in file order."""
        self._generation = self.index.generation
        self._follow = True
        self.new_since_pause = 0
        """Matching events appended while `follow` was off."""
        self._want_codes()

    # -- following ---------------------------------------------------------------------

    @property
    def follow(self) -> bool:
        """Keep the newest event in view (off once the user scrolls away from the end)."""
        return self._follow

    @follow.setter
    def follow(self, on: bool) -> None:
        if on != self._follow:
            self._follow = on
            self.new_since_pause = 0

    def indicator(self) -> str:
        """`"3 new lines"` while paused with news, else `""`."""
        n = self.new_since_pause
        if self._follow or n == 0:
            return ""
        return f"{n} new line{'s' if n != 1 else ''}"

    # -- refreshing --------------------------------------------------------------------

    def refresh(self) -> int:
        """Take in the appended events; return how many of them match the filter.

        If the file was truncated or replaced, everything is rebuilt (`generation` moves
        on, the app should reset its scroll) and the return value is every matching event.
        """
        before = len(self.index)
        added = self.index.refresh()
        if self.index.generation != self._generation:
            self._generation = self.index.generation
            self._actor, self._label, self._type = array("I"), array("I"), array("I")
            self._seen_actors, self._seen_kinds = set(), set()
            self._matching = array("I")
            matched = self._ingest(0, len(self.index))
            self.new_since_pause = 0  # a new story, not news
            return matched
        if not added:
            return 0
        return self._ingest(before, len(self.index))

    @property
    def generation(self) -> int:
        return self._generation

    def _ingest(self, start: int, stop: int) -> int:
        matched_before = len(self._matching)
        for first in range(start, stop, BATCH):
            self._classify(first, self.index.raw_lines(first, min(stop, first + BATCH)))
        new = len(self._matching) - matched_before
        if not self._follow:
            self.new_since_pause += new
        return new

    def _classify(self, first: int, raws: list[bytes]) -> None:
        codes, fast = self._codes, _FAST.match
        actors: list[int] = []
        labels: list[int] = []
        types: list[int] = []
        for raw in raws:
            m = fast(raw)
            if m is not None:
                actor, action, typ, kind = m.groups()
                label = kind if typ == b"lifecycle" and kind else action or typ
                if typ == b"lifecycle" and (about := _MEMBER.search(raw, m.end())):
                    actor = about.group(1)
                actors.append(codes.of_bytes(actor))
                labels.append(codes.of_bytes(label))
                types.append(codes.of_bytes(typ))
            elif not raw.strip():
                actors.append(self._blank)
                labels.append(self._blank)
                types.append(self._blank)
            else:
                a, k, t = _facets(parse_record(raw)[0])
                actors.append(codes.of(a))
                labels.append(codes.of(k))
                types.append(codes.of(t))
        self._actor.extend(actors)
        self._label.extend(labels)
        self._type.extend(types)
        self._seen_actors.update(actors)
        self._seen_kinds.update(labels)
        self._seen_kinds.update(types)
        self._want_codes()  # names first seen in this batch may be wanted
        self._matching.extend(self._scan(first, first + len(raws)))

    # -- filtering ---------------------------------------------------------------------

    @property
    def filter(self) -> EventFilter:
        return self._filter

    @filter.setter
    def filter(self, flt: EventFilter) -> None:
        """Rebuild the matching list from the facet arrays (no file read, no parse)."""
        if flt == self._filter:
            return
        self._filter = flt
        self._want_codes()
        self._matching = array("I", self._scan(0, len(self._actor)))
        self.new_since_pause = 0

    def _want_codes(self) -> None:
        by_name = self._codes.by_name
        self._want_actors = {by_name[a] for a in self._filter.actors if a in by_name}
        self._want_kinds = {by_name[k] for k in self._filter.kinds if k in by_name}

    def _scan(self, start: int, stop: int) -> list[int]:
        """Line numbers in `start..stop-1` that pass the filter."""
        flt, want_a, want_k = self._filter, self._want_actors, self._want_kinds
        actor, label, typ = self._actor[start:stop], self._label[start:stop], self._type[start:stop]
        if flt.actors and flt.kinds:
            return [
                i
                for i, a, k, t in zip(range(start, stop), actor, label, typ, strict=True)
                if a in want_a and (k in want_k or t in want_k)
            ]
        if flt.actors:
            return [i for i, a in zip(range(start, stop), actor, strict=True) if a in want_a]
        if flt.kinds:
            return [
                i
                for i, k, t in zip(range(start, stop), label, typ, strict=True)
                if k in want_k or t in want_k
            ]
        blank = self._blank
        return [i for i, t in zip(range(start, stop), typ, strict=True) if t != blank]

    def actors(self) -> list[str]:
        """Every actor seen, sorted: the choices of an actor filter."""
        return sorted(
            {self._codes.names[c] for c in self._seen_actors} - {"", _BLANK}, key=_natural
        )

    def kinds(self) -> list[str]:
        """Every kind, action and type seen, sorted: the choices of a kind filter."""
        return sorted({self._codes.names[c] for c in self._seen_kinds} - {"", _BLANK}, key=_natural)

    # -- rows --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._matching)

    def line_no(self, row: int) -> int:
        """The file line (0-based) of matching row `row`."""
        return self._matching[row]

    def record(self, row: int) -> dict[str, Any] | None:
        return self.index.record(self._matching[row])

    def text(self, row: int) -> str:
        """Matching row `row` as one formatted line."""
        line = self._matching[row]
        return format_event(self.index.record(line), line, self.index.error(line))

    def texts(self, start: int, stop: int) -> list[str]:
        """Formatted rows `start..stop-1` (clamped): what a viewport of that size shows."""
        return [self.text(r) for r in range(max(0, start), min(stop, len(self._matching)))]

    def close(self) -> None:
        """Release the log's file descriptor (the view reopens it when needed)."""
        self.index.close()

    def tail(self, height: int) -> range:
        """The rows a viewport of `height` shows while following: the last ones."""
        n = len(self._matching)
        return range(max(0, n - height), n)


_LIFECYCLE_FIELDS: dict[str, tuple[str, ...]] = {
    "member-spawn": ("attempt",),
    "member-exit": ("cause", "code", "turns"),
    "member-reset": ("cause", "resets", "released"),
    "member-continue": ("after_s",),
    "phase-start": ("phase",),
    "phase-end": ("phase", "cause"),
    "run-start": ("members", "model", "layers", "sandbox"),
    "run-end": ("outcome",),
    "stop-clean": ("reason", "grace_s"),
    "stop-hard": ("targets",),
    "pause": ("targets",),
    "resume": ("targets",),
}
"""Lifecycle kind -> the fields its line shows, in order; other kinds show all scalars."""
_STRUCTURE = frozenset({"ts", "actor", "type", "kind", "member", "id", "action", "requestId"})
_TRAILING = ("detail", "diagnosis")
TEXT_CHARS = 120
"""Characters of free text (receipt, detail, parameters) kept on an event line."""


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return one_line(str(value), TEXT_CHARS)


def _clock(ts: Any) -> str:
    """`2026-01-02T12:03:04.123Z` -> `12:03:04` (the UTC time the writer stamped)."""
    text = str(ts or "")
    return text[11:19] if len(text) >= 19 and text[10] == "T" else (text[:8] or "--:--:--")


def _pairs(record: dict[str, Any], keys: Iterable[str]) -> list[str]:
    return [
        f"{k} {_value(record[k])}" for k in keys if record.get(k) is not None and record[k] != ""
    ]


def _lifecycle(record: dict[str, Any]) -> list[str]:
    kind = str(record.get("kind", "lifecycle"))
    parts = [kind]
    if record.get("member"):
        parts.append(str(record["member"]))
    keys = _LIFECYCLE_FIELDS.get(kind)
    if keys is None:
        keys = tuple(
            k
            for k, v in record.items()
            if k not in _STRUCTURE and k not in _TRAILING and not isinstance(v, dict)
        )
    parts += _pairs(record, keys)
    parts += [_value(record[k]) for k in _TRAILING if record.get(k)]
    return parts


def _outcome(record: dict[str, Any]) -> list[str]:
    """`finding ok F3 recorded ...`: the receipt without repeating its own `ok F3`."""
    ok = bool(record.get("ok"))
    mark = "ok" if ok else str(record.get("outcome") or "refused")
    entry = str(record.get("entry") or "")
    words = one_line(str(record.get("text", ""))).split(" ")
    for lead in ("ok", "ok:", "refused", "refused:", entry, f"{entry}:"):
        if lead and words and words[0] == lead:
            words.pop(0)
    parts = [str(record.get("action", "?")), mark]
    if entry:
        parts.append(entry)
    rest = one_line(" ".join(words), TEXT_CHARS)
    return [*parts, rest] if rest else parts


def _intent(record: dict[str, Any]) -> list[str]:
    params = record.get("params")
    shown = (
        [f"{k}={_value(v)}" for k, v in params.items() if not isinstance(v, dict)]
        if isinstance(params, dict)
        else []
    )
    return [str(record.get("action", "?")), "intent", one_line(" ".join(shown), TEXT_CHARS)]


@dataclass(frozen=True)
class EventParts:
    """One event split the way a log draws it in columns."""

    ident: str
    """`E12`, or `L40` (the file line) when the line has no id or is corrupt."""
    ts: str
    """The UTC timestamp as written (`2026-01-02T12:03:04.123Z`), or `""`."""
    actor: str
    """Who wrote it (`parent` for lifecycle events)."""
    who: str
    """Who it is about: the member of a lifecycle event, else the actor."""
    label: str
    """The lifecycle kind, tool action or type (what a kind filter matches)."""
    words: tuple[str, ...]
    level: str
    """info, good, warn or error: how loudly a log paints the label."""

    @property
    def text(self) -> str:
        return " ".join(w for w in self.words if w)


LEVELS = {
    "run-start": "good",
    "solved": "good",
    "member-reset": "warn",
    "pause": "warn",
    "stop-clean": "warn",
    "stop-extended": "warn",
    "solved-unvalidated": "warn",
    "repair-skipped": "warn",
    "stop-hard": "error",
}
"""Lifecycle kinds painted other than `info`; exits take their level from the cause."""


def _end_level(record: dict[str, Any]) -> str:
    """A run's end is painted by its outcome (`protocol/outcome.py`'s table): finished
    and solved are good, a failure (`failed`, `canary failed`) an error, every other end
    (a stop, interrupted, unvalidated, finished with failures) a warning."""
    outcome = str(record.get("outcome", ""))
    if outcome in ("finished", "solved"):
        return "good"
    return "error" if outcome.endswith("failed") else "warn"


def _level(record: dict[str, Any]) -> str:
    typ = record.get("type")
    if typ == "outcome":
        return "good" if record.get("ok") else "warn"
    if typ == "lifecycle":
        kind = str(record.get("kind", ""))
        if kind == "member-exit":
            cause = record.get("cause")
            return exit_level(cause if isinstance(cause, str) else None)
        if kind == "run-end":
            return _end_level(record)
        return LEVELS.get(kind, "info")
    return "info"


def event_parts(record: dict[str, Any] | None, line: int, error: str = "") -> EventParts:
    """`record` (line `line` of the log, parsed; None when corrupt) in columns."""
    if record is None:
        return EventParts(
            f"L{line + 1}", "", "", "", CORRUPT, (error or "unreadable line",), "error"
        )
    typ = record.get("type")
    if typ == "lifecycle":
        parts = _lifecycle(record)
        if record.get("member"):
            del parts[1]  # the member is the `who` column
    elif typ == "outcome":
        parts = _outcome(record)
    elif typ == "intent":
        parts = _intent(record)
    else:
        parts = [str(typ or record.get("action") or "event")]
        parts += _pairs(record, (k for k in record if k not in _STRUCTURE))
    return EventParts(
        ident=str(record.get("id") or f"L{line + 1}"),
        ts=str(record.get("ts") or ""),
        actor=str(record.get("actor") or "?"),
        who=_who(record) or "?",
        label=parts[0],
        words=tuple(parts[1:]),
        level=_level(record),
    )


def format_event(record: dict[str, Any] | None, line: int, error: str = "") -> str:
    """One event as one line: `E12 12:03:04 member-2 finding ok F3 recorded ...`,
    `E7 12:01:00 parent member-spawn member-3 attempt 1`. A corrupt line shows its
    file line number (`L40`) and why it could not be read."""
    if record is None:
        return f"L{line + 1} !! {error or 'unreadable line'}"
    p = event_parts(record, line)
    about = [p.who] if p.who != p.actor else []
    return " ".join(x for x in (p.ident, _clock(p.ts), p.actor, p.label, *about, *p.words) if x)
