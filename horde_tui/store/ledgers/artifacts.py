"""Artifacts (A#): files published under `runs/<run>/artifacts/`, revision by revision.

Each `artifact.publish` record is one revision: the sha256 of the bytes (a copy is kept
at `runs/<run>/revisions/<sha256>`), the kind (runnable or document), the acceptance
criteria, and the revisions of other artifacts it depends on (`A#@n` pins). The first
publisher of a name in a run owns it.
"""

from __future__ import annotations

import re
from typing import Any

from horde_tui.store.model import DOCUMENT_SUFFIXES, Artifact, ArtifactRevision
from horde_tui.store.tables import Fold, LedgerTables


def name_key(run: str, name: str) -> str:
    """Artifacts live in their run's folder, so a name is unique per run."""
    return f"{run}/{name}"


def _publish(state: LedgerTables, rec: dict[str, Any]) -> None:
    art = state.artifacts.get(rec["id"])
    if art is None:
        art = Artifact(
            id=rec["id"],
            by=rec["actor"],
            run=rec["run"],
            seq=rec["seq"],
            ts=rec["ts"],
            name=rec["name"],
        )
        state.artifacts[art.id] = art
        state.artifact_by_name[name_key(art.run, art.name)] = art.id
    state.stamp(art)
    art.revisions.append(
        ArtifactRevision(
            n=len(art.revisions) + 1,
            sha256=rec["sha256"],
            kind=rec["kind"],
            criteria=rec.get("criteria", ""),
            depends_on={k: int(v) for k, v in (rec.get("dependsOn") or {}).items()},
            size=int(rec.get("size", 0)),
            by=rec["actor"],
            seq=rec["seq"],
            ts=rec["ts"],
            note=rec.get("note", ""),
        )
    )


OPS: dict[str, Fold] = {"artifact.publish": _publish}


def is_document_name(name: str) -> bool:
    """Document artifacts are prose files; everything else is treated as runnable."""
    return name.lower().endswith(DOCUMENT_SUFFIXES)


def dependents(state: LedgerTables, art_id: str, revision: int | None = None) -> list[Artifact]:
    """Artifacts whose current revision pins `art_id` (at `revision`, when given)."""
    out = []
    for other in state.artifacts.values():
        pinned = other.current.depends_on.get(art_id)
        if pinned is not None and (revision is None or pinned == revision):
            out.append(other)
    return out


def reaches(state: LedgerTables, start: str, goal: str) -> bool:
    """True when `goal` is reachable from `start` along current-revision dependencies."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node in seen or node not in state.artifacts:
            continue
        seen.add(node)
        stack.extend(state.artifacts[node].current.depends_on)
    return False


_CITED = re.compile(r"(?<![\w-])artifacts/([\w\-./]+)")


def unregistered_runnables(state: LedgerTables, text: str) -> list[str]:
    """Runnable files under `artifacts/` cited in `text` that no A# or R# covers."""
    out: list[str] = []
    for m in _CITED.finditer(text):
        name = m.group(1).rstrip("./")
        if not name or is_document_name(name) or f"artifacts/{name}" in out:
            continue
        covered = any(
            a.name == name or a.name.endswith("/" + name) for a in state.artifacts.values()
        )
        covered = covered or any(
            r.path and (f"artifacts/{name}" in r.path or r.path.rstrip("/").endswith(name))
            for r in state.resources.values()
        )
        if not covered:
            out.append(f"artifacts/{name}")
    return out
