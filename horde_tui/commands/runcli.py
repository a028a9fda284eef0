"""The run commands: `run`, `plan`, `status`, `stop-hard`, `stop-clean`, `pause`,
`resume`, `reset`, `finalize`. Imported lazily by `cli.py`.

`resume RUN` carries on a run whose supervisor is gone (`supervisor/resume.py`), `resume
SWARM` a swarm whose host is gone (`supervisor/swarm_resume.py`); with a member target
(or none) `resume` resumes paused members of the live run. `resume RUN --member
member-N` carries one member's session on from its transcript: a `reset` control with
`session` to a live run, else a one-member continuation hosted here.

`run`/`plan` host a supervisor in this process (`hosting.host`: the app on a terminal,
else one line per event on stdout), or with `--detach` start a headless one as its own
process and return (`launch.py`); `attach` opens the app on a run another process hosts.
The control commands reach a live supervisor from any other shell through its
`control/` folder: a live swarm's (its supervisor forwards to the hordes), else the run's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from horde_tui.app.hosting import host
from horde_tui.common.settings import (
    FLAGS,
    THINKING_LEVELS,
    TOOL_PROTOCOLS,
    literal_choices,
    settings_help,
)
from horde_tui.protocol import controls
from horde_tui.protocol.targets import FORMS as TARGET_FORMS
from horde_tui.protocol.targets import TargetError, parse_targets, per_horde
from horde_tui.store.paths import default_horde_dir
from horde_tui.store.runs import (
    SWARM_LIVE_STATES,
    find_run,
    is_swarm_dir,
    live_swarm,
    read_swarm,
    resolve_run,
    run_state,
    runs_by_state,
    swarm_state,
)
from horde_tui.store.usage import sum_cost


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--headless", action="store_true", help="print one line per event (no app)")
    p.add_argument(
        "--model",
        help="any litellm model string, or aihorde/<model> for AI Horde (`horde-tui models` "
        "lists them) (default: $HORDE_MODEL / config)",
    )
    p.add_argument("--thinking", choices=THINKING_LEVELS)
    p.add_argument("--no-verifier", action="store_true", help="no verifier role in 3+ member runs")
    p.add_argument("--until-stop", action="store_true", help="keep working until stopped")
    p.add_argument(
        "--baseline",
        metavar="RUN|last",
        help="REPORT.md gets a Delta against RUN (last: the newest finished run on this task)",
    )
    p.add_argument("--forked-from", help=argparse.SUPPRESS)  # set by `fork`
    p.add_argument("--max-minutes", type=float, help="clean stop at this wall-clock deadline")
    p.add_argument("--max-cost-usd", type=float, help="clean stop when the run has spent this")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for the model")
    p.add_argument("--api-key", help="provider key (prefer the provider's own env variable)")
    p.add_argument(
        "--tool-protocol", choices=TOOL_PROTOCOLS, help="json for text-only models (default: auto)"
    )
    p.add_argument(
        "--compact-tokens",
        type=int,
        metavar="N",
        help="json protocol: fit each prompt in N tokens (small-context models; 0 off)",
    )
    p.add_argument(
        FLAGS["member_models"],
        dest="member_models",
        action="append",
        metavar="MEMBER=MODEL",
        help="a model for one member, e.g. member-3=openai/gpt-4o (repeatable)",
    )
    p.add_argument(
        FLAGS["preset"],
        metavar="NAME",
        help="role presets: give members personas (and per-role models); "
        "`horde-tui presets` lists them",
    )
    p.add_argument(
        "--sandbox",
        choices=literal_choices("sandbox"),
        help="member commands in bubblewrap: auto (default) when it is installed, bwrap "
        "requires it, off never",
    )
    p.add_argument(
        "--confirm",
        action="store_const",
        const=True,
        help="every member bash command waits for a person: the app's queue, y/N/a on "
        "the terminal, or horde-tui approve/refuse from another shell",
    )
    p.add_argument(
        FLAGS["lessons"],
        action="store_const",
        const=True,
        help="give members the top lessons of .horde/LESSONS.md (`horde-tui lessons`) in "
        "their brief",
    )
    p.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")


def _err(message: str, code: int = 2) -> int:
    print(f"horde-tui: {message}", file=sys.stderr)
    return code


def cmd_run(args: argparse.Namespace, layers_text: str | None = None) -> int:
    from horde_tui.launch.launch import RunOptions, aihorde_warnings, build_host, check_launch
    from horde_tui.sandbox.policy import resolve as resolve_sandbox

    workdir = Path.cwd()
    options = RunOptions.from_args(args)
    check = check_launch(options, workdir / ".horde", layers_text)
    for note in check.notes:
        print(note, file=sys.stderr)
    if not check.ok:
        for refusal in check.refusals:
            print(f"horde-tui: {refusal.message}", file=sys.stderr)
        return check.refusals[0].exit_code
    assert check.request is not None and check.settings is not None
    for warning in aihorde_warnings(check.settings):
        print(f"horde-tui: {warning}", file=sys.stderr)
    if check.settings.member.confirm and not _can_ask(args):
        return _err(
            "refused: confirm mode (--confirm, or confirm = true in .horde/config.toml) needs "
            "a person at a terminal and this headless or detached run has none (stdin is not "
            "a terminal); start it from a terminal, or without confirm mode"
        )
    if getattr(args, "detach", False):
        return _detach(options, workdir / ".horde", layers_text)
    request, settings = check.request, check.settings
    assert check.count is not None
    sup = build_host(check, workdir)
    if check.count.hordes > 1:
        intro = (
            f"swarm {sup.swarm_id}: {check.count.hordes} hordes of {request.count} members, "
            f"model {settings.gateway.model}{sandbox_line(resolve_sandbox(settings.sandboxing.sandbox, settings.sandboxing.sandbox_network)[1])}"
        )
    else:
        intro = f"run {sup.run_id}: {request.count} members, model {settings.gateway.model}"
        intro += sandbox_line(sup.sandbox_note)
    return host_here(sup, args, intro)


def _can_ask(args: argparse.Namespace) -> bool:
    """Whether confirm mode has someone to ask: the app, or a headless run whose stdin
    is a terminal; a detached run has neither."""
    if getattr(args, "detach", False):
        return False
    if not getattr(args, "headless", False) and sys.stdout.isatty():
        return True
    return sys.stdin.isatty()


def sandbox_line(note: str) -> str:
    """The run header's one line about running without a sandbox ("" inside one)."""
    return f"\nwarning: {note} (see SECURITY.md)" if note else ""


