"""The supervisor's periodic checks: deadline, budget, stalls, solved, stop (controls
are answered through `controls.answer_pending`, as a swarm's supervisor answers them).

Each check is a small function of the `Supervisor`, run every tick of its loop, so the
lifecycle rules read one at a time.
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING

from horde_tui.protocol.targets import parse_targets
from horde_tui.store.activity import (
    activity,
    duration,
    held_back,
    last_write,
    progress_since,
    read_backoff,
)
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.findings import independent_reporters

if TYPE_CHECKING:
    from horde_tui.store.members import MemberState
    from horde_tui.store.model import Proposal
    from horde_tui.supervisor.context import RunContext

ACTIVE_WINDOW_S = 15.0
"""A member that produced output this recently gets one clean-stop extension."""


def status_text(sup: RunContext, target: str = "all") -> str:
    """The run's line, then one line per member the target selects (`status member-2`):
    the answer to a `status` control."""
    now = time.time()
    head = f"run {sup.run_id}: {sup.outcome or ('stopping' if sup.stop else 'running')}"
    if sup.stop is not None:
        left = max(0.0, sup.stop.deadline - now)
        head += f", clean stop ({sup.stop.reason}): {left:.0f}s of grace left"
    canary = "pending" if sup.canary == "not run" else sup.canary[:80]
    lines = [f"{head}, canary {canary}"]
    if sup.reattach:  # carried on in the background: the app opens again from its folder
        lines.append(f"re-attach: {sup.reattach}")
    names = sup.select(parse_targets(target))
    if not names:
        lines.append(f"  no member matched {target!r}")
    for m in (sup.members[n] for n in names):
        elapsed = f"{now - m.started:.0f}s" if m.started else "-"
        tool = f" {m.current_tool}" if m.current_tool else ""
        if sup.confirms.waits(m.name):
            tool += " (awaiting approval: horde-tui approve/refuse)"
        cost = "unknown" if m.cost_usd is None else f"${m.cost_usd:.4f}"
        observe(sup, m)
        act = activity(m, now)
        doing = f" · {act.text(now)}" if act else ""
        if act and m.last_write:  # what the stall rule counts from
            doing += f" · last ledger write {duration(now - m.last_write)} ago"
        lines.append(
            f"  {m.name:<10} {m.role:<8} {m.status:<8}{tool} elapsed {elapsed} turns {m.turns} "
            f"tokens {m.prompt_tokens + m.completion_tokens} cost {cost} resets {m.resets}{doing}"
        )
    return "\n".join(lines)


def check_deadline(sup: RunContext) -> None:
    minutes = sup.settings.supervisor.max_minutes
    since = sup.deadline_from or sup.started  # a one-member continuation: its own start
    if minutes and sup.stop is None and time.time() - since >= minutes * 60:
        sup.outcome = "stopped at deadline"
        sup.diagnosis = f"the {minutes:g}-minute deadline (HORDE_MAX_MINUTES) was reached"
        sup.stop_clean(reason="stopped at deadline")


def check_budget(sup: RunContext) -> None:
    if sup.stop is None and (sup.run_dir / ".budget-reached").exists():
        sup.outcome = "stopped at budget"
        sup.diagnosis = f"the cost budget of ${sup.settings.gateway.max_cost_usd} was spent"
        sup.stop_clean(reason="stopped at budget")


def check_stalls(sup: RunContext) -> None:
    """Reset a member that wrote nothing to the ledger for HORDE_STALL_MS (0 disables),
    the reference's rule: model calls and commands are not progress, so a member busy
    with them but never writing is reset too, as `no-ledger-progress`. The clock counts
    from its last ledger write or its session's first model answer, whichever is later
    (`store.activity.progress_since`), and stops while the outside world holds the
    member back (`held_back`: a provider's rate limit, a person's approval)."""
    limit_s = sup.settings.supervisor.stall_ms / 1000
    if not limit_s or sup.stop is not None:
        return
    now = time.time()
    for name in sup.running():
        state = sup.members[name]
        if state.status == "paused" or state.first_output is None:
            continue
        observe(sup, state)
        act = activity(state, now)
        handle = sup.procs[name]
        since = progress_since(state, last_sign(sup, name))
        quiet = handle.stall_clock.quiet_s(since, held_back(state, act), now)
        if quiet < limit_s:
            continue
        handle.stalled = (
            f"no ledger write for {duration(quiet)} (the stall time is {duration(limit_s)}); "
            "model calls and commands are not progress: file what you found with the "
            "horde tool as you go"
        )
        handle.stop_requested = True
        handle.signal_group(signal.SIGCONT)  # a member frozen from outside cannot take SIGTERM
        handle.signal(signal.SIGTERM)


def observe(sup: RunContext, state: MemberState) -> None:
    """What the member's status lines cannot say: the gateway's back-off of its call, the
    command it waits to have approved (`store.activity` reads both) and its last ledger
    write."""
    state.backoff = read_backoff(sup.run_dir, state.name) if state.call_since else None
    state.last_write = last_write(sup.run_dir, state.name) or None
    waiting = [w.command for w in sup.confirms.waiting.values() if w.member == state.name]
    state.approval = waiting[0] if waiting and state.current_tool else ""


def last_sign(sup: RunContext, name: str) -> float:
    """The member's last ledger write (its heartbeat file) or the last command a person
    decided on for it, whichever is later: signs of life its status lines do not carry."""
    return max(last_write(sup.run_dir, name), sup.confirms.decided_at.get(name, 0.0))


def record_answer(sup: RunContext) -> Proposal | None:
    """The run's current proposal, after emitting its `solved-*` event once per round and
    status (also after repair, which can validate an answer no poll saw)."""
    assert sup.parent is not None
    sup.parent.refresh()
    prop = answers.current(sup.parent.state, sup.run_id)
    if prop is None:
        return None
    pending = f"{prop.round}:pending"
    if pending not in sup.solved_seen:
        # Every round is announced as pending first, even when a loaded supervisor first
        # polls after its validation (or a reopened round's next change) landed too.
        sup.solved_seen[pending] = time.time()
        if prop.reopened_from is None:
            sup.emit("solved-proposed", prop.by, round=prop.round, cites=prop.cites)
        else:
            sup.emit(
                "solved-reopened",
                prop.by,
                round=prop.round,
                cites=prop.cites,
                reopened_from=prop.reopened_from,
            )
    key = f"{prop.round}:{prop.status}"
    if key not in sup.solved_seen:
        sup.solved_seen[key] = time.time()
        kind = {
            "pending": "solved-proposed",
            "contested": "solved-contested",
            "validated": "solved-validated",
            "withdrawn": "solved-withdrawn",
        }[prop.status]
        sup.emit(kind, prop.by, round=prop.round, cites=prop.cites)
    return prop


def poll_solved(sup: RunContext) -> None:
    """The two-phase solved rules of the reference, from the folded ledger."""
    prop = record_answer(sup)
    if prop is None:
        return
    key = f"{prop.round}:{prop.status}"
    if sup.stop is not None or sup.request.until_stop:
        return
    if prop.status == "validated" and _wind_down_ready(sup):
        sup.outcome, sup.diagnosis = (
            "solved",
            f"answer by {prop.by} validated by {prop.validated_by}",
        )
        sup.stop_clean(reason="solved")
    elif prop.status == "pending":
        waited = time.time() - sup.solved_seen[key]
        others = [n for n in sup.running() if n != prop.by]
        if not others or waited * 1000 >= sup.settings.supervisor.solved_confirm_ms:
            sup.outcome = "solved-unvalidated"
            sup.diagnosis = f"answer by {prop.by} was not validated by another member"
            sup.emit("solved-unvalidated", prop.by, round=prop.round)
            sup.stop_clean(reason="solved-unvalidated")


def _wind_down_ready(sup: RunContext) -> bool:
    """Every idea this run created or its members hold is closed, and findings are checked."""
    state = sup.parent.state  # type: ignore[union-attr]
    open_ideas = [
        i
        for i in state.ideas.values()
        if not i.closed and (i.run == sup.run_id or i.status == "claimed")
    ]
    if open_ideas:
        return False
    if sup.settings.supervisor.allow_unverified or len(sup.running()) <= 1:
        return True
    unverified = [
        f
        for f in state.findings.values()
        if f.run == sup.run_id
        and not f.superseded_by
        and len(independent_reporters(f)) < 2
        and not any(
            state.reviews[r].revision == f.revision for r in state.reviews_by_target.get(f.id, [])
        )
    ]
    return not unverified


async def check_stop_deadline(sup: RunContext) -> None:
    """At the clean-stop deadline: one extension for active members, one solved window,
    then a hard stop of whoever is left."""
    stop = sup.stop
    if stop is None or time.time() < stop.deadline:
        return
    now = time.time()
    running = sup.running()
    active = [
        n
        for n in running
        if n not in stop.active_extended
        and (sup.members[n].last_output or 0) >= now - ACTIVE_WINDOW_S
    ]
    if active:
        stop.active_extended.update(active)
        grace_s = sup.settings.supervisor.active_grace_ms / 1000
        stop.deadline = now + grace_s
        sup.emit("stop-extended", reason="active output", members=active, grace_s=grace_s)
        return
    prop = answers.current(sup.parent.state, sup.run_id) if sup.parent else None  # type: ignore[union-attr]
    if prop is not None and prop.status == "pending" and not stop.solved_extended:
        stop.solved_extended = True
        grace_s = sup.settings.supervisor.solved_stop_ms / 1000
        stop.deadline = now + grace_s
        sup.emit("stop-extended", reason="solve awaiting validation", grace_s=grace_s)
        return
    if running:
        sup.emit("stop-hard", targets=running, reason="clean-stop deadline")
        for n in running:
            await sup.procs[n].stop_hard()
