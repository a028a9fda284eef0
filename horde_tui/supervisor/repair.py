"""The repair phase: after discovery ends normally, members whose threads are still open
get short, targeted sessions to answer blockers, review requests and responses.

Budgets follow demand: one floor (`HORDE_REPAIR_MIN_MS`, `_MIN_TOKENS`) per queued
thread (at most six) plus two recheck shares, unless `HORDE_REPAIR_MS`/`_TOKENS` give a
flat total. Each attempt's time is cut in proportion to its queue, never below the floor,
and its turns are capped (`HORDE_REPAIR_TURNS`). A thread that two consecutive attempts
did not move (same state, same response count) is held back from that member, and a
member whose whole queue is held is skipped with reason `no-progress`. Each round serves
a member at most once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from horde_tui.store.ledgers.threads import awaiting_resolution, open_threads_to
from horde_tui.store.model import Thread

if TYPE_CHECKING:
    from horde_tui.supervisor.run import Supervisor

REPAIR_BRIEF = """\
This is a REPAIR session: discovery is over. Answer only these open threads, then stop:
{threads}
Use `inbox` to read them, `respond id=Q# text=...` to answer a request, `review` to
check what you were asked to check, and `resolve id=Q# text=...` for threads you opened
that were answered. Do not start new work."""


def queue(sup: Supervisor, member: str) -> list[Thread]:
    """The threads waiting on `member`: addressed to it and not yet answered, or answered
    and waiting for it to resolve them (an answered thread waits on its sender, not on
    the member who answered)."""
    state = sup.parent.state  # type: ignore[union-attr]
    to_answer = [t for t in open_threads_to(state, member) if t.state != "responded"]
    return [*to_answer, *awaiting_resolution(state, member)]


def _mark(thread: Thread) -> tuple[str, int]:
    return thread.state, thread.responses


async def run_repair(sup: Supervisor) -> None:
    settings = sup.settings
    if settings.repair_rounds == 0 or sup.stop is not None or sup.hard_stopped:
        reason = "disabled" if settings.repair_rounds == 0 else "stopped by the user"
        sup.emit("repair-skipped", reason=reason)
        return
    assert sup.parent is not None
    sup.parent.refresh()
    members = [n for n, m in sup.members.items() if m.role in ("member", "verifier")]
    demand = sum(len(queue(sup, n)) for n in members)
    if demand == 0:
        sup.emit("repair-skipped", reason="no open threads")
        return
    units = min(6, demand) + 2
    total_ms = (
        settings.repair_ms if settings.repair_ms is not None else settings.repair_min_ms * units
    )
    total_tokens = (
        settings.repair_tokens
        if settings.repair_tokens is not None
        else settings.repair_min_tokens * units
    )
    sup.emit(
        "phase-start", phase="repair", demand=demand, budget_ms=total_ms, budget_tokens=total_tokens
    )
    unchanged: dict[tuple[str, str], int] = {}
    spent_ms = spent_tokens = 0
    for round_no in range(1, settings.repair_rounds + 1):
        sup.parent.refresh()
        work = {n: [t for t in queue(sup, n) if unchanged.get((n, t.id), 0) < 2] for n in members}
        for n in members:
            if queue(sup, n) and not work[n]:
                sup.emit("repair-skipped", n, reason="no-progress", round=round_no)
        work = {n: q for n, q in work.items() if q}
        if not work:
            break
        pending = sum(len(q) for q in work.values())
        served: set[str] = set()
        for name, threads in work.items():
            if round_no < settings.repair_rounds and _round_done(sup, members, served, threads):
                sup.emit(
                    "repair-round-end",
                    round=round_no,
                    reason="the blocking threads left wait on members already served",
                )
                break
            served.add(name)
            if total_tokens - spent_tokens < settings.repair_min_tokens:
                sup.emit("repair-skipped", name, reason="token budget spent", round=round_no)
                continue
            left_ms = max(0, total_ms - spent_ms)
            share_ms = max(settings.repair_min_ms, left_ms * len(threads) // max(1, pending))
            used_ms, used_tokens = await _attempt(sup, name, threads, share_ms, round_no, unchanged)
            spent_ms += used_ms
            spent_tokens += used_tokens
    sup.emit("phase-end", phase="repair", spent_ms=spent_ms, spent_tokens=spent_tokens)


def _round_done(
    sup: Supervisor, members: list[str], served: set[str], threads: list[Thread]
) -> bool:
    """End a round early when the only blocking threads left belong to members it already
    served: their requesters should recheck a correction before unserved members'
    non-blocking threads are taken up."""
    if not served or any(t.blocking for t in threads):
        return False
    sup.parent.refresh()  # type: ignore[union-attr]
    blocking = {n for n in members if any(t.blocking for t in queue(sup, n))}
    return bool(blocking) and blocking <= served


async def _attempt(
    sup: Supervisor,
    name: str,
    threads: list[Thread],
    share_ms: int,
    round_no: int,
    unchanged: dict[tuple[str, str], int],
) -> tuple[int, int]:
    """One repair session; returns (ms, tokens) it used and updates the no-progress counts."""
    state = sup.members[name]
    before = {t.id: _mark(t) for t in threads}
    tokens_before = state.prompt_tokens + state.completion_tokens
    turns_before = state.turns
    listing = "\n".join(f"- {t.id} {t.kind} from {t.by} to {t.to}: {t.text[:200]}" for t in threads)
    sup.emit("repair-start", name, round=round_no, demand=len(threads), threads=sorted(before))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await sup._spawn(
        name, REPAIR_BRIEF.format(threads=listing), HORDE_MAX_TURNS=str(sup.settings.repair_turns)
    )
    task = sup.tasks[name]
    try:
        await asyncio.wait_for(asyncio.shield(task), share_ms / 1000)
    except TimeoutError:
        await sup.procs[name].stop_hard()
        await task
    state.status = "exited"
    sup.parent.refresh()  # type: ignore[union-attr]
    threads_now = sup.parent.state.threads  # type: ignore[union-attr]
    still = [q for q in before if q in threads_now and _mark(threads_now[q]) == before[q]]
    for q in before:
        unchanged[(name, q)] = unchanged.get((name, q), 0) + 1 if q in still else 0
    used_ms = int((loop.time() - started) * 1000)
    used_tokens = state.prompt_tokens + state.completion_tokens - tokens_before
    sup.emit(
        "repair-end",
        name,
        round=round_no,
        turns=state.turns - turns_before,
        unchanged=still,
        cause=state.exit_cause,
    )
    return used_ms, used_tokens