def host_here(sup: Any, args: argparse.Namespace, intro: str) -> int:
    """Host a run's or swarm's supervisor in this process (`hosting.host`): in the app on
    a terminal, else headless (one line per event after `intro`)."""
    mouse = not getattr(args, "no_mouse", False)
    return host(sup, intro, headless=bool(getattr(args, "headless", False)), mouse=mouse)


def _detach(options: Any, horde_dir: Path, layers_text: str | None) -> int:
    """Start the run as its own session (it outlives this shell) and say how to watch and
    stop it."""
    from horde_tui.launch.launch import detached_argv, detached_env, in_background, start_detached

    argv = detached_argv(options, layers_text)
    started = start_detached(argv, horde_dir, env=detached_env(options))
    if started.run_dir is None:
        return _err(started.error, 1)
    print(in_background(started, "started"))
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    """`resume [target]` resumes paused members of the live run; `resume RUN` carries on
    a run whose supervisor is gone (run ids never parse as member targets)."""
    horde_dir = default_horde_dir()
    words = list(args.words)
    run = words[0] if len(words) == 1 and not _is_target(words[0]) else None
    if args.member is not None:
        if run is None:
            return _err(
                "refused: --member goes with a run id: `horde-tui resume RUN --member "
                "member-N` (`horde-tui runs` lists the runs)"
            )
        return _resume_member(args, horde_dir, run)
    if run is None:
        if args.detach or args.headless:
            return _err(
                "refused: --detach and --headless go with `resume RUN` (a run whose "
                "supervisor is gone); `resume [target]` resumes paused members"
            )
        return cmd_control(args)
    if is_swarm_dir(resolve_run(horde_dir, run, swarms=True)):  # nor a member target
        return _resume_swarm(args, horde_dir, run)
    from horde_tui.supervisor.resume import ResumeRefused, load_resume, resumed_supervisor

    try:
        point = load_resume(horde_dir, run)
    except ResumeRefused as exc:
        return _err(str(exc), 1)
    if point.settings.member.confirm and not _can_ask(args):
        return _err(_resume_confirm_refusal("run", run))
    if args.detach:
        return _resume_in_background(horde_dir, run)
    sup = resumed_supervisor(horde_dir.parent, point)
    intro = f"run {run} resumed: phase {point.phase}, model {point.settings.gateway.model}"
    return host_here(sup, args, intro)


