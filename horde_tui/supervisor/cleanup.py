"""Finalize's resource cleanup: each resource of this run that names a `cleanup` command
gets it run once, after acceptance is frozen and before REPORT.md is written.

A cleanup command is text a member wrote, so it is treated like a member's command: the
cleanup rule is checked again (a record may predate the rule or bypass the tool), then
`run_command` runs it with the member shell's refusal list, allow-listed environment and
timeout, in the working directory, as `bash -c` on the text itself (never a string built
around it). "Cleanup never changes files" is the kernel's to keep, not the rule's: the
command runs in bubblewrap whatever the run's sandbox mode, with the working directory and
`.horde/` read-only (`SandboxPolicy.for_cleanup`), and where bubblewrap cannot run it is
not run at all. A refusal, a skip, a failure or a timeout is reported, never fatal: the
run still writes its reports. Each outcome is a `resource-cleanup` event, so REPORT.md
(also one rewritten from disk) says what ran, its status and its output tail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from horde_tui.protocol.rules import check_cleanup
from horde_tui.sandbox.policy import SandboxPolicy, bwrap_problem
from horde_tui.sandbox.shell import run_command
from horde_tui.store.model import Resource
from horde_tui.store.store import ActionRefused, HordeStore
from horde_tui.supervisor import lifecycle

if TYPE_CHECKING:
    from horde_tui.supervisor.context import RunContext

TIMEOUT_S = 60.0
"""Per cleanup command; a teardown that takes longer is killed (its process group) and
reported as timed out."""
TAIL_LINES = 6
"""Output lines REPORT.md keeps of each cleanup."""
_OUTPUT_LIMIT = 4_000
EVENT = "resource-cleanup"
SKIPPED = "skipped: cleanup is off (HORDE_CLEANUP=off)"
NO_BWRAP = (
    "skipped: cleanup commands run only inside bubblewrap, with the working directory read-only"
)


def owned_cleanups(resources: Iterable[Resource], run_id: str) -> list[Resource]:
    """This run's resources that name a cleanup command, in R# order: earlier runs'
    resources were torn down at their own finalize."""
    return [r for r in resources if r.run == run_id and r.cleanup.strip()]


def run_one(
    res: Resource,
    workdir: Path,
    horde_dir: Path,
    run_dir: Path,
    sandbox: SandboxPolicy,
) -> dict[str, Any]:
    """Run `res.cleanup` within `TIMEOUT_S` in bubblewrap, with `sandbox`'s network and
    environment but nothing writable of the project; return the event fields: resource,
    command, status, exit, tail."""
    fields: dict[str, Any] = {"resource": res.id, "command": res.cleanup, "exit": None}
    try:
        check_cleanup(res.cleanup, [horde_dir, run_dir])
    except ActionRefused as exc:
        return {**fields, "status": f"not run, {exc}", "tail": ""}
    problem = bwrap_problem()
    if problem:
        return {**fields, "status": f"{NO_BWRAP}, and {problem}", "tail": ""}
    policy = sandbox.for_cleanup((horde_dir, workdir / ".horde"))
    result = run_command(res.cleanup, workdir, TIMEOUT_S, _OUTPUT_LIMIT, sandbox=policy)
    if result.refused:
        return {**fields, "status": f"not run, {result.refused}", "tail": ""}
    *body, status = result.output.rstrip("\n").split("\n")
    kept = [line for line in body if line.strip()][-TAIL_LINES:]
    return {
        **fields,
        "status": status.strip("[]"),
        "exit": result.exit_code,
        "tail": "\n".join(kept),
    }


def _skipped(res: Resource) -> dict[str, Any]:
    return {"resource": res.id, "command": res.cleanup, "status": SKIPPED}


async def run_cleanups(sup: RunContext) -> None:
    """Run (or, with HORDE_CLEANUP=off, skip) every cleanup of the run, one event each."""
    assert sup.parent is not None
    sup.parent.refresh()
    for res in owned_cleanups(sup.parent.state.resources.values(), sup.run_id):
        if not sup.settings.supervisor.cleanup:
            fields = _skipped(res)
        else:
            fields = await asyncio.to_thread(
                run_one, res, sup.workdir, sup.horde_dir, sup.run_dir, sup.sandbox
            )
        sup.emit(EVENT, **fields)


def run_from_disk(
    parent: HordeStore, run_id: str, config: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> None:
    """`horde-tui finalize` of an interrupted run: the cleanups its supervisor did not
    get to (none twice), under the run's own settings as MANIFEST.json recorded them."""
    done = results(events)
    horde_dir = parent.paths.root
    run_dir = parent.paths.run_dir(run_id)
    names = tuple(str(n) for n in config.get("sandbox_env") or ())
    policy = SandboxPolicy(network=config.get("sandbox_network") is not False, env_names=names)
    for res in owned_cleanups(parent.state.resources.values(), run_id):
        if res.id in done:
            continue
        if config.get("cleanup") is False:
            fields = _skipped(res)
        else:
            fields = run_one(res, parent.paths.workdir, horde_dir, run_dir, policy)
        lifecycle.append(parent, run_id, {"type": "lifecycle", "kind": EVENT, **fields})


def results(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """R# -> its cleanup outcome for REPORT.md: the status line, then the output tail."""
    out: dict[str, str] = {}
    for event in events:
        if event.get("kind") == EVENT and event.get("resource"):
            tail = str(event.get("tail") or "")
            out[str(event["resource"])] = str(event.get("status", "")) + (
                "\n" + tail if tail else ""
            )
    return out
