"""Run setup: the run id, roles, TASK.md, SYSTEM.md, PLAN.md, MANIFEST.json, plan seeding.

Everything a later reader needs to know what was run is written before any member
starts: the prompt and configuration (TASK.md, cited by sha256 in the ledgers'
`## Run` headings), the protocol prompt (SYSTEM.md) and hashes of both plus AGENTS.md
and the code version (MANIFEST.json), so runs can be compared and scored.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde_tui import __version__
from horde_tui.common import prompts
from horde_tui.common.settings import Settings, settings_record
from horde_tui.presets import Preset, Role, deal_roles, persona_text
from horde_tui.store import runs
from horde_tui.store.paths import HordePaths, atomic_write_text, sha256_file
from horde_tui.store.state import LedgerState
from horde_tui.store.store import Decision, HordeStore
from horde_tui.supervisor import lessons


@dataclass(frozen=True)
class MemberSpec:
    """A member slot: its name, role, and plan layer(s) if the run is partitioned."""

    name: str
    role: str = "member"
    layers: tuple[str, ...] = ()


@dataclass
class RunRequest:
    """What the user asked for."""

    prompt: str
    count: int
    layers: list[str] = field(default_factory=list)
    verifier: bool = True
    until_stop: bool = False
    demo: bool = False
    siblings: dict[str, Path] = field(default_factory=dict)
    """In a swarm: the other hordes' directories (`h2` -> path), listed in SYSTEM.md and
    given to members to read."""
    preset: Preset | None = None
    """A role preset (`--preset`): each member's persona, written to `personas/`."""
    baseline: str = ""
    """`--baseline RUN|last`: REPORT.md gets a Delta section against that run."""
    forked_from: str = ""
    """`RUN@E#` when `horde-tui fork` started this run from another's ledgers."""


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


def parse_layers(text: str) -> list[str]:
    """`plan` layers: `a; b; c` (semicolons), empty parts dropped."""
    return [part.strip() for part in text.split(";") if part.strip()]


def assign_roles(request: RunRequest) -> list[MemberSpec]:
    """Plan mode deals layers round-robin; members without one verify. Otherwise a run of
    three or more makes its last member the verifier (unless `--no-verifier`)."""
    names = [f"member-{i}" for i in range(1, request.count + 1)]
    if request.layers:
        dealt: dict[str, list[str]] = {n: [] for n in names}
        for i, layer in enumerate(request.layers):
            dealt[names[i % len(names)]].append(layer)
        return [MemberSpec(n, "member" if dealt[n] else "verifier", tuple(dealt[n])) for n in names]
    specs = [MemberSpec(n) for n in names]
    if request.verifier and request.count >= 3:
        specs[-1] = MemberSpec(names[-1], "verifier")
    return specs


def code_version() -> dict[str, Any]:
    """The package version and, when the package runs from a git checkout, the commit
    (`-dirty` when modified). Only the package's own checkout counts: an installed copy
    inside some other repository (a venv in a project) names no commit."""
    root = Path(__file__).resolve().parents[2]
    info: dict[str, Any] = {"version": __version__, "commit": None}
    if not (root / ".git").exists():
        return info
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if commit.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            info["commit"] = commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def personas(request: RunRequest, specs: list[MemberSpec]) -> dict[str, Role]:
    """Each member's persona role under the request's preset (none without one)."""
    return deal_roles(request.preset, specs) if request.preset is not None else {}


def task_text(request: RunRequest, settings: Settings, specs: list[MemberSpec]) -> str:
    dealt = personas(request, specs)
    roles = ", ".join(
        f"{s.name} ({s.role}: {dealt[s.name].name})" if s.name in dealt else f"{s.name} ({s.role})"
        for s in specs
    )
    lines = [
        "# Task",
        "",
        request.prompt.strip(),
        "",
        "## Configuration",
        "",
        f"- members: {request.count} ({roles})",
        f"- model: {settings.gateway.model}{' (demo model: scripted, not a real LLM)' if request.demo else ''}",
        f"- thinking: {settings.gateway.thinking}",
        f"- mode: {'plan' if request.layers else 'open'}{', until stop' if request.until_stop else ''}",
    ]
    if request.layers:
        lines.append(f"- layers: {'; '.join(request.layers)}")
    if request.preset is not None:
        lines.append(f"- preset: {request.preset.name}")
    return "\n".join(lines) + "\n"


