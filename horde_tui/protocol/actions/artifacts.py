"""artifact: publish a file under the run's `artifacts/`, revision by revision.

Every publish with new bytes is revision n+1, recorded with its sha256 and kept as a
content-addressed copy `runs/<run>/revisions/<sha256>`, so a review pinned to revision n
can always be re-checked against exactly those bytes. Criteria, kind and dependency pins
belong to a revision: changing them needs changed bytes (and so a fresh review).
Republishing a revision other artifacts pin needs `text` naming the change, and hands
each dependent's owner a repin request; a pending answer that pinned it is withdrawn.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from horde_tui.protocol.actions.solved import withdrawals
from horde_tui.protocol.artifact_paths import ArtifactSource, artifact_source
from horde_tui.protocol.collab import lookup
from horde_tui.protocol.collab_params import ArtifactParams
from horde_tui.protocol.context import ActionContext
from horde_tui.store.acceptance import NEED
from horde_tui.store.ledgers.artifacts import dependents, is_document_name, name_key, reaches
from horde_tui.store.model import DOCUMENT_SUFFIXES, Artifact
from horde_tui.store.paths import atomic_write_bytes
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision

_PIN = re.compile(r"^\s*([Aa]?[0-9]+)\s*(?:@\s*[rR]?([0-9]{1,18}))?\s*$")


def artifact(ctx: ActionContext, p: ArtifactParams, state: LedgerState) -> Decision:
    src = artifact_source(ctx.store.paths, ctx.run, p.path)
    data = src.source.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    existing = state.artifact_by_name.get(name_key(ctx.run, src.name))
    if existing is None:
        return _first(ctx, p, state, src, data, sha)
    return _republish(ctx, p, state, state.artifacts[existing], src, data, sha)


def _kind(p: ArtifactParams, name: str, inherited: str | None) -> str:
    kind = p.artifactKind or inherited or ("document" if is_document_name(name) else "runnable")
    if kind == "document" and not is_document_name(name):
        raise ActionRefused(
            f"refused: {name} cannot be a document artifact (artifact rule: documents are "
            f"{', '.join(DOCUMENT_SUFFIXES)} files); publish it as artifactKind=runnable"
        )
    return kind


def _pins(state: LedgerState, raw: list[str], self_id: str | None) -> dict[str, int]:
    """`["A2@3", "A4"]` -> {"A2": 3, "A4": <current>}; refuse unknown ids and revisions."""
    pins: dict[str, int] = {}
    for item in raw:
        m = _PIN.match(item)
        if not m:
            raise ActionRefused(
                f"refused: dependsOn entry {item!r} is not A#@revision (artifact rule); give "
                "pins such as A2@3"
            )
        dep = state.artifacts[lookup(state, m.group(1), "A", "dependsOn")]
        revision = int(m.group(2)) if m.group(2) else dep.revision
        if dep.id == self_id:
            raise ActionRefused(
                f"refused: {dep.id} cannot depend on itself (artifact rule: no dependsOn "
                "cycle); drop it from dependsOn"
            )
        if not 1 <= revision <= dep.revision:
            raise ActionRefused(
                f"refused: dependsOn {dep.id}@{revision}, a revision that does not exist "
                f"(artifact rule; {dep.id} has r1..r{dep.revision}); pin {dep.id}@{dep.revision}"
            )
        pins[dep.id] = revision
    return pins


def _store_bytes(ctx: ActionContext, src: ArtifactSource, data: bytes, sha: str) -> None:
    """The content-addressed copy, and the published copy when the file came from the
    working directory. Written after every check passed, before the ledger records."""
    revisions = ctx.store.paths.revisions(ctx.run)
    revisions.mkdir(parents=True, exist_ok=True)
    if not (revisions / sha).exists():
        atomic_write_bytes(revisions / sha, data)
    if not src.in_place:
        target = ctx.store.paths.artifacts(ctx.run) / src.name
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)


def _record(art_id: str, src: ArtifactSource, data: bytes, sha: str, **rev: Any) -> dict[str, Any]:
    return {
        "op": "artifact.publish",
        "id": art_id,
        "name": src.name,
        "sha256": sha,
        "size": len(data),
        **rev,
    }


def _first(
    ctx: ActionContext,
    p: ArtifactParams,
    state: LedgerState,
    src: ArtifactSource,
    data: bytes,
    sha: str,
) -> Decision:
    criteria = (p.criteria or "").strip()
    if not criteria:
        raise ActionRefused(
            f"refused: a new artifact needs `criteria` (artifact rule: reviews check against "
            f"them); say what {src.name} must do or establish"
        )
    kind = _kind(p, src.name, None)
    pins = _pins(state, p.dependsOn or [], None)
    art_id = state.next_id("artifacts")
    _store_bytes(ctx, src, data, sha)
    record = _record(art_id, src, data, sha, kind=kind, criteria=criteria, dependsOn=pins)
    if p.text:
        record["note"] = p.text
    pinned = f" · pins {', '.join(f'{k}@{v}' for k, v in pins.items())}" if pins else ""
    return Decision(
        True,
        f"ok {art_id} r1 published as artifacts/{src.name} ({kind}, sha256 {sha[:12]}){pinned}; "
        f"it needs a full-scope {NEED[kind]} review from another member",
        art_id,
        [record],
        outcome="created",
    )


def _republish(
    ctx: ActionContext,
    p: ArtifactParams,
    state: LedgerState,
    art: Artifact,
    src: ArtifactSource,
    data: bytes,
    sha: str,
) -> Decision:
    if art.by != ctx.actor:
        raise ActionRefused(
            f"refused: {art.id} artifacts/{src.name} belongs to {art.by} (artifact rule: only "
            f"the owner republishes); publish yours under another path, or message {art.by}"
        )
    cur = art.current
    kind = _kind(p, src.name, cur.kind)
    criteria = (p.criteria or "").strip() or cur.criteria
    pins = _pins(state, p.dependsOn, art.id) if p.dependsOn is not None else dict(cur.depends_on)
    if sha == cur.sha256:
        return _same_bytes(art, kind, criteria, pins)
    for dep in pins:
        if reaches(state, dep, art.id):
            raise ActionRefused(
                f"refused: {art.id} dependsOn {dep}, which already depends on {art.id} "
                "(artifact rule: no dependsOn cycle); drop that pin"
            )
    pinned_by = dependents(state, art.id, cur.n)
    if pinned_by and not p.text.strip():
        raise ActionRefused(
            f"refused: {', '.join(d.id for d in pinned_by)} pin {art.id}@{cur.n} (artifact "
            "rule: republishing a pinned revision needs `text` naming the change); say what "
            "changed in `text`"
        )
    n = cur.n + 1
    record = _record(art.id, src, data, sha, kind=kind, criteria=criteria, dependsOn=pins)
    if p.text:
        record["note"] = p.text
    records = [record, *_repins(ctx, state, art, n, p.text, pinned_by)]
    records += _repinned(state, art, pins, n)
    records += withdrawals(state, art.id, f"was republished as r{n}")
    _store_bytes(ctx, src, data, sha)
    notes = [f"ok {art.id} r{n} published (sha256 {sha[:12]}); reviews of r{cur.n} stay pinned"]
    notes += [
        f"{r['id']} repin request to {r['to']} ({r['target']})"
        for r in records[1:]
        if r["op"] == "thread.open"
    ]
    notes += [f"{r['id']} resolved" for r in records if r["op"] == "thread.note"]
    notes += [
        f"the pending answer of run {r['run']} that pinned {art.id}@r{cur.n} is withdrawn"
        for r in records
        if r["op"] == "solved.withdraw"
    ]
    return Decision(True, " · ".join(notes), art.id, records, outcome="republished")


def _same_bytes(art: Artifact, kind: str, criteria: str, pins: dict[str, int]) -> Decision:
    """Unchanged bytes: nothing to publish, and no metadata change without new bytes."""
    cur = art.current
    changed = [
        name
        for name, old, new in (
            ("kind", cur.kind, kind),
            ("criteria", cur.criteria, criteria),
            ("dependsOn", cur.depends_on, pins),
        )
        if old != new
    ]
    if not changed:
        return Decision(True, f"ok {art.id} unchanged at r{cur.n}", art.id, outcome="unchanged")
    raise ActionRefused(
        f"refused: {' and '.join(changed)} of {art.id} changed without changed bytes "
        "(artifact rule: criteria or dependency changes need changed bytes and a fresh "
        "review); change the file to match, then publish again"
    )


def _repins(
    ctx: ActionContext,
    state: LedgerState,
    art: Artifact,
    n: int,
    text: str,
    pinned_by: list[Artifact],
) -> list[dict[str, Any]]:
    """One review-request per dependent whose owner is someone else: re-check and re-pin."""
    base = int(state.next_id("threads")[1:])
    out: list[dict[str, Any]] = []
    for dep in (d for d in pinned_by if d.by != ctx.actor):
        out.append(
            {
                "op": "thread.open",
                "id": f"Q{base + len(out)}",
                "to": dep.by,
                "kind": "review-request",
                "target": dep.id,
                "targetRevision": dep.revision,
                "repin": f"{art.id}@{n}",
                "text": f"{art.id} moved to r{n}: {text.strip()[:300]}; re-check {dep.id} "
                f"against it and republish {dep.id} with dependsOn {art.id}@{n}",
            }
        )
    return out


def _repinned(
    state: LedgerState, art: Artifact, pins: dict[str, int], n: int
) -> list[dict[str, Any]]:
    """Repin requests to this artifact's owner that the new pins satisfy resolve."""
    out = []
    for q in state.threads_by_target.get(art.id, []):
        t = state.threads[q]
        if t.closed or not t.repin or t.to != art.by:
            continue
        dep, _, rev = t.repin.partition("@")
        if pins.get(dep) == int(rev):
            out.append(
                {
                    "op": "thread.note",
                    "id": t.id,
                    "what": "resolve",
                    "text": f"{art.id} r{n} pins {t.repin}",
                    "auto": f"{art.id} r{n}",
                }
            )
    return out
