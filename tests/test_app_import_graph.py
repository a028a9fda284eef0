"""The app's layer has no import cycle: `app`, `hosting`, `runcli`, `launch`, `demo/*` and
`screens/*` import each other one way only (the app imports screens, screens never the app).

The graph is read from the source (every `import` statement, at module level, inside
functions and under `TYPE_CHECKING` alike), so a lazy import that hides a cycle from
the interpreter still fails here. Any cycle of `horde_tui` (and the `widgets` package)
that passes through one of these modules counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import horde_tui

PACKAGE = Path(horde_tui.__file__).resolve().parent
ROOTS = [PACKAGE, PACKAGE.parent / "widgets"]
APP_LAYER = ("app", "hosting", "quitting", "watching", "runcli", "launch", "demo", "screens")
"""Module names under `horde_tui.` (a package counts with everything in it)."""


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every module under the roots."""
    found: dict[str, Path] = {}
    for root in ROOTS:
        if not root.is_dir():
            continue
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name an import statement in `path` names (relative ones resolved)."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the roots it imports (the most specific one named)."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets: set[str] = set()
        for name in imported_names(path, module):
            parts = name.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if parts and ".".join(parts) != module:
                targets.add(".".join(parts))
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def in_app_layer(module: str) -> bool:
    return any(
        module == f"horde_tui.{name}" or module.startswith(f"horde_tui.{name}.")
        for name in APP_LAYER
    )


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    """The reader must not miss what hid the old cycle: an import inside a function and
    one under `TYPE_CHECKING` (a cycle test that cannot see them passes vacuously)."""
    graph = import_graph()
    assert "horde_tui.runcli" in graph["horde_tui.cli"]  # imported inside a function
    assert "horde_tui.settings" in graph["horde_tui.app"]  # under TYPE_CHECKING
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_through_the_app_layer() -> None:
    graph = import_graph()
    assert any(in_app_layer(m) for m in graph)
    bad = [c for c in cycles(graph) if any(in_app_layer(m) for m in c)]
    assert not bad, "import cycles through app/runcli/demo/screens: " + "; ".join(
        " <-> ".join(c) for c in bad
    )
