"""The hosting side of a handoff (`Supervisor.handoff`): once the phases are ended,
members and the gateway stop and the run is left for a detached `horde-tui resume`
(resume.py) to carry on. Nothing is finalized."""

from __future__ import annotations

import asyncio

from horde_tui.store.causes import HANDOFF
from horde_tui.store.runs import clear_live
from horde_tui.supervisor.context import RunContext


async def release_for_handoff(sup: RunContext) -> None:
    """The hosting side of a handoff, once the phases are ended: stop members and the
    gateway, record each session that was at work as handed off, clear the live marker
    so `horde-tui resume` may take the run. Nothing is finalized."""
    sup.cancel_continuations()
    at_work = [
        n
        for n, m in sup.members.items()
        if n in sup.tasks and m.status not in ("exited", "stopped")
    ]
    await asyncio.gather(*(sup.procs[n].stop_hard() for n in sup.running()))
    for name in at_work:
        code = await sup.tasks[name]
        sup.members[name].exit_cause = HANDOFF
        await sup.record_exit(name, code)
    await sup.stop_gateway()
    sup.emit("run-handoff", members=at_work)
    clear_live(sup.run_dir)