def _resume_member(args: argparse.Namespace, horde_dir: Path, run: str) -> int:
    """`resume RUN --member member-N`: the member's session goes on from its transcript.
    A live run's supervisor does it (the `reset` control with `session`, sent as every
    control is); a run whose supervisor is gone, ended or not, gets a one-member
    continuation hosted here, which finalizes the run again when the session ends."""
    from horde_tui.supervisor.resume import (
        MemberRefused,
        ResumeRefused,
        load_resume,
        member_transcript,
        resumed_supervisor,
    )

    member = f"member-{args.member}" if args.member.isdigit() else args.member
    run_dir = resolve_run(horde_dir, run, swarms=True)
    if is_swarm_dir(run_dir):
        return _err(
            f"refused: {run} is a swarm and --member carries on a member of one run; "
            f"carry the swarm on with `horde-tui resume {run}`"
        )
    try:
        transcript = member_transcript(run_dir, member)
    except MemberRefused as exc:
        return _err(str(exc))
    if run_state(run_dir) == "active":
        if args.detach or args.headless:
            return _err(
                f"refused: run {run} is live, so its own supervisor carries {member} on; "
                "--detach and --headless go with a run whose supervisor is gone"
            )
        args.control, args.words, args.run, args.session = "reset", [member], run, True
        return cmd_control(args)
    if run_dir.parent.parent != horde_dir:  # a swarm's horde run, `.horde/swarms/<id>/hN/`
        swarm = run_dir.parent.parent.parent.name
        return _err(
            f"refused: run {run} is a horde of swarm {swarm}, whose host is gone; carry the "
            f"swarm on with `horde-tui resume {swarm}` (--member reaches a live horde only)",
            1,
        )
    try:
        point = load_resume(horde_dir, run, member=member)
    except MemberRefused as exc:
        return _err(str(exc))
    except ResumeRefused as exc:
        return _err(str(exc), 1)
    if point.settings.member.confirm and not _can_ask(args):
        return _err(_resume_confirm_refusal("run", run))
    if args.detach:
        return _resume_in_background(horde_dir, run, member)
    sup = resumed_supervisor(horde_dir.parent, point)
    before = f"the run had ended ({point.ended})" if point.ended else "its supervisor is gone"
    intro = (
        f"run {run}: {before}; a one-member continuation carries {member}'s session on "
        f"from {transcript.relative_to(run_dir)}, model {point.settings.gateway.model}"
    )
    return host_here(sup, args, intro)


def _resume_in_background(horde_dir: Path, target: str, member: str | None = None) -> int:
    """`resume RUN|SWARM [--member member-N] --detach`: a detached supervisor carries it
    (or that member's session) on; one line says where."""
    from horde_tui.launch.launch import in_background, resume_detached

    started = resume_detached(horde_dir, target, member=member)
    if started.run_dir is None:
        return _err(started.error, 1)
    print(in_background(started, "resumed"))
    return 0


