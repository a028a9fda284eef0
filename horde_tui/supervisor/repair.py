"""The repair phase: after discovery ends normally, members whose threads are still open
get short, targeted sessions to answer blockers, review requests and responses.

What a member is owed (`queue`): blockers, challenges and review requests addressed to
it and not yet answered, plus those it sent that were answered and wait for it to
resolve them. Questions, handoffs and decisions are not repair work, except a request
about the pending answer (`target=answer`): repair serves it with the blockers. It counts
as blocking, is listed and served first, and keeps a round open like a blocker.

Budgets follow demand: one floor (`HORDE_REPAIR_MIN_MS`, `_MIN_TOKENS`) per member queue,
plus one per further review request or blocking thread (at most six units), plus two
recheck shares, unless `HORDE_REPAIR_MS`/`_TOKENS` give a flat total. Each attempt gets
its share of both totals in proportion to its demand, never below the floor: the token
total is cut into demand units plus the two recheck shares, and the time total only among
the units the token budget can fund. An attempt that spends its token or time share is
stopped, and its turns are capped (`HORDE_REPAIR_TURNS`: an attempt still working at the
cap ends with cause `turns`). A thread that two consecutive completed attempts did not
move (same state, same response count) is held back from that member until another
member changes it (`repair-released`), and a member whose whole queue is held is skipped
with reason `no-progress`. Each round serves a member at most once, members with
blocking work first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from horde_tui.store.causes import token_share_spent
from horde_tui.store.ledgers import answers
from horde_tui.store.ledgers.threads import awaiting_resolution, open_threads_to
from horde_tui.store.model import Thread
from horde_tui.store.state import LedgerState

if TYPE_CHECKING:
    from horde_tui.common.settings import Settings
    from horde_tui.supervisor.context import RunContext

REPAIR_BRIEF = """\
This is a REPAIR session: discovery is over. Answer only these open threads, then stop:
{threads}
Use `inbox` to read them, `respond id=Q# text=...` to answer a request, `review` to
check what you were asked to check, and `resolve id=Q# text=...` for threads you opened
that were answered. Do not start new work."""

REPAIR_KINDS = frozenset({"blocker", "challenge", "review-request"})
"""Thread kinds the repair phase serves whatever their target."""


def about_pending_answer(state: LedgerState, thread: Thread) -> bool:
    """An unresolved request about its run's answer while that answer awaits validation."""
    if thread.target != "answer" or thread.closed:
        return False
    prop = answers.current(state, thread.run)
    return prop is not None and prop.status == "pending"


def blocks(state: LedgerState, thread: Thread) -> bool:
    """Blocking for the repair phase: an open blocker or challenge, or a request about the
    pending answer (served with the blockers)."""
    return thread.blocking or about_pending_answer(state, thread)


def is_repair_work(state: LedgerState, thread: Thread) -> bool:
    return thread.kind in REPAIR_KINDS or about_pending_answer(state, thread)


def owed(state: LedgerState, member: str) -> list[Thread]:
    """The threads waiting on `member`, blocking ones first: addressed to it and not yet
    answered, or answered and waiting for it to resolve them (an answered thread waits on
    its sender, not on the member who answered)."""
    to_answer = [t for t in open_threads_to(state, member) if t.state != "responded"]
    threads = [*to_answer, *awaiting_resolution(state, member)]
    work = [t for t in threads if is_repair_work(state, t)]
    return sorted(work, key=lambda t: not blocks(state, t))


def demand(state: LedgerState, threads: list[Thread]) -> int:
    """Demand units of one queue: one floor, plus one per further review request or
    blocking thread (a request about the pending answer counts as blocking)."""
    if not threads:
        return 0
    weighty = sum(1 for t in threads if t.kind == "review-request" or blocks(state, t))
    return max(1, weighty)


def queue(sup: RunContext, member: str) -> list[Thread]:
    return owed(sup.parent.state, member)  # type: ignore[union-attr]


def count_progress(
    unchanged: dict[tuple[str, str], int],
    name: str,
    served: Iterable[str],
    still: list[str],
    completed: bool,
) -> None:
    """Update the no-progress counts after `name`'s attempt on the `served` threads.

    A thread the attempt moved starts over at zero. One it left `still` as it was counts
    only when the attempt completed: an attempt stopped at its turn cap or time share
    had no fair chance, so it neither holds the thread back nor clears its count. Two
    consecutive completed attempts that leave a thread unchanged hold it back."""
    for q in served:
        if q not in still:
            unchanged[(name, q)] = 0
        elif completed:
            unchanged[(name, q)] = unchanged.get((name, q), 0) + 1


def _mark(thread: Thread) -> tuple[str, int]:
    return thread.state, thread.responses


