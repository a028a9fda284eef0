"""The design card's `widgets/` and `styles/` live at the top of the repository but belong to
the `horde_tui` package: nothing imports a generic top-level `widgets`, and the app finds its
stylesheet by package path (the wheel's layout is checked by `.ci/run`)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from support.paths import REPO

import horde_tui
from horde_tui.app.app import styles_dir

PACKAGE = Path(horde_tui.__file__).parent
GENERIC_NAMES = {"widgets", "styles"}
MAY_IMPORT_ONE = re.compile(r"\b(?:from|import)\s+(?:widgets|styles)\b")
"""Files without this text cannot import either name: only the others are parsed."""


def top_level_imports_of_generic_names(source: Path) -> list[str]:
    """`import widgets...` / `from widgets... import` lines in one file, as `file:line`."""
    text = source.read_text(encoding="utf-8")
    if not MAY_IMPORT_ONE.search(text):
        return []
    found = []
    for node in ast.walk(ast.parse(text)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name.split(".")[0] in GENERIC_NAMES for name in names):
            found.append(f"{source.relative_to(REPO)}:{node.lineno}")
    return found


def test_nothing_imports_a_top_level_widgets_or_styles() -> None:
    sources = [
        path
        for folder in ("horde_tui", "widgets", "tests")
        for path in sorted((REPO / folder).rglob("*.py"))
        if ".venv" not in path.parts
    ]
    offenders = [line for path in sources for line in top_level_imports_of_generic_names(path)]
    assert not offenders, f"import horde_tui.widgets instead of widgets: {offenders}"


def test_widgets_are_a_subpackage_of_horde_tui() -> None:
    widgets = importlib.import_module("horde_tui.widgets.event_log")
    assert Path(widgets.__file__).parent.parent == PACKAGE
    assert (PACKAGE / "widgets").resolve() == REPO / "widgets", "one copy: the design card's"


def test_the_stylesheet_is_found_by_package_path() -> None:
    assert styles_dir() == PACKAGE / "styles"
    assert (styles_dir() / "app.tcss").is_file()
    assert (PACKAGE / "styles").resolve() == REPO / "styles"


def test_the_web_pages_are_drawn_from_packaged_autoescaped_templates() -> None:
    """Issue 31 item 6: the browser view's markup lives in Jinja2 templates (package data,
    so the wheel carries them: `.ci/run` renders a page from the installed wheel), with
    autoescape on, and `pages.py` keeps the data builders only."""
    from horde_tui.web import pages, render

    templates = PACKAGE / "web" / "templates"
    names = sorted(p.name for p in templates.glob("*.html"))
    assert "document.html" in names and "_macros.html" in names, names
    for name in names:  # each one parses, and escapes what it is given
        render._ENV.get_template(name)
    assert render._ENV.autoescape is True
    shown = render._ENV.get_template("message.html").render(text="<script>x</script>", cls="")
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    source = Path(pages.__file__).read_text(encoding="utf-8")
    assert len(source.splitlines()) < 500, "pages.py holds the data builders, not the markup"
    for name in ("pages", "render", "memberpages", "swarmpages", "project"):  # the builders
        text = (PACKAGE / "web" / f"{name}.py").read_text(encoding="utf-8")
        found = re.findall(r"<(?:a|p|h[1-6]|div|span|table|tr|td|pre|details|section)[ >]", text)
        assert not found, f"markup in web/{name}.py: {found}"
