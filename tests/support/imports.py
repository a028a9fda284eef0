"""The import graph of `horde_tui` (grimp's: every import counts, at module level, inside
a function or under `TYPE_CHECKING`), the one `lint-imports` checks the layer contracts
on, and the cycles in it. Shared by the layer and structure tests."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import grimp


@functools.cache
def package_graph() -> grimp.ImportGraph:
    """The graph of `horde_tui` and the widgets inside it, built once per test run."""
    return grimp.build_graph("horde_tui", cache_dir=None)


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


def imports_from(prefix: str, targets: tuple[str, ...]) -> set[tuple[str, str]]:
    """(importer, imported) pairs: modules under `prefix` importing one under `targets`."""
    graph = package_graph()
    return {
        (module, imported)
        for module in graph.modules
        if module.startswith(prefix)
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith(targets)
    }
