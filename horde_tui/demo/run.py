"""`horde-tui demo`: a real run over a bundled sample project, played by the demo model.

The README's first command must work on a fresh machine with no provider key, and show
what a run really is. So everything is real (supervisor, gateway and member processes,
`.horde/` ledgers, REPORT.md) except the model: the stub server on 127.0.0.1 plays
`policy.build_plans`. The run is flagged `demo`, which makes TASK.md, MANIFEST.json,
SUMMARY.md and REPORT.md name the demo model, so its output never passes for an LLM's.

Hosting: `prepare_demo()` returns what a host needs (workdir, request, settings, stub);
`host_demo` builds a `Supervisor` on it and hosts it as `horde-tui run` does
(`hosting.host`: the app or one line per event); the stub is closed afterwards.

The sample is copied into a fresh temporary directory that is kept by default (its path
is printed), because reading the ledgers and reports afterwards is the point of a demo.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import NamedTuple

from horde_tui.app.hosting import host
from horde_tui.common.settings import Settings, load_settings
from horde_tui.demo.policy import DEMO_PROMPT, Timing, demo_policy
from horde_tui.demo.sloppy import SLOPPY_MEMBERS, SLOPPY_PROMPT, sloppy_policy
from horde_tui.stubmodel import DEMO_KEY, StubThread, demo_stub
from horde_tui.supervisor.setup import RunRequest
from horde_tui.supervisor.summary import DEMO_MODEL

MEMBERS = 4
"""Three workers and the verifier (`assign_roles` makes the last of 3+ the verifier)."""
_SKIP = frozenset({"__pycache__"})


class PreparedDemo(NamedTuple):
    """Everything a host needs to run the demo; the host must `stub.close()` afterwards."""

    workdir: Path
    request: RunRequest
    settings: Settings
    stub: StubThread


def sample_files() -> Traversable:
    """The bundled sample project (package data, so it ships in the wheel)."""
    return resources.files("horde_tui.demo") / "sample"


def copy_tree(source: Traversable, dest: Path) -> None:
    """Copy a package-data tree; works for any loader, not only files on disk."""
    dest.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name in _SKIP or entry.name.endswith(".pyc"):
            continue
        if entry.is_dir():
            copy_tree(entry, dest / entry.name)
        else:
            (dest / entry.name).write_bytes(entry.read_bytes())


def prepare_demo(
    speed: float = 1.0,
    parent: Path | None = None,
    policy_name: str = "demo",
    tool_protocol: str | None = None,
) -> PreparedDemo:
    """Copy the sample to a new temp dir (under `parent` if given), start the demo model
    playing `policy_name` (`demo`: the four-member review; `sloppy`: three careless
    members, `demo/sloppy.py`); `tool_protocol` `json` makes the gateway speak
    its text protocol to it, as to a model without native tool calls.

    Settings come only from here, never from the user's HORDE_* variables or config: a
    configured real model must not be mixed into a run labelled as the demo model.
    """
    # Both raise ValueError on a bad speed, before any side effect.
    if policy_name == "sloppy":
        policy = sloppy_policy(speed)
        request = RunRequest(SLOPPY_PROMPT, SLOPPY_MEMBERS, verifier=False, demo=True)
    else:
        policy = demo_policy(speed)
        request = RunRequest(DEMO_PROMPT, MEMBERS, demo=True)
    workdir = Path(tempfile.mkdtemp(prefix="horde-demo-", dir=parent)).resolve()
    try:
        copy_tree(sample_files(), workdir)
        stub = demo_stub(policy)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    overrides = {"model": stub.model, "api_base": stub.api_base, "api_key": DEMO_KEY}
    if tool_protocol is not None:
        overrides["tool_protocol"] = tool_protocol
    settings = load_settings(environ={}, overrides=overrides)
    return PreparedDemo(workdir, request, settings, stub)


def _err(message: str, code: int = 2) -> int:
    print(f"horde-tui demo: {message}", file=sys.stderr)
    return code


def host_demo(demo: PreparedDemo, headless: bool, hordes: int = 1) -> tuple[int, Path]:
    """Run the prepared demo (`hosting.host`: the app on a terminal unless `headless`,
    else one printed line per event); return (exit code, REPORT.md). With `hordes` > 1
    the demo is a swarm: the demo model also plays the planner and the merge helper.
    The caller closes `demo.stub` afterwards."""
    if hordes > 1:
        from horde_tui.supervisor.swarm import SwarmSupervisor

        swarm = SwarmSupervisor(demo.workdir, demo.request, demo.settings, hordes)
        intro = f"swarm {swarm.swarm_id}: {hordes} hordes of {MEMBERS} members, model {DEMO_MODEL}"
        return host(swarm, intro, headless=True), swarm.swarm_dir / "REPORT.md"
    from horde_tui.supervisor.run import Supervisor

    sup = Supervisor(demo.workdir, demo.request, demo.settings)
    intro = f"run {sup.run_id}: {demo.request.count} members, model {DEMO_MODEL}"
    return host(sup, intro, headless=headless), sup.run_dir / "REPORT.md"


def run_demo(
    headless: bool = True,
    speed: float = 1.0,
    keep: bool = True,
    hordes: int = 1,
    policy_name: str = "demo",
    tool_protocol: str | None = None,
) -> int:
    """Run the demo; return the run's exit status (its outcome's, as `run` exits).

    The app hosts it when standard output is a terminal and `headless` is not asked for;
    a swarm demo (`hordes` > 1) always runs headless.
    """
    if os.environ.get("HORDE_GATEWAY_URL") and os.environ.get("HORDE_RUN"):
        return _err("refused: a member may not start a nested horde", 1)
    try:
        Timing(speed)
    except ValueError as exc:
        return _err(str(exc))
    if policy_name == "sloppy" and hordes > 1:
        return _err("the sloppy policy plays one horde; drop --hordes")
    demo = prepare_demo(speed, policy_name=policy_name, tool_protocol=tool_protocol)
    print(f"demo: sample project copied to {demo.workdir}", flush=True)
    print(
        f"demo: the model is the {DEMO_MODEL}, served on {demo.stub.api_base}; "
        "no provider key is used",
        flush=True,
    )
    try:
        code, report = host_demo(demo, headless, hordes)
    finally:
        demo.stub.close()
    # A swarm's hordes keep their own ledgers beside the swarm's REPORT.md.
    ledgers = (
        ".horde/FINDINGS.md, .horde/BOARD.md"
        if hordes == 1
        else "each horde's FINDINGS.md and BOARD.md (in hN/ beside it)"
    )
    if keep:
        print(
            f"demo: kept {demo.workdir}; read {report.relative_to(demo.workdir)} and "
            f"{ledgers} there (the model was the demo model)"
        )
    else:
        if report.exists():
            print("\n" + report.read_text(encoding="utf-8"))
        shutil.rmtree(demo.workdir, ignore_errors=True)
        print(f"demo: removed {demo.workdir} (--no-keep)")
    return code
