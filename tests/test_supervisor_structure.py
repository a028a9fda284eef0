"""The supervisor's structure: phases reach the run only through `RunContext`, and no
import cycle runs through `horde_tui/supervisor/` (or the graph and clusters it shares
with the view).

Both read the source (AST), not the running program: an import inside a function or
under `TYPE_CHECKING` is still a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import horde_tui
from horde_tui.settings import load_settings
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import RunRequest

PACKAGE = Path(horde_tui.__file__).parent
SUPERVISOR = PACKAGE / "supervisor"
PHASES = ("cleanup", "finalize", "handoff", "repair", "resume", "reviews", "watch")
"""Modules whose functions take the run as a `RunContext` (named `sup`)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """horde_tui module -> the horde_tui modules it imports, anywhere in its source."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in paths else node.module)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in paths and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_runs_through_the_supervisor() -> None:
    touched = ("horde_tui.supervisor", "horde_tui.store.graph", "horde_tui.store.clusters")
    bad = [c for c in cycles(import_graph()) if any(m.startswith(touched) for m in c)]
    assert bad == []


VOCABULARY = frozenset(
    {
        "horde_tui.supervisor.context",  # HordeControls, the controls a supervisor takes
        "horde_tui.supervisor.controls",  # the control client (control/ requests)
        "horde_tui.supervisor.observe",  # SupervisorEvent, what a run reports
        "horde_tui.supervisor.outcome",  # RunSummary, how it ended
        "horde_tui.supervisor.processes",  # MemberState, the one member state type
        "horde_tui.supervisor.targets",  # the member-target syntax a control takes
    }
)
"""What the view may take from the supervisor: the run's vocabulary (types a run source
hands the screens, the control client), never its behaviour. Moving these below the
supervisor is still open (see the issue 14 note)."""


def test_the_view_imports_neither_the_supervisor_nor_the_member() -> None:
    """The view reads runs from disk: no phase, no graph or cluster builder, no member
    loop; only the supervisor's vocabulary (`VOCABULARY`)."""
    graph = import_graph()
    wrong = {
        (name, dep)
        for name, deps in graph.items()
        if name.startswith("horde_tui.view")
        for dep in deps
        if dep.startswith(("horde_tui.supervisor", "horde_tui.member")) and dep not in VOCABULARY
    }
    assert wrong == set()


def test_the_supervisor_imports_no_view() -> None:
    """The layers run store < protocol < supervisor < view: what both draw (the graph,
    the finding clusters) sits in store/, a session's figures (`SessionStats`) in
    `horde_tui/transcript.py`."""
    graph = import_graph()
    wrong = {
        (name, dep)
        for name, deps in graph.items()
        if name.startswith("horde_tui.supervisor")
        for dep in deps
        if dep.startswith(("horde_tui.view", "horde_tui.screens", "horde_tui.widgets"))
    }
    assert wrong == set()


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