def _resume_swarm(args: argparse.Namespace, horde_dir: Path, swarm_id: str) -> int:
    """`resume SWARM`: carry on a swarm whose host is gone, here or detached."""
    from horde_tui.supervisor.resume import ResumeRefused
    from horde_tui.supervisor.swarm_resume import load_swarm

    try:
        swarm = load_swarm(horde_dir.parent, swarm_id)
    except ResumeRefused as exc:
        return _err(str(exc), 1)
    if swarm.settings.member.confirm and not _can_ask(args):
        return _err(_resume_confirm_refusal("swarm", swarm_id))
    if args.detach:
        return _resume_in_background(horde_dir, swarm_id)
    intro = (
        f"swarm {swarm_id} resumed: {len(swarm.standing)} hordes ended, "
        f"{len(swarm.carried)} carried on, model {swarm.settings.gateway.model}"
    )
    return host_here(swarm, args, intro)


def _resume_confirm_refusal(what: str, name: str) -> str:
    """`resume` of a confirm-mode run or swarm with nobody to ask (as `_can_ask` says):
    refused at start, like `run --confirm --headless` without a terminal."""
    return (
        f"refused: {what} {name} runs in confirm mode (it was started with --confirm, or "
        "confirm = true) and this headless or detached resume has no person to ask (stdin "
        f"is not a terminal); resume it from a terminal (horde-tui resume {name}) or in the app"
    )


def _is_target(word: str) -> bool:
    try:
        parse_targets(word)
    except TargetError:
        return False
    return True


def cmd_attach(args: argparse.Namespace) -> int:
    """Open the app on a run hosted by another process (default: the only live one;
    with several live, opening the newest could be the wrong one: it lists them)."""
    from horde_tui.app.app import attach_app

    horde_dir = default_horde_dir()
    live = runs_by_state(horde_dir).get("active", [])
    if not args.run and len(live) > 1:
        listing = "\n".join(f"  horde-tui attach {run}" for run in reversed(live))
        return _err(f"{len(live)} runs are live in {horde_dir}; name one:\n{listing}")
    run_dir = resolve_run(horde_dir, args.run) if args.run else find_run(horde_dir, None)
    if run_dir is None:
        return _err(f"no run is live in {horde_dir}; `horde-tui runs` lists the runs", 1)
    return attach_app(run_dir, no_mouse=args.no_mouse)


def cmd_control(args: argparse.Namespace) -> int:
    """Send one control to the live swarm, else to the run (`--run`, or the live one):
    its supervisor answers in its own `control/` with the lines to print. A swarm's
    supervisor forwards it to each horde the target names (`h2:member-3` -> h2's
    `member-3`), as it does the swarm screen's: one path for both."""
    horde_dir = default_horde_dir()
    words = list(args.words)
    postmortem = False
    if args.control == "stop-clean" and words and words[0] == "postmortem":
        postmortem, words = True, words[1:]
    target = " ".join(words) or "all"
    named = resolve_run(horde_dir, args.run, swarms=True) if args.run else None
    if named is None:
        swarm = live_swarm(horde_dir)
    else:  # a named swarm that ended is refused below, as a run that is not live
        named_swarm = read_swarm(named) if is_swarm_dir(named) else None
        live = named_swarm is not None and swarm_state(named_swarm) in SWARM_LIVE_STATES
        swarm = named if live else None
    try:
        targets = parse_targets(target)
        info = read_swarm(swarm) if swarm is not None else None
        if info is not None and info.hordes:  # a horde the swarm lacks: a bad target too
            per_horde(targets, info.hordes)
    except TargetError as exc:
        return _err(str(exc))
    folder = swarm or named or find_run(horde_dir, None)
    if folder is None or (swarm is None and run_state(folder) != "active"):
        states = runs_by_state(horde_dir)
        listing = "; ".join(f"{k}: {', '.join(v[-3:])}" for k, v in states.items()) or "none"
        if args.control == "status":
            print(f"no run is live in {horde_dir} (runs: {listing})")
            ended = ended_line(folder or find_run(horde_dir, None, ("finished",)))
            if ended:
                print(ended)
            return 0
        return _err(
            f"no run is live in {horde_dir} (runs: {listing}); nothing to {args.control}", 1
        )
    request = controls.new_request(
        args.control,
        target,
        getattr(args, "grace", None),
        postmortem,
        session=getattr(args, "session", False),  # `resume RUN --member` of a live run
    )
    answer = controls.ask(folder, request)
    if answer is None:
        return _err(
            f"the supervisor of {folder.name} did not answer within {controls.ANSWER_TIMEOUT_S:g} s",
            1,
        )
    print(answer["text"])
    return 0 if answer["ok"] else 1


