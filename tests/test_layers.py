"""No import cycle between the modules of `horde_tui/` (issue 14 removed the last ones).

Every import counts, wherever it sits: a function-level import or one under
`TYPE_CHECKING` ties two modules together as surely as a top-level one (it only moves the
cycle out of sight). The graph is grimp's, the one `lint-imports` checks the layer
contracts on (`[tool.importlinter]` in pyproject.toml, run by `.ci/run`).
"""

from __future__ import annotations

import grimp
from support.imports import import_cycles, package_graph


def test_the_cycle_finder_finds_a_cycle_and_nothing_else() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.c", imported="p.d")
    assert import_cycles(graph, graph.modules) == {frozenset({"p.a", "p.b", "p.c"})}


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    """What hid the old app cycle must count: an import inside a function and one under
    `TYPE_CHECKING` (a cycle test blind to them passes vacuously)."""
    graph = package_graph()
    assert graph.direct_import_exists(importer="horde_tui.commands.cli", imported="horde_tui.commands.runcli")
    assert graph.direct_import_exists(importer="horde_tui.app.app", imported="horde_tui.common.settings")


def test_no_import_cycle() -> None:
    graph = package_graph()
    assert "horde_tui.widgets.event_log" in graph.modules, "the widgets are part of the graph"
    cycles = [sorted(cycle) for cycle in import_cycles(graph, graph.modules)]
    assert not cycles, f"import cycles between these modules (break them): {cycles}"
