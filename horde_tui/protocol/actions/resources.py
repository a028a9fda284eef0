"""resource, resource-state: claim a shared dataset, harness, corpus or sandbox by name,
and publish its readiness (building, ready, broken, retired), lease, ports and health."""

from __future__ import annotations

from horde_tui.common.inputs import whole_number
from horde_tui.protocol.collab_params import ResourceStateParams
from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import ResourceParams
from horde_tui.protocol.rules import check_cleanup, inside_workdir
from horde_tui.store.ledgers.resources import norm_path, resource_key
from horde_tui.store.model import Resource
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision


def _match(state: LedgerState, name: str, path: str, text: str) -> tuple[str | None, str]:
    """The resource this claim names, and how it matched: `name`, `path` (the same path
    however spelled), or, as ideas and facts dedup, a shared identifier with some shared
    wording, or strongly shared wording (the reason says which)."""
    by_name = state.resource_by_name.get(name.lower())
    if by_name is not None:
        return by_name, "name"
    key = resource_key(name, path, text)
    if path:
        for rid in state.resource_index.candidates(key):
            other = state.resources[rid].path
            if other and norm_path(other) == norm_path(path):
                return rid, "path"
    dupes = state.resource_index.duplicates(key)
    if not dupes:
        return None, ""
    shared = sorted(key.ids & state.resource_index.keys[dupes[0]].ids)
    return dupes[0], f"both name `{shared[0]}`" if shared else "near-identical description"


def resource(ctx: ActionContext, p: ResourceParams, state: LedgerState) -> Decision:
    name = p.name.strip()
    if p.path:
        inside_workdir(ctx.workdir, p.path)
    protect = [ctx.store.paths.root, ctx.store.paths.run_dir(ctx.run)]
    existing_id, how = _match(state, name, p.path, p.text)
    if existing_id is not None and how not in ("name", "path"):
        return _duplicate(ctx, state.resources[existing_id], name, how)
    if existing_id is not None:
        res = state.resources[existing_id]
        if res.by == ctx.actor and res.run == ctx.run:
            changes = {
                k: v
                for k, v in (("text", p.text), ("cleanup", p.cleanup), ("path", p.path))
                if v and v != getattr(res, k)
            }
            if not changes:
                return Decision(True, f"ok {res.id} is already yours", res.id, outcome="unchanged")
            if "cleanup" in changes:
                check_cleanup(p.cleanup, protect)
            return Decision(
                True,
                f"ok {res.id} updated ({', '.join(sorted(changes))})",
                res.id,
                [{"op": "resource.update", "id": res.id, **changes}],
                outcome="updated",
            )
        if p.text and p.text != res.text and res.by == ctx.actor:
            raise ActionRefused(
                f"refused: {res.id} `{res.name}` was claimed in run {res.run}; only the owning "
                "run and member may update its description (resources rule); reuse it as is"
            )
        return _reused(ctx, res)
    check_cleanup(p.cleanup, protect)
    new_id = state.next_id("resources")
    record = {"op": "resource.add", "id": new_id, "name": name, "text": p.text}
    if p.cleanup:
        record["cleanup"] = p.cleanup
    if p.path:
        record["path"] = p.path
    return Decision(True, f"ok {new_id} `{name}` is yours", new_id, [record], outcome="created")


def _duplicate(ctx: ActionContext, res: Resource, name: str, how: str) -> Decision:
    """A claim under another name that dedup matched to `res`: reuse it, never rebuild."""
    apart = (
        f"if `{name}` is really another resource, claim it with its own path and a "
        "description that tells them apart"
    )
    if ctx.actor == res.by:
        return Decision(
            True,
            f"ok {res.id} `{res.name}` is already yours and matches `{name}` ({how}); no new "
            f"resource; {apart}",
            res.id,
            outcome="unchanged",
        )
    return _reused(ctx, res, f" and matches `{name}` ({how})", f"; {apart}")


def _reused(ctx: ActionContext, res: Resource, matched: str = "", tail: str = "") -> Decision:
    """Record `ctx.actor` as a reuser of `res` (once) and say where it is."""
    new = ctx.actor != res.by and ctx.actor not in res.reusers
    where = f" at `{res.path}`" if res.path else ""
    return Decision(
        True,
        f"{res.id} `{res.name}` is owned by {res.by} (run {res.run}){matched}; recorded you "
        f"as a reuser; use it{where}, do not rebuild it{tail}",
        res.id,
        [{"op": "resource.reuse", "id": res.id}] if new else [],
        outcome="reused",
    )


def _resource_of(state: LedgerState, p: ResourceStateParams) -> Resource:
    if p.id:
        return state.resources[resolve(state, p.id, "resources")]
    if p.name and p.name.strip().lower() in state.resource_by_name:
        return state.resources[state.resource_by_name[p.name.strip().lower()]]
    if p.name:
        raise ActionRefused(
            f"refused: no resource named {p.name.strip()!r} (resources rule: state is "
            "published for a claimed resource); claim it first with `resource`"
        )
    raise ActionRefused(
        "refused: resource-state needs `id` (R#) or `name` (resources rule); name the resource"
    )


def _ports(state: LedgerState, res: Resource, raw: list[str]) -> list[int]:
    """Valid TCP ports that no other live resource (not retired) has published."""
    ports: list[int] = []
    for item in raw:
        text = str(item).strip()
        port = whole_number(text)
        if port is None or not 1 <= port <= 65535:
            raise ActionRefused(
                f"refused: port {text!r} is not a number from 1 to 65535 (resources rule); "
                "give ports such as 8080"
            )
        ports.append(port)
    for other in state.resources.values():
        clash = set(ports) & set(other.ports)
        if other.id != res.id and other.state != "retired" and clash:
            raise ActionRefused(
                f"refused: port {min(clash)} is held by {other.id} `{other.name}` (owner "
                f"{other.by}) (resources rule: one live resource per port); pick another port "
                f"or reuse {other.id}"
            )
    return ports


def resource_state(ctx: ActionContext, p: ResourceStateParams, state: LedgerState) -> Decision:
    res = _resource_of(state, p)
    if res.by != ctx.actor:
        raise ActionRefused(
            f"refused: {res.id} `{res.name}` is owned by {res.by} (resources rule: only the "
            f"owner publishes its state); message {res.by} if it looks {p.state} to you"
        )
    ports = _ports(state, res, p.ports) if p.ports is not None else list(res.ports)
    if p.state in ("ready", "broken") and not p.evidence.strip():
        raise ActionRefused(
            f"refused: `{p.state}` without health evidence (resources rule: readiness is "
            "shown, not asserted); pass `evidence` (a health check and its output)"
        )
    record = {
        "op": "resource.state",
        "id": res.id,
        "state": p.state,
        "lease": p.lease,
        "ports": ports,
        "health": p.evidence,
    }
    rebuild = p.state == "building" and res.state not in ("", "building")
    generation = res.generation + 1 if rebuild else max(res.generation, 1)
    where = f" · ports {', '.join(map(str, ports))}" if ports else ""
    return Decision(
        True,
        f"ok {res.id} `{res.name}` is {p.state} (generation {generation}){where}",
        res.id,
        [record],
        outcome="state",
    )
