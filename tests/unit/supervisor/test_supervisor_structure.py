"""The supervisor's structure: phases reach the run only through `RunContext`, and the
view takes only the supervisor's vocabulary (the import graph is `support.imports`';
the layers in pyproject.toml keep the supervisor off the view, `test_layers` forbids
any cycle). The private-access scan reads the source (AST)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from support.imports import imports_from

import horde_tui
from horde_tui.common.settings import load_settings
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

PACKAGE = Path(horde_tui.__file__).parent
SUPERVISOR = PACKAGE / "supervisor"
PHASES = ("cleanup", "finalize", "handoff", "repair", "resume", "reviews", "watch")
"""Modules whose functions take the run as a `RunContext` (named `sup`)."""


VOCABULARY = frozenset(
    {
        "horde_tui.supervisor.context",  # StopState, where a run stands in stopping
        "horde_tui.supervisor.observe",  # SupervisorEvent, what a run reports
        "horde_tui.supervisor.processes",  # MemberState, the one member state type
        # The figures REPORT.md prints and the run screen shows live: the cost per
        # finding (`finding_yield`, `Forecast`) and the baseline Delta. One copy for
        # both; they read the ledger and the files, never the run's processes.
        "horde_tui.supervisor.forecast",
        "horde_tui.supervisor.baseline",
    }
)
"""What the view may take from the supervisor: the run's vocabulary (types a run source
hands the screens), never its behaviour. The control files, their targets and the
outcome table sit below, in `protocol/`, where the member reaches them too."""


def test_the_view_imports_neither_the_supervisor_nor_the_member() -> None:
    """The view reads runs from disk: no phase, no graph or cluster builder, no member
    loop; only the supervisor's vocabulary (`VOCABULARY`)."""
    imports = imports_from("horde_tui.view", ("horde_tui.supervisor", "horde_tui.member"))
    assert {(name, dep) for name, dep in imports if dep not in VOCABULARY} == set()


def private_reaches(path: Path) -> list[str]:
    """`x._name` where x is not `self`, `cls` or `super()`: another object's private
    member (module-level privates of the same file included, which none of these use)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        if not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
            continue
        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_private_access_scan_finds_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    text = "def f(sup):\n    sup._spawn('x')\n    self._ok = 1\n    super()._fine()\n"
    probe.write_text(text, encoding="utf-8")
    assert private_reaches(probe) == ["probe.py:2: sup._spawn"]


def test_no_supervisor_module_reaches_another_objects_private_member() -> None:
    found = [hit for path in sorted(SUPERVISOR.glob("*.py")) for hit in private_reaches(path)]
    assert found == []


def _context_names() -> set[str]:
    from horde_tui.supervisor.context import HelperHost, RunContext

    names: set[str] = set()
    for proto in (HelperHost, RunContext):
        names |= set(proto.__annotations__)
        names |= {n for n, _ in inspect.getmembers(proto) if not n.startswith("_")}
    return names


def test_phases_use_only_the_run_context() -> None:
    """Every attribute a phase function reads on its `sup` is part of `RunContext`."""
    allowed = _context_names()
    used: dict[str, set[str]] = {}
    for phase in PHASES:
        tree = ast.parse((SUPERVISOR / f"{phase}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "sup"
            ):
                used.setdefault(phase, set()).add(node.attr)
    assert used, "the phases take the run as `sup`"
    outside = {p: sorted(attrs - allowed) for p, attrs in used.items() if attrs - allowed}
    assert outside == {}


def test_the_supervisor_is_a_run_context(tmp_path: Path) -> None:
    from horde_tui.supervisor.context import HelperHost, RunContext

    sup = Supervisor(tmp_path, RunRequest("Build", 2), load_settings(environ={}), run_id="r1")
    assert isinstance(sup, RunContext) and isinstance(sup, HelperHost)
    missing = sorted(n for n in _context_names() if not hasattr(sup, n))
    assert missing == []


def test_the_swarm_supervisor_hosts_helpers(tmp_path: Path) -> None:
    """The planner and merge helpers run through `finalize.run_helper` like a run's."""
    from horde_tui.supervisor.context import HelperHost, RunContext
    from horde_tui.supervisor.swarm import SwarmSupervisor

    swarm = SwarmSupervisor(tmp_path, RunRequest("Build", 2), load_settings(environ={}), 2)
    assert isinstance(swarm, HelperHost) and not isinstance(swarm, RunContext)
