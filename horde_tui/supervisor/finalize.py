"""Finalize: release unfinished ideas, freeze acceptance, run resource cleanups, write
SUMMARY.md and REPORT.md (by code), then the deliverable and the post-mortem (by
read-only helper members), GRAPH.md last.

REPORT.md and SUMMARY.md are deterministic functions of the ledgers, the event log and
the run summary: the same run always reports the same way, whatever the model did.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from horde_tui.common import prompts
from horde_tui.protocol.outcome import STOPPED, RunSummary
from horde_tui.store import runs
from horde_tui.store.causes import USER_STOP
from horde_tui.store.jsonl import JsonlTail
from horde_tui.store.members import MemberState
from horde_tui.store.paths import HordePaths, atomic_write_text
from horde_tui.store.timestamps import epoch
from horde_tui.supervisor import acceptance_freeze, baseline, cleanup, lifecycle
from horde_tui.supervisor.processes import spawn_member
from horde_tui.supervisor.setup import MemberSpec

if TYPE_CHECKING:
    from horde_tui.supervisor.context import HelperHost, RunContext


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """A run's events as the store's own reader sees them: a torn tail, corrupt lines and
    an unfinished multi-record append (records still marked `more`) are left out."""
    return JsonlTail(run_dir / "events.jsonl").read_new()


def continued_sessions(events: Iterable[dict[str, Any]]) -> list[tuple[str, float, str]]:
    """The sessions a person had carried on (`session-resume`), each with the outcome
    the run had already ended with, if it had (its last `run-end` before)."""
    ended, out = "", list[tuple[str, float, str]]()
    for ev in events:
        if ev.get("type") != "lifecycle":
            continue
        if ev.get("kind") == "run-end":
            ended = str(ev.get("outcome") or "ended")
        elif ev.get("kind") == "session-resume":
            out.append((str(ev.get("member")), epoch(ev.get("ts")) or 0.0, ended))
    return out


def write_reports(horde_dir: Path, summary: RunSummary, state: Any) -> None:
    """SUMMARY.md, REPORT.md and GRAPH.md from what is on disk (also used by `finalize`)."""
    from horde_tui.store import graph
    from horde_tui.supervisor import report
    from horde_tui.supervisor import summary as summary_md

    run_dir = runs.run_dir(horde_dir, summary.run_id)
    atomic_write_text(run_dir / "SUMMARY.md", summary_md.render_summary(state, summary))
    workdir = HordePaths(horde_dir).workdir
    events = read_events(run_dir)
    delta = None
    if summary.baseline:
        found = baseline.resolve_baseline(horde_dir, state, summary.run_id, summary.baseline)
        delta = (
            baseline.delta(state, summary.run_id, found, workdir, events)
            if found
            else summary.baseline  # asked for, not found: the report says so
        )
    text = report.render_report(state, summary, workdir, cleanup.results(events), delta)
    atomic_write_text(run_dir / "REPORT.md", text)
    record_outcome(run_dir, summary)
    check_documents(run_dir, state, workdir)
    atomic_write_text(run_dir / "GRAPH.md", graph.render_graph(events, summary))


DOCUMENTS_SECTION = "## Generated documents"


def check_documents(run_dir: Path, state: Any, workdir: Path) -> None:
    """Check the ids and line citations of the run's generated documents as finding
    evidence is checked, mark each problem in its document and list them all under
    REPORT.md's `## Generated documents` (rewritten on each call: once SUMMARY.md is
    written, again once the helpers wrote theirs)."""
    from horde_tui.supervisor import citations

    stale = citations.stale_spans(state.findings.values(), workdir)
    listed: list[str] = []
    for name in citations.DOCUMENTS:
        path = run_dir / name
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        problems = citations.document_problems(text, state, workdir, stale)
        marked = citations.mark_document(text, problems)
        if marked != text:
            atomic_write_text(path, marked)
        listed += [f"- {name}: `{p.token}`: {p.why}" for p in problems]
    report = run_dir / "REPORT.md"
    try:
        text = report.read_text(encoding="utf-8")
    except OSError:
        return
    head = text.split(f"\n{DOCUMENTS_SECTION}\n", 1)[0].rstrip("\n")
    section = [
        DOCUMENTS_SECTION,
        "",
        "Ids (R#, F#, T#, A#, ideas #N) and `path:line` citations of "
        + ", ".join(n for n in citations.DOCUMENTS if (run_dir / n).is_file())
        + ", checked against the ledgers and the working directory; each is marked "
        "`[check: ...]` in its document.",
        "",
        *(listed or ["_None._"]),
    ]
    atomic_write_text(report, head + "\n\n" + "\n".join(section) + "\n")


def record_outcome(run_dir: Path, summary: RunSummary) -> None:
    """MANIFEST.json gains the outcome REPORT.md states (rewritten whole, its other keys
    as setup wrote them), so every reader of a finished run names the same one."""
    path = run_dir / "MANIFEST.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a run without its manifest (written by hand): REPORT.md still says it
    manifest.update(
        outcome=summary.outcome, diagnosis=summary.diagnosis, exit_code=summary.exit_code
    )
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")


async def run_helper(
    sup: HelperHost, name: str, brief: str, timeout_s: float, halted: asyncio.Event | None = None
) -> MemberState:
    """One read-only helper session; its final message is the document it was asked for.
    It is stopped at `timeout_s`, or at once when `halted` is set (the run stopped)."""
    spec = MemberSpec(name, name)
    state = MemberState(name, name)
    state.attempt = 1
    env = sup.member_env(spec, 1, HORDE_TOOLS="readonly", HORDE_BRIEF=brief, HORDE_REMIND_CALLS="0")
    handle, task = await spawn_member(
        state, env, sup.workdir, sup.run_dir / f"{name}.log", sup.on_status
    )
    sup.emit("member-spawn", name, attempt=1, pid=handle.pid, role=name)
    stop = asyncio.ensure_future((halted or asyncio.Event()).wait())
    try:
        await asyncio.wait({task, stop}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if not task.done():
        await handle.stop_hard()
        await task
        if halted is not None and halted.is_set():
            state.exit_cause, state.detail = USER_STOP, "the run was stopped"
        state.exit_cause = state.exit_cause or "killed"
        state.detail = state.detail or f"timed out after {timeout_s:g}s"
    sup.emit("member-exit", name, cause=state.exit_cause, turns=state.turns)
    return state


def helper_document(title: str, state: MemberState) -> str:
    if state.exit_cause == "completed" and state.final_message.strip():
        return state.final_message.strip() + "\n"
    why = state.detail or state.exit_cause or "no output"
    return f"# {title}\n\nNot written: the helper ended with `{state.exit_cause}` ({why}).\n"


RUN_FILES = ("REPORT.md", "SUMMARY.md", "ACCEPTANCE.md", "events.jsonl")
"""Files of the run directory a finalize helper may be pointed at."""

HELPER_FILES = {
    "deliverable": ("REPORT.md", "ACCEPTANCE.md", "FINDINGS.md", "FACTS.md"),
    "post-mortem": ("REPORT.md", "BOARD.md", "IDEAS.md", "FINDINGS.md", "events.jsonl"),
}
"""What each finalize helper is told to read, in order: a run file from its run directory,
a ledger from its horde's directory."""


