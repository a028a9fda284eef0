"""The test suite's own layout: shared helpers have one home, `tests/support/`.

A test module that imports from another test module couples two files that look
independent (renaming or trimming one breaks the other, and pytest may collect the
imported module's tests and fixtures twice). So test modules import shared fixtures and
helpers only from `tests/support/` (or `conftest.py`, or the `tests/helpers/` scripts),
and every other top-level file under `tests/` is a test module.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from conftest import workers_for
from support.paths import TESTS

LOCAL_HOMES = ("support", "helpers", "conftest")
"""Where a test module may import shared code from (besides installed packages)."""


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports (at any depth: inside functions and `try` too),
    with `tests.` stripped, so `from tests.x import y` and `from x import y` read alike."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name.removeprefix("tests.")) for name in names]
    return found


def suite_modules() -> list[Path]:
    """Every test module, in whichever folder it lives."""
    return sorted(
        p
        for p in TESTS.rglob("test_*.py")
        if not {"benchmarks", "helpers", "support"} & set(p.parts)
    )


def local_modules() -> set[str]:
    """The names a module under `tests/` can be imported by (pytest puts `tests/` and
    each test module's folder on `sys.path`): top-level files and folders, test modules."""
    files = {p.stem for p in TESTS.glob("*.py")} | {p.stem for p in suite_modules()}
    folders = {p.name for p in TESTS.iterdir() if (p / "__init__.py").exists()}
    return files | folders


def test_test_modules_import_shared_helpers_only_from_support() -> None:
    local = local_modules()
    sources = [*TESTS.glob("*.py"), *suite_modules(), *TESTS.glob("support/*.py")]
    wrong = [
        f"{path.relative_to(TESTS)}:{line} imports {module}"
        for path in sorted(sources)
        for line, module in imported_modules(path)
        if (top := module.split(".")[0]) in local and top not in LOCAL_HOMES
    ]
    assert wrong == [], "import these from tests/support/ instead:\n" + "\n".join(wrong)


def test_tests_live_in_folders_that_mirror_the_code() -> None:
    """`tests/unit/<package>/` for one package of `horde_tui/`, `tests/app/` for the app,
    `tests/e2e/` for whole runs with real processes, `tests/project/` for checks of the
    repository as a whole; only `conftest.py` sits at the top (a helper module there
    would be a second home for shared code)."""
    assert [p.name for p in TESTS.glob("*.py")] == ["conftest.py"]
    packages = {
        p.name for p in (TESTS.parent / "horde_tui").iterdir() if (p / "__init__.py").exists()
    }
    homes = {"app", "e2e", "project"} | {f"unit/{name}" for name in packages}
    misplaced = [
        str(path.relative_to(TESTS))
        for path in suite_modules()
        if path.parent.relative_to(TESTS).as_posix() not in homes
    ]
    assert misplaced == []


E2E_MARK = re.compile(r"(?<![\"'])pytest\.mark\.e2e\b(?![\"'])")
"""The marker in code (a decorator, a `pytestmark`), not a mention of it in a string."""


def test_the_e2e_marker_is_the_e2e_folder() -> None:
    """A test marked `e2e` lives in `tests/e2e/` (conftest marks that folder's tests), so
    `pytest -m e2e` and `pytest tests/e2e` run the same tests."""
    astray = [
        str(path.relative_to(TESTS))
        for path in suite_modules()
        if E2E_MARK.search(path.read_text()) and path.parent.name != "e2e"
    ]
    assert astray == []


def test_every_test_module_holds_tests() -> None:
    """A `test_*` file with no test in it is a helper module in the wrong place."""
    empty = [
        path.name
        for path in suite_modules()
        if not any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")
            for node in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert empty == []


def test_the_slow_and_e2e_markers_are_registered_and_enforced() -> None:
    """`--strict-markers`: a misspelt marker is an error rather than a test run by default."""
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    pytest_config = config["tool"]["pytest"]["ini_options"]
    registered = {line.split(":")[0] for line in pytest_config["markers"]}
    assert {"slow", "e2e"} <= registered
    assert "--strict-markers" in pytest_config["addopts"]


def spawned_cli(path: Path) -> list[int]:
    """Lines of `path` that spell the CLI's command line themselves: a list or tuple that
    starts with `sys.executable, "-m", "horde_tui"`, or `{sys.executable} -m horde_tui ` in
    an f-string (a shell command)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.List | ast.Tuple):
            words = [ast.unparse(e) for e in node.elts[:3]]
            starred = [ast.unparse(e) for e in node.elts[:2]]
            if words == ["sys.executable", "'-m'", "'horde_tui'"] or (
                starred[:1] == ["sys.executable"]
                and starred[1:2]
                and starred[1].startswith("*('-m', 'horde_tui'")
            ):
                found.append(node.lineno)
        elif isinstance(node, ast.JoinedStr) and "-m horde_tui " in ast.unparse(node):
            if "sys.executable" in ast.unparse(node):
                found.append(node.lineno)
    return found


def test_the_cli_is_spawned_through_one_helper() -> None:
    """A test runs `horde-tui ARGS` as `support.cli.cli_argv(ARGS)` (or through `cli`,
    `headless`), never by spelling the interpreter and module again: one place to change
    how the suite starts the CLI."""
    helper = TESTS / "support" / "cli.py"
    sources = [*TESTS.glob("*.py"), *TESTS.glob("support/*.py")]
    copies = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(sources)
        for line in spawned_cli(path)
        if path != helper
    ]
    assert copies == [], "use support.cli.cli_argv:\n" + "\n".join(copies)
    assert len(spawned_cli(helper)) == 1


def test_a_plain_pytest_runs_on_three_workers_and_one_file_in_one_process() -> None:
    """The default and the slow run use three pytest-xdist workers (on the CI machine's 2
    cores: conftest's WORKERS says why), scheduled by `loadgroup` so conftest's
    `xdist_group` marks hold; a single file (or tests of one file) runs in one process,
    where the workers' start-up costs more than they save."""
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    addopts = config["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert addopts[addopts.index("-n") + 1] == "auto"
    assert addopts[addopts.index("--dist") + 1] == "loadgroup"
    test_extra = config["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("pytest-xdist") for req in test_extra)

    one = str(TESTS / "unit" / "common" / "test_fence.py")
    assert workers_for([str(TESTS)]) == workers_for([one, str(TESTS / "unit" / "commands" / "test_init.py")]) == 3
    assert workers_for([one]) == workers_for([f"{one}::test_x", f"{one}::test_y"]) == 0
