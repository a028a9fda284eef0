"""RESOURCES.md: shared datasets, harnesses, corpora and sandboxes, with owner and reusers."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import one_line
from horde_tui.store.model import Resource
from horde_tui.store.tables import Fold, LedgerTables
from horde_tui.store.textmatch import TextKey, tokens

HEADER = (
    "# Resources\n\n"
    "Shared datasets, harnesses, corpora and sandboxes. The first claim of a name owns it;\n"
    "later claims are recorded as reusers. Cleanup commands run at finalize only.\n"
)


_EDGE = "`'\"()[]{}<>,;:!?"
_NOT_PATHS = frozenset("and/or i/o n/a input/output read/write on/off yes/no true/false".split())


def norm_path(raw: str) -> str:
    """`./data/corpus/` -> `data/corpus`: one spelling per path, for matching."""
    path = raw.strip().strip(_EDGE).lower()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") or path


def _paths(path: str, text: str) -> frozenset[str]:
    """The resource's path and the slash-words of its description, normalised. A resource
    is usually a directory (`data/corpus/`), which has no file extension for textmatch
    to see as a path, so its place would otherwise be no identifier at all."""
    words = [path] if path.strip() else []
    words += [w for w in text.split() if "/" in w.strip(_EDGE) and "://" not in w]
    found = {norm_path(w) for w in words}
    return frozenset(p for p in found if len(p) > 2 and p not in _NOT_PATHS)


def resource_key(name: str, path: str, text: str) -> TextKey:
    """What dedup matches a resource on: textmatch's identifiers (URLs, hosts, files) plus
    its paths, then the wording of its name, path and description."""
    base = TextKey.of(f"{name} {path} {text}")
    ids = base.ids | _paths(path, text)
    if ids == base.ids:
        return base
    plain = base.words - frozenset().union(*(tokens(i) for i in ids))
    return TextKey(ids, base.words, plain)


def _add(state: LedgerTables, rec: dict[str, Any]) -> None:
    res = Resource(
        id=rec["id"],
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        name=rec["name"],
        text=rec.get("text", ""),
        cleanup=rec.get("cleanup", ""),
        path=rec.get("path", ""),
    )
    state.resources[res.id] = res
    state.touch("resources", res)
    state.resource_by_name[res.name.lower()] = res.id
    state.resource_index.add(res.id, resource_key(res.name, res.path, res.text))


def _reuse(state: LedgerTables, rec: dict[str, Any]) -> None:
    res = state.resources[rec["id"]]
    if rec["actor"] not in res.reusers and rec["actor"] != res.by:
        state.touch("resources", res)
        res.reusers.append(rec["actor"])


def _update(state: LedgerTables, rec: dict[str, Any]) -> None:
    res = state.resources[rec["id"]]
    state.touch("resources", res)
    for key in ("text", "cleanup", "path"):
        if key in rec:
            setattr(res, key, rec[key])
    state.resource_index.add(res.id, resource_key(res.name, res.path, res.text))


def _state(state: LedgerTables, rec: dict[str, Any]) -> None:
    """`resource-state`: readiness, lease, ports and health; `building` after another state
    starts a new generation (a rebuild)."""
    res = state.resources[rec["id"]]
    state.touch("resources", res)
    if rec["state"] == "building" and res.state not in ("", "building"):
        res.generation += 1
    elif not res.generation:
        res.generation = 1
    res.state = rec["state"]
    res.lease = rec.get("lease", "")
    res.ports = [int(p) for p in rec.get("ports", [])]
    res.health = rec.get("health", "")


OPS: dict[str, Fold] = {
    "resource.add": _add,
    "resource.reuse": _reuse,
    "resource.update": _update,
    "resource.state": _state,
}


def render_resource(res: Resource) -> str:
    out = f"- {res.id} `{res.name}`: {one_line(res.text)} (owner {res.by}, run {res.run})"
    if res.path:
        out += f"\n    path: `{res.path}`"
    if res.cleanup:
        out += f"\n    cleanup: `{one_line(res.cleanup)}`"
    if res.reusers:
        out += f"\n    reused by: {', '.join(res.reusers)}"
    if res.state:
        out += f"\n    state: {res.state} (generation {res.generation}"
        if res.lease:
            out += f", lease {one_line(res.lease, 80)}"
        if res.ports:
            out += f", ports {', '.join(str(p) for p in res.ports)}"
        out += ")"
        if res.health:
            out += f"\n    health: {one_line(res.health, 200)}"
    return out


def render(state: LedgerTables) -> str:
    lines = state.entry_texts("resources")
    return HEADER + "\n" + ("\n".join(lines) + "\n" if lines else "_No resources yet._\n")