def existing_files(workdir: Path, paths: Iterable[Path]) -> list[str]:
    """The paths that exist, relative to the working directory a helper's `read` resolves
    against: a read-only helper told to read a file that is not there has no shell to look
    for the right one (a swarm horde's ledgers are not under `.horde/`)."""
    return [os.path.relpath(path, workdir) for path in paths if path.is_file()]


def helper_files(sup: RunContext, phase: str) -> str:
    """The brief's file list for one finalize helper: its own run's files, wherever the
    run lives (`.horde/runs/<id>/`, or a swarm horde's `.horde/swarms/<s>/hN/runs/...`)."""
    paths = [
        (sup.run_dir if name in RUN_FILES else sup.horde_dir) / name
        for name in HELPER_FILES[phase]
    ]
    return "\n".join(f"- {path}" for path in existing_files(sup.workdir, paths))


async def _helper_phase(
    sup: RunContext, phase: str, name: str, brief: str, filename: str, title: str
) -> None:
    """One helper phase: run the read-only helper, save its final message as the file."""
    if sup.hard_stopped:  # stopped during finalize: no helper starts after the stop
        return
    sup.emit("phase-start", phase=phase)
    brief = brief.format(run=sup.run_id, files=helper_files(sup, phase))
    helper = await run_helper(sup, name, brief, sup.settings.supervisor.postmortem_ms / 1000, sup.halted)
    atomic_write_text(sup.run_dir / filename, helper_document(title, helper))
    sup.emit("phase-end", phase=phase, cause=helper.exit_cause)


async def finalize(sup: RunContext, summary: RunSummary) -> None:
    assert sup.parent is not None
    sup.emit("phase-start", phase="finalize")
    lifecycle.release_ideas(sup.parent, sup.run_id)
    sup.parent.refresh()
    counts = acceptance_freeze.freeze(sup.horde_dir, sup.parent.state, sup.run_id)
    sup.emit("acceptance", **counts)
    await cleanup.run_cleanups(sup)
    write_reports(sup.horde_dir, summary, sup.parent.state)
    gateway_up = sup.gateway is not None and sup.gateway.running
    helpers_allowed = gateway_up and not sup.hard_stopped
    if helpers_allowed and sup.settings.supervisor.deliverable:
        await _helper_phase(
            sup,
            "deliverable",
            "synthesis",
            prompts.DELIVERABLE_BRIEF,
            "DELIVERABLE.md",
            "Deliverable",
        )
    # Runs that end on their own get the post-mortem; a clean stop only when asked for.
    ended_on_its_own = summary.outcome not in STOPPED
    wants_postmortem = ended_on_its_own or (sup.stop is not None and sup.stop.postmortem)
    if helpers_allowed and sup.settings.supervisor.postmortem and wants_postmortem:
        await _helper_phase(
            sup,
            "post-mortem",
            "postmortem",
            prompts.POSTMORTEM_BRIEF,
            "POSTMORTEM.md",
            "Post-mortem",
        )
    check_documents(sup.run_dir, sup.parent.state, sup.workdir)
    summary.ended = time.time()
    sup.emit("run-end", outcome=summary.outcome, diagnosis=summary.diagnosis)
    from horde_tui.store import graph

    atomic_write_text(
        sup.run_dir / "GRAPH.md", graph.render_graph(read_events(sup.run_dir), summary)
    )