def _listing(state: LedgerState, threads: list[Thread]) -> str:
    lines = []
    for t in threads:
        about = f" about {t.target}" if t.target else ""
        flag = " (blocking)" if blocks(state, t) else ""
        lines.append(f"- {t.id} {t.kind}{about}{flag} from {t.by} to {t.to}: {t.text[:200]}")
    return "\n".join(lines)


REPAIR_AFTER_STOPS = frozenset({"solved", "solved-unvalidated"})
"""Clean stops with which a run ends on its own: discovery ended normally, so repair runs
(and can still get the pending answer validated). A user stop, the deadline and the
budget skip it."""


def _skip_reason(sup: RunContext) -> str:
    if sup.settings.repair.repair_rounds == 0:
        return "disabled"
    if sup.hard_stopped:
        return "stopped by the user"
    if sup.stop is not None and sup.stop.reason not in REPAIR_AFTER_STOPS:
        return "stopped by the user" if sup.stop.reason == "stopped by user" else sup.stop.reason
    return ""


RECHECK_SHARES = 2
"""Demand units the budgets keep beyond the queues' own, for requesters' rechecks."""


def budgets(settings: Settings, units: int) -> tuple[int, int]:
    """Total repair (ms, tokens): one floor per demand unit (at most six) plus two recheck
    shares, unless the settings give a flat total."""
    shares = min(6, units) + RECHECK_SHARES
    flat_ms, flat_tokens = settings.repair.repair_ms, settings.repair.repair_tokens
    return (
        flat_ms if flat_ms is not None else settings.repair.repair_min_ms * shares,
        flat_tokens if flat_tokens is not None else settings.repair.repair_min_tokens * shares,
    )