def shown_state(state: str, outcome: str) -> str:
    """What `horde-tui runs` calls a run's or swarm's state: `live` while its host is
    responsible for it, an ended one `finished`, `failed` or `stopped` by its outcome,
    else the runs list's own word (`interrupted`, `manual`, `not started`, `pending`)."""
    if state in ("active", "finalizing") or (state in SWARM_LIVE_STATES and state != "pending"):
        return "live"
    if state != "finished":
        return state
    if outcome.startswith("stopped"):
        return "stopped"
    return "failed" if "failed" in outcome else "finished"


def _listed(
    row: Any, run_dir: Path | None, ledgers: Any, now: float, kind: str = "run"
) -> dict[str, Any]:
    """One line of `horde-tui runs` as JSON: a row of the runs list's index (`RunRow`),
    with what the run bought (`finding_yield`, as REPORT.md counts it) and spent (its
    `usage.jsonl`, one line per model call; unknown once a call was unpriced)."""
    from horde_tui.eval.collect import usage_totals
    from horde_tui.supervisor.forecast import finding_yield

    found, accepted = finding_yield(ledgers, row.run_id) if ledgers is not None else (0, 0)
    cost = usage_totals(run_dir)[1] if run_dir is not None else 0.0
    return {
        "id": row.run_id,
        "kind": kind,
        "state": shown_state(row.state, row.outcome),
        "run_state": row.state,
        "outcome": row.outcome,
        "members": row.members,
        "findings": found,
        "accepted": accepted,
        "cost_usd": cost,
        "started": row.started,
        "age_s": round(now - row.started, 1) if row.started else None,
    }


def _fold(horde_dir: Path) -> Any:
    """The ledgers of `horde_dir`, folded once for every run in it (read only)."""
    from horde_tui.store.store import HordeStore

    store = HordeStore(horde_dir, "viewer")
    store.refresh()
    return store.state


def list_runs(horde_dir: Path) -> list[dict[str, Any]]:
    """Every run and swarm of `horde_dir`, newest first, as the app's runs list reads
    them (`view.swarm.RunsAndSwarms`); a swarm carries its hordes' lines (`hordes`),
    each read the same way from its horde's own directory."""
    import time

    from horde_tui.store.runs import horde_run_dirs
    from horde_tui.view.run import RunRow, RunsIndex
    from horde_tui.view.swarm import RunsAndSwarms

    now = time.time()
    index = RunsAndSwarms(horde_dir)
    index.refresh()
    rows = index.rows()
    ledgers = _fold(horde_dir) if any(not index.is_swarm(r) for r in rows) else None
    out = []
    for row in rows:
        if not index.is_swarm(row):
            out.append(_listed(row, horde_dir / "runs" / row.run_id, ledgers, now))
            continue
        swarm_dir = index.swarm_dir(row)
        info = read_swarm(swarm_dir)
        started = horde_run_dirs(swarm_dir, info) if info is not None else {}
        hordes = []
        for horde in info.horde_names() if info is not None else []:
            run_dir = started.get(horde)
            runs = RunsIndex(swarm_dir / horde)
            runs.refresh()
            mine = [r for r in runs.rows() if run_dir is not None and r.run_id == run_dir.name]
            if mine:
                line = _listed(mine[0], run_dir, _fold(swarm_dir / horde), now, "horde")
            else:
                pending = RunRow(horde, "pending", None, row.members, "", "", "", ())
                line = _listed(pending, None, None, now, "horde")
            hordes.append({**line, "id": horde, "run": run_dir.name if mine else None})
        whole = _listed(row, None, None, now, "swarm")
        whole["members"] = row.count
        whole["findings"] = sum(h["findings"] for h in hordes)
        whole["accepted"] = sum(h["accepted"] for h in hordes)
        whole["cost_usd"] = sum_cost(h["cost_usd"] for h in hordes)
        out.append({**whole, "hordes": hordes})
    return out


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


