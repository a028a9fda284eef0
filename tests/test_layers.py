"""No import cycle between the modules of `horde_tui/` (issue 14 removed the last ones).

Every import counts, wherever it sits: a function-level import or one under
`TYPE_CHECKING` ties two modules together as surely as a top-level one (it only moves the
cycle out of sight). The graph is grimp's, the one `lint-imports` checks the layer
contracts on (`[tool.importlinter]` in pyproject.toml, run by `.ci/run`).

`KNOWN_CYCLES` only shrinks: a new cycle fails, and so does an entry that no longer
exists (a cycle broken in part shows up as both: replace the entry with what is left).
"""

from __future__ import annotations

from collections.abc import Iterable

import grimp

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Empty since issue 14: any cycle fails. Add one only with the issue that removes it."""


def import_cycles(graph: grimp.ImportGraph, modules: Iterable[str]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.add(frozenset(component))

    for module in sorted(modules):
        if module not in order:
            visit(module)
    return cycles


def test_the_cycle_finder_finds_a_cycle_and_nothing_else() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.c", imported="p.d")
    assert import_cycles(graph, graph.modules) == {frozenset({"p.a", "p.b", "p.c"})}


def test_no_import_cycle_beyond_the_known_ones() -> None:
    graph = grimp.build_graph("horde_tui", cache_dir=None)
    assert "horde_tui.widgets.event_log" in graph.modules, "the widgets are part of the graph"
    cycles = import_cycles(graph, graph.modules)
    new = [sorted(cycle) for cycle in cycles - KNOWN_CYCLES]
    gone = [sorted(cycle) for cycle in KNOWN_CYCLES - cycles]
    assert not new, f"import cycles between these modules (break them): {new}"
    assert not gone, f"these cycles are gone: remove them from KNOWN_CYCLES: {gone}"
