"""Incremental rendering of the markdown projections (IDEAS.md, BOARD.md, ...).

Every write regenerates the projections it affects. Walking every entry in Python to do
that made a write at 10,000 entries cost fifty times one at 100. Instead each projection
keeps the rendered text of every entry in ledger order, the fold marks what it changes
(`LedgerState.touch`), and a render re-renders only the marked entries before the ledger
module joins the cached pieces (one C-level `str.join`).

The output must stay byte-identical to a full rendering of a fresh fold: concurrent
writers and crash recovery are checked by comparing the files with one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from horde_tui.store.model import Entity

EntryRender = Callable[[Any, Any], str]
"""`(state, entity) -> text` of one entry (the entity's type depends on the ledger)."""


@dataclass(frozen=True)
class EntrySource:
    """Where a projection's entries live and how one is rendered."""

    table: str
    """The `LedgerState` attribute holding the entries: a dict by id, or the posts list."""
    render: EntryRender
    by_run: bool = False
    """Grouped under `## Run <id>` headings (BOARD.md, FINDINGS.md)."""


class Section:
    """Rendered entries of one section (a run, or the whole file), in ledger order."""

    __slots__ = ("index", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.index: dict[str, int] = {}

    def put(self, ident: str, text: str) -> None:
        """Replace the entry's text in place, or append a new entry at the end."""
        at = self.index.get(ident)
        if at is None:
            self.index[ident] = len(self.texts)
            self.texts.append(text)
        else:
            self.texts[at] = text


_NO_ENTRIES: Sequence[str] = ()


class Projector:
    """One projection's rendered entries, with the section each id sits in."""

    def __init__(self, source: EntrySource) -> None:
        self.source = source
        self.sections: dict[str, Section] = {}
        self.section_of: dict[str, str] = {}

    @property
    def count(self) -> int:
        return len(self.section_of)

    def update(self, state: Any, changed: Iterable[Entity]) -> bool:
        """Re-render `changed` entries (new ones in creation order, which is ledger order).

        False when an entry cannot be updated in place: an id re-added under another run
        moves to that run's section at its old ledger position, which only a rebuild gets
        right (only a hand-edited ledger re-adds an id).
        """
        render, by_run = self.source.render, self.source.by_run
        for entity in changed:
            key = entity.run if by_run else ""
            known = self.section_of.get(entity.id)
            if known is not None and known != key:
                return False
            section = self.sections.get(key)
            if section is None:
                section = self.sections[key] = Section()
            section.put(entity.id, render(state, entity))
            self.section_of[entity.id] = key
        return True

    def entries(self) -> Sequence[str]:
        """Every entry of an ungrouped projection, in ledger order."""
        section = self.sections.get("")
        return section.texts if section is not None else _NO_ENTRIES

    def grouped(self, runs: Mapping[str, object]) -> list[tuple[str, Sequence[str]]]:
        """Entries under every run in `runs` order (empty runs included), then under runs
        with no `run.start` in order of their first entry, as the full rendering does."""
        sections = self.sections
        out: list[tuple[str, Sequence[str]]] = [
            (r, sections[r].texts if r in sections else _NO_ENTRIES) for r in runs
        ]
        out += [(r, s.texts) for r, s in sections.items() if r not in runs]
        return out


class Projections:
    """What changed since each projection was last rendered, and the projectors.

    A change is recorded per entry (`touch`) by the fold, in this process and for records
    other writers appended, so a projection is right whoever wrote the records.
    """

    def __init__(self, sources: Mapping[str, EntrySource]) -> None:
        self.sources = sources
        self._dirty: dict[str, dict[str, Entity]] = {}
        """Kind -> changed entries by id. A dict, not a set: new ids keep creation order."""
        self._watchers: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._knock_on: set[str] = set()
        self._projectors: dict[str, Projector] = {}

    def touch(self, state: Any, kind: str, entity: Entity) -> None:
        """Mark `entity` of projection `kind` stale, and every entry watching it."""
        self._dirty.setdefault(kind, {})[entity.id] = entity
        for dep_kind, dep_id in self._watchers.get((kind, entity.id), ()):
            dep = getattr(state, self.sources[dep_kind].table).get(dep_id)
            if dep is not None:
                self._dirty.setdefault(dep_kind, {})[dep_id] = dep
                self._knock_on.add(dep_kind)

    def watch(self, kind: str, ident: str, dep_kind: str, dep_id: str) -> None:
        """Re-render entry `dep_id` of `dep_kind` whenever entry `ident` of `kind` changes
        or is created (the id may not exist yet)."""
        self._watchers.setdefault((kind, ident), []).append((dep_kind, dep_id))

    def take_knock_on(self) -> set[str]:
        """Projections changed through a watch since the last call."""
        kinds, self._knock_on = self._knock_on, set()
        return kinds

    def current(self, state: Any, kind: str) -> Projector:
        """The projector of `kind`, brought up to date with what the fold changed.

        Rebuilt from the whole table the first time, when an update cannot be done in
        place, or when the table holds entries the fold never marked (a cheap guard: a
        fold function that forgot `touch` on create would otherwise lose the entry).
        """
        source = self.sources[kind]
        changed = self._dirty.pop(kind, None)
        table = getattr(state, source.table)
        proj = self._projectors.get(kind)
        if (
            proj is not None
            and proj.update(state, changed.values() if changed else ())
            and proj.count == len(table)
        ):
            return proj
        proj = self._projectors[kind] = Projector(source)
        proj.update(state, table.values() if isinstance(table, dict) else table)
        return proj