def runs_table(listed: list[dict[str, Any]]) -> list[str]:
    """`horde-tui runs` as text: a header, then one aligned line a run (a swarm's hordes
    indented beneath it)."""
    cells = [("ID", "STATE", "OUTCOME", "MEMBERS", "FINDINGS", "COST", "AGE")]
    for entry in listed:
        for line in (entry, *entry.get("hordes", ())):
            cost = line["cost_usd"]
            cells.append(
                (
                    ("  " if line["kind"] == "horde" else "") + line["id"],
                    line["state"],
                    " ".join(line["outcome"].split()) or "-",
                    str(line["members"] or "-"),
                    f"{line['accepted']}/{line['findings']}",
                    "unknown" if cost is None else f"${cost:.2f}",
                    _age(line["age_s"]),
                )
            )
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]


def cmd_runs(args: argparse.Namespace) -> int:
    """`horde-tui runs [--json]`: every run and swarm here, newest first."""
    horde_dir = default_horde_dir()
    listed = list_runs(horde_dir)
    if args.json:
        print(json.dumps(listed, indent=2))
    elif not listed:
        print(f'no runs in {horde_dir} yet; start one with `horde-tui run N "task"`')
    else:
        print("\n".join(runs_table(listed)))
    return 0


def ended_line(run_dir: Path | None) -> str:
    """`run ID ended: OUTCOME: DIAGNOSIS` of a run that ended, read as the runs list
    reads it (its `run-end` event); '' for none, or one that has not ended."""
    from horde_tui.view.run import RunLifecycle

    if run_dir is None:
        return ""
    life = RunLifecycle(run_dir / "events.jsonl")
    life.refresh()
    life.index.close()
    if not life.outcome:
        return ""
    return f"run {run_dir.name} ended: {life.outcome}: {life.diagnosis}".rstrip(": ")


def cmd_confirm(args: argparse.Namespace) -> int:
    """`approve`/`refuse`: a decision on the commands waiting in confirm mode, sent like
    every control (`control/`); `approve --always` is allow-all for the member."""
    if getattr(args, "always", False):
        args.control = "allow-all"
    return cmd_control(args)