def unit_shares(
    settings: Settings, units: int, total_ms: int, total_tokens: int
) -> tuple[int, int]:
    """(ms, tokens) one demand unit's attempt may spend: the token total cut into the
    phase's demand units plus the recheck shares, the time total split only among the
    units that token budget can fund; neither below its floor."""
    token_unit = max(settings.repair.repair_min_tokens, total_tokens // (units + RECHECK_SHARES))
    funded = min(units + RECHECK_SHARES, total_tokens // max(1, token_unit))
    return max(settings.repair.repair_min_ms, total_ms // max(1, funded)), token_unit


def serving_order(state: LedgerState, work: dict[str, list[Thread]]) -> list[str]:
    """Members with blocking work first (a request about the pending answer counts), each
    group in member order."""
    return sorted(work, key=lambda n: not any(blocks(state, t) for t in work[n]))


async def run_repair(sup: RunContext) -> None:
    settings = sup.settings
    skip = _skip_reason(sup)
    if skip:
        sup.emit("repair-skipped", reason=skip)
        return
    assert sup.parent is not None
    sup.parent.refresh()
    members = [n for n, m in sup.members.items() if m.role in ("member", "verifier")]
    units = sum(demand(sup.parent.state, queue(sup, n)) for n in members)
    if units == 0:
        sup.emit("repair-skipped", reason="no open threads")
        return
    total_ms, total_tokens = budgets(settings, units)
    unit_ms, unit_tokens = unit_shares(settings, units, total_ms, total_tokens)
    sup.emit(
        "phase-start",
        phase="repair",
        demand=units,
        budget_ms=total_ms,
        budget_tokens=total_tokens,
        unit_ms=unit_ms,
        unit_tokens=unit_tokens,
    )
    unchanged: dict[tuple[str, str], int] = {}
    held: dict[tuple[str, str], tuple[str, int]] = {}
    spent_ms = spent_tokens = 0
    for round_no in range(1, settings.repair.repair_rounds + 1):
        sup.parent.refresh()
        state = sup.parent.state
        release(sup, state, unchanged, held, round_no)
        work = {n: [t for t in queue(sup, n) if unchanged.get((n, t.id), 0) < 2] for n in members}
        for n in members:
            if queue(sup, n) and not work[n]:
                sup.emit("repair-skipped", n, reason="no-progress", round=round_no)
        work = {n: q for n, q in work.items() if q}
        if not work:
            break
        served: set[str] = set()
        for name in serving_order(state, work):
            if sup.closed():  # stopped during repair: no further attempt starts
                break
            threads = work[name]
            if round_no < settings.repair.repair_rounds and _round_done(
                sup, members, served, threads
            ):
                sup.emit(
                    "repair-round-end",
                    round=round_no,
                    reason="the blocking threads left wait on members already served",
                )
                break
            served.add(name)
            left_tokens = total_tokens - spent_tokens
            if left_tokens < settings.repair.repair_min_tokens:
                sup.emit("repair-skipped", name, reason="token budget spent", round=round_no)
                continue
            units_here = demand(state, threads)
            share = (
                max(settings.repair.repair_min_ms, min(unit_ms * units_here, total_ms - spent_ms)),
                min(unit_tokens * units_here, left_tokens),
            )
            used_ms, used_tokens = await _attempt(
                sup, name, threads, share, round_no, (unchanged, held)
            )
            spent_ms += used_ms
            spent_tokens += used_tokens
    sup.emit("phase-end", phase="repair", spent_ms=spent_ms, spent_tokens=spent_tokens)


def _round_done(
    sup: RunContext, members: list[str], served: set[str], threads: list[Thread]
) -> bool:
    """End a round early when the only blocking threads left belong to members it already
    served: their requesters should recheck a correction before unserved members'
    non-blocking threads are taken up. Requests about the pending answer count as
    blocking."""
    state = sup.parent.state  # type: ignore[union-attr]
    if not served or any(blocks(state, t) for t in threads):
        return False
    sup.parent.refresh()  # type: ignore[union-attr]
    state = sup.parent.state  # type: ignore[union-attr]
    blocking = {n for n in members if any(blocks(state, t) for t in queue(sup, n))}
    return bool(blocking) and blocking <= served


def release(
    sup: RunContext,
    state: LedgerState,
    unchanged: dict[tuple[str, str], int],
    held: dict[tuple[str, str], tuple[str, int]],
    round_no: int,
) -> None:
    """Release a held-back thread that moved since it was held (another member changed
    it: the member it was held from was not served meanwhile)."""
    for (name, q), mark in list(held.items()):
        thread = state.threads.get(q)
        if unchanged.get((name, q), 0) >= 2 and thread is not None and _mark(thread) != mark:
            unchanged[(name, q)] = 0
            del held[(name, q)]
            sup.emit("repair-released", name, round=round_no, thread=q)


TOKEN_POLL_S = 0.1
"""How often a repair attempt's token spending is checked against its share."""


async def _attempt(
    sup: RunContext,
    name: str,
    threads: list[Thread],
    share: tuple[int, int],
    round_no: int,
    progress: tuple[dict[tuple[str, str], int], dict[tuple[str, str], tuple[str, int]]],
) -> tuple[int, int]:
    """One repair session within its (ms, tokens) share; returns what it used and updates
    the no-progress counts and the marks of the threads it left unchanged."""
    share_ms, share_tokens = share
    unchanged, held = progress
    state = sup.members[name]
    before = {t.id: _mark(t) for t in threads}
    tokens_before = state.prompt_tokens + state.completion_tokens
    turns_before = state.turns
    listing = _listing(sup.parent.state, threads)  # type: ignore[union-attr]
    units = demand(sup.parent.state, threads)  # type: ignore[union-attr]
    sup.emit(
        "repair-start",
        name,
        round=round_no,
        demand=units,
        threads=sorted(before),
        share_ms=share_ms,
        share_tokens=share_tokens,
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    if not await sup.spawn(
        name,
        REPAIR_BRIEF.format(threads=listing),
        HORDE_MAX_TURNS=str(sup.settings.repair.repair_turns),
        HORDE_MAX_TOKENS=str(share_tokens),
    ):
        return 0, 0  # the run was stopped as the attempt was due
    task = sup.tasks[name]
    spent = ""
    while not task.done() and not spent:
        left_s = started + share_ms / 1000 - loop.time()
        if state.prompt_tokens + state.completion_tokens - tokens_before >= share_tokens:
            spent = token_share_spent(share_tokens)
        elif left_s <= 0:
            spent = f"its repair time share of {share_ms} ms was spent"
        elif sup.closed() and sup.stop is not None and time.time() >= sup.stop.deadline:
            spent = f"the clean stop's grace ran out ({sup.stop.reason})"
        else:
            await asyncio.wait({task}, timeout=min(TOKEN_POLL_S, left_s))
    if spent:
        await sup.procs[name].stop_hard()
        await task
        state.exit_cause = "killed"
        state.detail = spent
    # The member table and the event log learn that the attempt ended (and how) from this.
    await sup.record_exit(name, task.result())
    sup.parent.refresh()  # type: ignore[union-attr]
    threads_now = sup.parent.state.threads  # type: ignore[union-attr]
    still = [q for q in before if q in threads_now and _mark(threads_now[q]) == before[q]]
    count_progress(unchanged, name, before, still, state.exit_cause == "completed")
    for q in still:
        held[(name, q)] = _mark(threads_now[q])
    used_ms = int((loop.time() - started) * 1000)
    used_tokens = state.prompt_tokens + state.completion_tokens - tokens_before
    first = state.first_turn
    sup.emit(
        "repair-end",
        name,
        round=round_no,
        turns=state.turns - turns_before,
        first_turn_tokens=first.tokens if first else 0,
        first_turn_cost_usd=first.cost_usd if first else 0.0,
        unchanged=still,
        cause=state.exit_cause,
        tokens=used_tokens,
    )
    return used_ms, used_tokens
