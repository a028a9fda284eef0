"""resource: claim a shared dataset, harness, corpus or sandbox by name."""

from __future__ import annotations

from horde_tui.protocol.context import ActionContext
from horde_tui.protocol.params import ResourceParams
from horde_tui.protocol.rules import check_cleanup, inside_workdir
from horde_tui.store.state import LedgerState
from horde_tui.store.store import ActionRefused, Decision
from horde_tui.store.textmatch import TextKey


def resource(ctx: ActionContext, p: ResourceParams, state: LedgerState) -> Decision:
    name = p.name.strip()
    if p.path:
        inside_workdir(ctx.workdir, p.path)
    protect = [ctx.store.paths.root, ctx.store.paths.run_dir(ctx.run)]
    existing_id = state.resource_by_name.get(name.lower())
    if existing_id is None and p.path:
        # Same path under another name is the same resource: identifiers first.
        for rid in state.resource_index.candidates(TextKey.of(p.path)):
            if state.resources[rid].path and state.resources[rid].path == p.path:
                existing_id = rid
                break
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
        records = []
        if ctx.actor != res.by and ctx.actor not in res.reusers:
            records.append({"op": "resource.reuse", "id": res.id})
        where = f" at `{res.path}`" if res.path else ""
        return Decision(
            True,
            f"{res.id} `{res.name}` is owned by {res.by} (run {res.run}); recorded you as a "
            f"reuser; use it{where}, do not rebuild it",
            res.id,
            records,
            outcome="reused",
        )
    check_cleanup(p.cleanup, protect)
    new_id = state.next_id("resources")
    record = {"op": "resource.add", "id": new_id, "name": name, "text": p.text}
    if p.cleanup:
        record["cleanup"] = p.cleanup
    if p.path:
        record["path"] = p.path
    return Decision(True, f"ok {new_id} `{name}` is yours", new_id, [record], outcome="created")