def cmd_finalize(args: argparse.Namespace) -> int:
    from horde_tui.supervisor.recover import finalize_from_disk

    horde_dir = Path.cwd() / ".horde"
    if args.run:
        run_dir: Path | None = resolve_run(horde_dir, args.run)
    else:
        run_dir = find_run(horde_dir, None, ("interrupted",))
    if run_dir is None:
        return _err(f"no interrupted run found in {horde_dir}", 1)
    state = run_state(run_dir)
    if state == "active":
        return _err(f"{run_dir.name} is still live; stop it first (horde-tui stop-clean)", 1)
    summary = finalize_from_disk(run_dir.parent.parent, run_dir.name)
    print(json.dumps({"run": summary.run_id, "outcome": summary.outcome}))
    print(f"report: {run_dir / 'REPORT.md'}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from horde_tui.demo.run import run_demo

    return run_demo(
        args.headless, args.speed, args.keep, args.hordes, args.policy, args.tool_protocol
    )


def cmd_fork(args: argparse.Namespace) -> int:
    """`fork RUN --at E#`: prepare the fork (`fork.prepare`), then start its run there as
    `run`/`plan` would, with the run's task, members and plan unless flags change them."""
    from horde_tui.commands.fork import ForkRefused, demo_model, prepare
    from horde_tui.view.run import read_info

    demo = read_info(resolve_run(Path.cwd() / ".horde", args.run))[0].demo
    if demo and args.detach:
        return _err(
            f"refused: run {args.run} was played by the demo model, which lives in the "
            "process that hosts its fork (a detached fork would lose it); fork it without "
            "--detach"
        )
    try:
        fork = prepare(Path.cwd(), args.run, args.at, Path(args.into) if args.into else None)
    except ForkRefused as exc:
        return _err(str(exc), 1)
    asked = fork.manifest.get("request") or {}
    layers = list(asked.get("layers") or [])
    print(f"forked run {fork.run} at {fork.at} (ledger seq {fork.seq}) into {fork.into}")
    args.count = args.count or str(asked.get("count") or len(fork.manifest.get("members") or []))
    args.prompt = args.prompt or fork.prompt
    args.forked_from = f"{fork.run}@{fork.at}"
    args.no_verifier = args.no_verifier or not asked.get("verifier", True)
    args.until_stop = args.until_stop or bool(asked.get("until_stop"))
    os.chdir(fork.into)
    if not demo:
        return cmd_run(args, "; ".join(layers) if layers else None)
    # The demo model died with the demo's process: this one serves it again, as `demo`
    # does, and the run says so (its reports name the demo model).
    from horde_tui.demo.run import DEMO_KEY

    with demo_model(args.prompt, args.speed) as stub:
        print(f"fork: the model is the demo model, served on {stub.api_base}; no provider key")
        args.model, args.api_base, args.api_key, args.demo = (
            stub.model,
            stub.api_base,
            DEMO_KEY,
            True,
        )
        return cmd_run(args, "; ".join(layers) if layers else None)


def cmd_replay(args: argparse.Namespace) -> int:
    """`replay RUN [--at E#]` (`horde_tui.app.replay`, which loads the app)."""
    from horde_tui.app.replay import cmd_replay as replay

    return replay(args)


def add_commands(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run a horde of M members (or H hordes of M) on a prompt",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("count", help="members: M (1-12), or H/M for a swarm of H hordes (1-4)")
    run.add_argument("prompt")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)
    detach_help = "start the run as a background process and return (watch: horde-tui attach)"
    run.add_argument("--detach", action="store_true", help=detach_help)

    plan = sub.add_parser(
        "plan",
        help='run a partitioned horde: plan N "layer; layer; ..."',
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan.add_argument("count")
    plan.add_argument("layers", help="layers separated by ';'")
    add_run_arguments(plan)
    plan.add_argument("--detach", action="store_true", help=detach_help)
    plan.add_argument(
        "--prompt", default="", help='the task (default: "Analyse each layer: <layers>")'
    )
    plan.set_defaults(func=lambda a: cmd_run(a, a.layers))

    fork = sub.add_parser(
        "fork",
        help="start a new run from a run's ledgers as they were after event E#",
        description="Copies the working directory (without .horde/) to --into, keeps the "
        "ledger records written up to E# and the run's settings, and starts a run there "
        "with the same task and members unless flags change them.",
    )
    fork.add_argument("run", help="the run to fork")
    fork.add_argument("--at", required=True, metavar="E#", help="the event to fork after")
    fork.add_argument("--into", help="the new folder (default: <dir>-fork-<run>-E<n> beside it)")
    fork.add_argument("--count", help="members (default: the run's)")
    fork.add_argument("--prompt", default="", help="the task (default: the run's)")
    fork.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="a fork of a demo run: multiplier on the demo model's pauses (0 none)",
    )
    add_run_arguments(fork)
    fork.add_argument("--detach", action="store_true", help=detach_help)
    fork.set_defaults(func=cmd_fork)

    replay = sub.add_parser(
        "replay",
        help="open a finished run as it was after event E#, with a time cursor",
        description="Read-only. Keys: . , one event; > < one write; ] [ one minute; } { "
        "the next/previous finding; ) ( the next/previous refusal; g/G the first/last.",
    )
    replay.add_argument("run", help="the run id, or last (the newest run that is not live)")
    replay.add_argument("--at", metavar="E#", help="start after this event (default: the last)")
    replay.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")
    replay.set_defaults(func=cmd_replay)

    attach = sub.add_parser("attach", help="open the app on a run hosted by another process")
    attach.add_argument(
        "run", nargs="?", help="the run id (default: the only live run; several are listed)"
    )
    attach.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")
    attach.set_defaults(func=cmd_attach)

    for name, text in (
        ("status", "show the live run and each member: status [target]"),
        ("stop-hard", "terminate members now (SIGTERM, SIGKILL after 5 s)"),
        ("stop-clean", "members wrap up, then the run finalizes: stop-clean [postmortem] [target]"),
        ("pause", "suspend members (SIGSTOP of their process groups)"),
        (
            "resume",
            "resume paused members (resume [target]), or carry on a run or swarm whose "
            "supervisor is gone (resume RUN|SWARM [--detach] [--headless])",
        ),
        ("reset", "kill members' sessions and start fresh attempts: reset member-N"),
    ):
        p = sub.add_parser(name, help=text, aliases=["stop"] if name == "stop-hard" else [])
        targets = f"{', '.join(form for form, _ in TARGET_FORMS)}, or a list"
        p.add_argument(
            "words",
            nargs="*",
            metavar="target",
            help=f"{targets}; or a run or swarm id (resume RUN)" if name == "resume" else targets,
        )
        p.add_argument("--run", help="the run id (default: the live run)")
        if name == "stop-clean":
            p.add_argument("--grace", type=float, help="seconds before escalating (default 90)")
        p.set_defaults(func=cmd_control, control=name)  # `stop` arrives as `stop-hard`
        if name == "resume":
            p.add_argument(
                "--detach", action="store_true", help="resume RUN|SWARM as a background process"
            )
            p.add_argument(
                "--headless", action="store_true", help="print one line per event (no app)"
            )
            p.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse")
            p.add_argument(
                "--member",
                metavar="member-N",
                help="resume RUN --member member-N: carry on that member's session from its "
                "transcript (a live run's supervisor respawns it; else a one-member "
                "continuation under the same run)",
            )
            p.set_defaults(func=cmd_resume)

    for name, text in (
        ("approve", "confirm mode: run the commands waiting for a person: approve [target]"),
        ("refuse", "confirm mode: refuse the commands waiting for a person: refuse [target]"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("words", nargs="*", metavar="target", help="all (default), member-N, N")
        p.add_argument("--run", help="the run id (default: the live run)")
        if name == "approve":
            p.add_argument(
                "--always",
                action="store_true",
                help="allow this member's commands for the rest of the run (allow-all)",
            )
        p.set_defaults(func=cmd_confirm, control=name)

    demo = sub.add_parser(
        "demo",
        help="a full run on a bundled sample with the scripted demo model (no provider key)",
    )
    demo.add_argument("--headless", action="store_true", help="print one line per event (no app)")
    demo.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="multiplier on the demo model's pauses: 1 watchable (default), 0 none, 2 slower",
    )
    demo.add_argument(
        "--keep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the temporary project with its .horde/ ledgers and reports (default: keep)",
    )
    demo.add_argument(
        "--hordes",
        type=int,
        choices=(1, 2, 3, 4),
        default=1,
        help="a swarm of this many hordes (headless); the demo model also plans and merges",
    )
    demo.add_argument(
        "--policy",
        choices=("demo", "sloppy"),
        default="demo",
        help="sloppy: three careless members whose bad calls are refused in one line each",
    )
    demo.add_argument(
        "--tool-protocol",
        choices=TOOL_PROTOCOLS,
        help="json: the gateway speaks its text protocol to the demo model",
    )
    demo.set_defaults(func=cmd_demo)

    runs = sub.add_parser(
        "runs",
        help="list every run and swarm here, newest first: state, outcome, members, "
        "findings (accepted/filed), cost, age",
    )
    runs.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    runs.set_defaults(func=cmd_runs)

    fin = sub.add_parser("finalize", help="finalize an interrupted run from what is on disk")
    fin.add_argument("run", nargs="?", help="the run id (default: the latest interrupted run)")
    fin.set_defaults(func=cmd_finalize)
