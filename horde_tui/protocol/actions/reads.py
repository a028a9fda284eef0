"""list, findings, facts, claims, resources, concerns, inspect: reads, no lock needed."""

from __future__ import annotations

import json
from collections.abc import Callable

from horde_tui.common.inputs import loads, whole_number
from horde_tui.protocol.actions import collab_reads
from horde_tui.protocol.collab import lookup
from horde_tui.protocol.context import ActionContext, resolve
from horde_tui.protocol.params import (
    ClaimsParams,
    ConcernsParams,
    FactsParams,
    FindingsParams,
    InspectParams,
    ListParams,
    ReadParams,
    ResourcesParams,
)
from horde_tui.store.ledgers import answers, claims, concerns, facts, ideas, resources
from horde_tui.store.ledgers.common import one_line
from horde_tui.store.ledgers.findings import classify, label, render_finding
from horde_tui.store.siblings import sibling_states, tagged
from horde_tui.store.state import LedgerState, normalize_id
from horde_tui.store.store import ActionRefused


def _with_warnings(state: LedgerState, text: str) -> str:
    if state.skipped:
        text += "\nWarnings:\n" + "\n".join(f"- {s}" for s in state.skipped) + "\n"
    return text


def list_ideas(ctx: ActionContext, p: ListParams, state: LedgerState) -> str:
    items = [i for i in state.ideas.values() if p.owner is None or i.owner == p.owner]
    counts = {s: sum(1 for i in state.ideas.values() if i.status == s) for s in ideas.MARK}
    mine = [i.id for i in state.ideas.values() if i.status == "claimed" and i.owner == ctx.actor]
    head = (
        f"{len(state.ideas)} ideas: {counts['open']} open, {counts['claimed']} claimed, "
        f"{counts['done']} done, {counts['ruled-out']} ruled out. "
        f"You ({ctx.actor}) hold: {', '.join(mine) or 'nothing'}.\n"
    )
    cache = state.render_cache("ideas")
    body = "\n".join(cache.get(i, ideas.render_idea) for i in items)  # type: ignore[arg-type]
    closed = [
        (horde, [ideas.render_idea(i) for i in s.ideas.values() if i.status in CLOSED])
        for horde, s in sibling_states(ctx.siblings)
    ]
    return _with_warnings(
        state,
        head
        + (body + "\n" if body else "No ideas yet; add one with `idea`.\n")
        + _sibling_section(ctx, "done and ruled-out ideas", closed),
    )


CLOSED = frozenset({"done", "ruled-out"})
"""The sibling ideas a member sees: settled work, not open or claimed ideas (those stay
within their horde's coverage)."""
SIBLING_HEAD = (
    "\n## Sibling hordes' {what} (read-only, tagged [hN]; ids repeat per horde; reuse "
    "a sibling's resource by its path, not its R#)\n"
)


def _sibling_section(ctx: ActionContext, what: str, groups: list[tuple[str, list[str]]]) -> str:
    """What the swarm's other hordes recorded, each entry tagged with its horde; empty
    outside a swarm."""
    if not ctx.siblings:
        return ""
    lines = [line for horde, entries in groups for line in tagged(horde, entries)]
    return SIBLING_HEAD.format(what=what) + (
        "\n".join(lines) + "\n" if lines else f"_None yet in {', '.join(ctx.siblings)}._\n"
    )


def list_findings(ctx: ActionContext, p: FindingsParams, state: LedgerState) -> str:
    items = [f for f in state.findings.values() if p.concern is None or f.concern == p.concern]
    if not items:
        return _with_warnings(state, "No findings yet.\n")
    if p.detail == "full":
        body = "\n".join(render_finding(state, f) for f in items)
    else:
        body = (
            "\n".join(
                f"- {f.id} [{label(f)}] {one_line(f.claim_line, 160)} ({f.idea or '-'} · "
                f"{f.concern} · {f.by} · r{f.revision} · {classify(state, f)})"
                for f in items
            )
            + "\n\n(`inspect target=F#` or `detail=full` shows bodies and evidence)\n"
        )
    return _with_warnings(state, f"{len(items)} findings:\n" + body)


def _ledger(
    render: Callable[[LedgerState], str], shared: str | None = None
) -> Callable[[ActionContext, ReadParams, LedgerState], str]:
    """A whole-ledger read; `shared` (a ledger kind) also appends the siblings' entries."""

    def read(ctx: ActionContext, p: ReadParams, state: LedgerState) -> str:
        text = render(state)
        if shared is not None:
            groups = [(h, list(s.entry_texts(shared))) for h, s in sibling_states(ctx.siblings)]
            text += _sibling_section(ctx, shared, groups)
        return _with_warnings(state, text)

    return read


list_facts = _ledger(facts.render, "facts")
list_claims = _ledger(claims.render)
list_resources = _ledger(resources.render, "resources")
list_concerns = _ledger(concerns.render)

_ = (FactsParams, ClaimsParams, ResourcesParams, ConcernsParams)

KINDS = {
    "#": "ideas",
    "F": "findings",
    "T": "facts",
    "C": "claims",
    "R": "resources",
    "V": "reviews",
}


def inspect(ctx: ActionContext, p: InspectParams, state: LedgerState) -> str:
    target = p.target.strip()
    if target.lower() == "answer":
        text = answers.render(state, ctx.run)
        return text or f"No answer has been proposed in run {ctx.run}.\n"
    head = target[:1].upper()
    if head == "E" and normalize_id(target, "E"):
        return _event(ctx, normalize_id(target, "E") or target)
    if head == "Q" and normalize_id(target, "Q"):
        return collab_reads.inspect_thread(
            state, state.threads[lookup(state, target, "Q", "target")]
        )
    if head == "A" and normalize_id(target, "A"):
        ident = lookup(state, target, "A", "target")
        return collab_reads.inspect_artifact(state, state.artifacts[ident])
    if head == "I" and normalize_id(target, "I"):
        target = target[1:]  # I# is another spelling of an idea id
    kind = KINDS.get(head) or ("ideas" if whole_number(target) is not None else None)
    if kind is None:
        raise ActionRefused(
            f"refused: cannot inspect {target!r}; give #N, F#, T#, C#, R#, V#, E# or 'answer'"
        )
    ident = resolve(state, target, kind, "target")
    if kind == "findings":
        return render_finding(state, state.findings[ident]) + collab_reads.finding_extras(
            state, ident
        )
    entity = getattr(state, kind)[ident]
    data = {k: v for k, v in vars(entity).items() if k != "version"}
    return json.dumps(data, indent=2, default=lambda o: vars(o), ensure_ascii=False) + "\n"


def _event(ctx: ActionContext, ident: str) -> str:
    path = ctx.store.paths.events(ctx.run)
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                # The substring test is only a fast filter: an intent's params can hold
                # `"id":"E9"` too, so the event's own id decides.
                if f'"id":"{ident}"' not in line:
                    continue
                try:
                    event = loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("id") == ident:
                    return json.dumps(event, indent=2, ensure_ascii=False) + "\n"
    except FileNotFoundError:
        pass
    raise ActionRefused(
        f"refused: {ident} does not exist in run {ctx.run}'s events.jsonl (events are "
        "numbered per run); inspect an E# from this run"
    )
