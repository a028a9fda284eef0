"""No import cycle between the modules of `horde_tui/` (issue 14 removed the last ones),
and the import contracts catch the imports README forbids.

Every import counts, wherever it sits: a function-level import or one under
`TYPE_CHECKING` ties two modules together as surely as a top-level one (it only moves the
cycle out of sight). The graph is grimp's, the one `lint-imports` checks the layer
contracts on (`[tool.importlinter]` in pyproject.toml, run by `.ci/run`). A contract that
cannot fail checks nothing, so each rule is shown failing on a scratch copy of the
package with one bad import planted in it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from support.imports import import_cycles, package_graph
from support.paths import REPO

ROOT = REPO
"""The source tree CI lints: `horde_tui/` and the contracts in pyproject.toml."""
HELPERS = ROOT / "tests" / "helpers"


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
    assert graph.direct_import_exists(
        importer="horde_tui.commands.cli", imported="horde_tui.commands.runcli"
    )
    assert graph.direct_import_exists(
        importer="horde_tui.app.app", imported="horde_tui.common.settings"
    )


def test_no_import_cycle() -> None:
    graph = package_graph()
    assert "horde_tui.widgets.event_log" in graph.modules, "the widgets are part of the graph"
    cycles = [sorted(cycle) for cycle in import_cycles(graph, graph.modules)]
    assert not cycles, f"import cycles between these modules (break them): {cycles}"


# -- the contracts catch what README forbids ------------------------------------------------

NO_LAYER = "horde_tui/extra/__init__.py"
"""A new package, placed in no layer."""
LAZY = "\n\ndef _planted() -> None:\n    import {imported}\n"
TYPED = "\n\nif TYPE_CHECKING:\n    import {imported}\n"
TOP = "\nimport {imported}\n"

PLANTS: tuple[tuple[str, str, str], ...] = (
    # (importer, imported, how): each a real risk, each against a rule README states.
    # A member is small and reaches the gateway over HTTP only.
    ("member.loop", "horde_tui.gateway.backend", LAZY),
    ("member.tools", "horde_tui.supervisor.run", TOP),
    ("member.loop", "aiohttp", LAZY),
    ("member.loop", "horde_tui.mcp.server", TOP),
    ("member.config", "horde_tui.common.httpserve", LAZY),
    ("member.confirm", "horde_tui.supervisor.confirm", TYPED),
    # Processes start each other by module name; none imports another.
    ("gateway.app", "horde_tui.supervisor.setup", TOP),
    ("gateway.backend", "horde_tui.protocol.dispatch", LAZY),
    ("supervisor.run", "horde_tui.mcp.server", LAZY),
    ("supervisor.cleanup", "horde_tui.member.tools", TOP),
    ("mcp.server", "horde_tui.supervisor.run", LAZY),
    ("stubmodel.server", "horde_tui.gateway.app", TOP),
    # The supervisor and the core never reach the UI.
    ("supervisor.report", "horde_tui.view.run", LAZY),
    ("view.source", "textual", TYPED),
    # The store and the protocol, a run's contract on disk.
    ("store.state", "horde_tui.common.settings", LAZY),
    ("store.members", "horde_tui.common.prompts", TOP),
    ("store.jsonl", "horde_tui.common.refusal", LAZY),
    ("store.runs", "horde_tui.demo.run", LAZY),
    ("store.usage", "horde_tui.stubmodel.server", TOP),
    ("store.graph", "horde_tui.eval.score", LAZY),
    ("store.store", "litellm", LAZY),
    ("protocol.dispatch", "horde_tui.store.transcript", LAZY),
    ("protocol.rules", "horde_tui.common.settings", TOP),
    # Siblings and the bottom layer.
    ("widgets.member_table", "horde_tui.web.pages", LAZY),
    ("common.reaper", "horde_tui.supervisor.processes", LAZY),
    ("sandbox.shell", "horde_tui.member.loop", LAZY),
)


@pytest.fixture(scope="module")
def lint_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Each plant's lint (exit status, report) on a scratch copy of `horde_tui/` (its
    widgets and styles links followed) and pyproject.toml, where the copy comes first on
    the path; all in one process (`lint_plants.py`). `""`: the copy as it is."""
    root = tmp_path_factory.mktemp("layers")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "horde_tui", root / "horde_tui", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", root)
    plants = [["", ""], [NO_LAYER, '"""A package nobody placed."""\n']]
    plants += [
        [module_file(importer), plant_text(root, importer, imported, how)]
        for importer, imported, how in PLANTS
    ]
    done = subprocess.run(
        [sys.executable, str(HELPERS / "lint_plants.py")],
        cwd=root,
        input=json.dumps(plants),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    names = ["", NO_LAYER] + [f"{a}->{b}" for a, b, _ in PLANTS]
    return dict(zip(names, map(tuple, json.loads(done.stdout)), strict=True))


def test_the_unplanted_copy_keeps_every_contract(lint_reports: dict[str, tuple[int, str]]) -> None:
    """The copy passes as the package does, so a plant's failure is the plant's."""
    code, report = lint_reports[""]
    assert code == 0, report
    assert " BROKEN" not in report and " KEPT" in report


def module_file(module: str) -> str:
    return f"horde_tui/{module.replace('.', '/')}.py"


def plant_text(root: Path, importer: str, imported: str, how: str) -> str:
    """What to append to `importer` (with `TYPE_CHECKING` imported when it lacks it)."""
    source = (root / module_file(importer)).read_text()
    typing = "\nfrom typing import TYPE_CHECKING\n" if "TYPE_CHECKING" not in source else ""
    return (typing if how == TYPED else "") + how.format(imported=imported)


@pytest.mark.parametrize(
    ("importer", "imported"),
    [(a, b) for a, b, _ in PLANTS],
    ids=[f"{a}->{b}" for a, b, _ in PLANTS],
)
def test_a_planted_bad_import_breaks_a_contract(
    lint_reports: dict[str, tuple[int, str]], importer: str, imported: str
) -> None:
    """Issue 31: the layers read `:` siblings as free to import each other and placed
    18 packages in no layer; the contracts before it let 20 of these 26 through. Each
    one, planted at the top, inside a function or under `TYPE_CHECKING`, fails CI."""
    code, report = lint_reports[f"{importer}->{imported}"]
    assert code == 1, report
    assert f"horde_tui.{importer} -> {imported}" in report, report


def test_a_package_in_no_layer_breaks_the_layers(lint_reports: dict[str, tuple[int, str]]) -> None:
    """Every child of horde_tui sits in a layer (`exhaustive`): a new one must be placed."""
    code, report = lint_reports[NO_LAYER]
    assert code == 1 and "horde_tui.extra" in report, report