def plan_text(specs: list[MemberSpec]) -> str:
    lines = ["# Plan", "", "Each layer is a seeded idea owned by one member.", ""]
    for s in specs:
        if s.layers:
            lines.append(f"- {s.name}: {'; '.join(s.layers)}")
        else:
            lines.append(f"- {s.name}: verifier (no layer)")
    return "\n".join(lines) + "\n"


def write_run_files(
    horde_dir: Path,
    run_id: str,
    request: RunRequest,
    settings: Settings,
    specs: list[MemberSpec],
) -> Path:
    """Create the run directory and its documents; return the run directory."""
    run_dir = runs.run_dir(horde_dir, run_id)
    (run_dir / "control").mkdir(parents=True, exist_ok=True)
    runs.sessions_dir(run_dir).mkdir(exist_ok=True)
    atomic_write_text(run_dir / "TASK.md", task_text(request, settings, specs))
    top, lessons_sha256 = lessons.read_top(horde_dir) if settings.supervisor.lessons else ([], None)
    atomic_write_text(run_dir / "SYSTEM.md", prompts.system_prompt(request.siblings, top))
    if request.layers:
        atomic_write_text(run_dir / "PLAN.md", plan_text(specs))
    dealt = personas(request, specs)
    if dealt:
        # Each member's system prompt ends with its file (`prompts.with_persona`).
        assert request.preset is not None
        for name, role in dealt.items():
            path = prompts.persona_path(run_dir, name)
            path.parent.mkdir(exist_ok=True)
            atomic_write_text(path, persona_text(request.preset, role))
    if request.until_stop:
        # The tool reads this: a validated answer is banked and the proposal slot reopens.
        atomic_write_text(run_dir / ".until-stop", "until stop\n")
    config = settings_record(settings)
    manifest = {
        "run": run_id,
        "created": time.time(),
        "code": code_version(),
        "model": settings.gateway.model,
        "demo_model": request.demo,
        "members": [
            s.__dict__
            | {"layers": list(s.layers)}
            | ({"persona": dealt[s.name].name} if s.name in dealt else {})
            for s in specs
        ],
        "hashes": {
            "TASK.md": sha256_file(run_dir / "TASK.md"),
            "SYSTEM.md": sha256_file(run_dir / "SYSTEM.md"),
            "AGENTS.md": sha256_file(HordePaths(horde_dir).workdir / "AGENTS.md"),
            # the file the lessons in SYSTEM.md came from, as it was read (None: not given)
            lessons.LESSONS_FILE: lessons_sha256 if top else None,
        },
        "lessons": len(top),
        "config": config,
        "request": {
            "count": request.count,
            "layers": request.layers,
            "verifier": request.verifier,
            "until_stop": request.until_stop,
            "preset": request.preset.name if request.preset is not None else None,
            "baseline": request.baseline,
        },
        **({"forked_from": request.forked_from} if request.forked_from else {}),
        "parent_pid": os.getpid(),
    }
    atomic_write_text(run_dir / "MANIFEST.json", json.dumps(manifest, indent=2) + "\n")
    return run_dir


def seed_plan(horde_dir: Path, run_id: str, specs: list[MemberSpec]) -> dict[str, list[str]]:
    """Add one idea per layer (as the parent) and claim it as its member; return the ids.

    Written as ledger records directly rather than through `idea`: two short layer names
    ("api", "db") would otherwise be merged by the duplicate check, and the partition is
    the user's decision, not a member's submission.
    """
    parent = HordeStore(horde_dir, "parent")
    parent.ensure_run(run_id, None)
    owned: dict[str, list[str]] = {}
    for spec in specs:
        member = HordeStore(horde_dir, spec.name)
        for layer in spec.layers:
            text = f"Layer: {layer}"

            def add(state: LedgerState, text: str = text) -> Decision:
                new_id = state.next_id("ideas")
                return Decision(
                    True,
                    f"ok {new_id}",
                    new_id,
                    [{"op": "idea.add", "id": new_id, "text": text}],
                    "seeded",
                )

            added = parent.transact(run_id, "idea", {"text": text}, add)
            assert added.id is not None

            def claim(state: LedgerState, ident: str = added.id) -> Decision:
                return Decision(
                    True,
                    f"ok {ident} claimed",
                    ident,
                    [{"op": "idea.claim", "id": ident}],
                    "claimed",
                )

            member.transact(run_id, "claim", {"id": added.id}, claim)
            owned.setdefault(spec.name, []).append(added.id)
    return owned
