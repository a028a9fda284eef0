"""What every page of the browser view is drawn with: the templates, the links, the
document around a page, and the run documents a page may show.

`Renderer` keeps the state of the page being rendered (its path, so each link is made
relative to it; `?refresh=0`; its query) on top of the `Scope`'s readers. The page
builders (`pages.Site` for a run's pages, `memberpages`, `swarmpages`, `project`) draw
with it, each through its template under `templates/` (Jinja2, autoescaped: text never
turns into markup unless a template says so).
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from horde_tui.store.display import format_cost, format_time
from horde_tui.store.mask import Masker
from horde_tui.store.pagelinks import entry_page
from horde_tui.store.runs import READING_ORDER
from horde_tui.store.secretfiles import is_secret
from horde_tui.view.ledgers import LedgerView
from horde_tui.view.swarm import RunsAndSwarms
from horde_tui.web.anchors import anchor
from horde_tui.web.confine import Outside, confined
from horde_tui.web.footer import build_footer
from horde_tui.web.markup import markdown, markdown_line
from horde_tui.web.scope import Page, Scope
from horde_tui.web.style import CSS

LONG_ENTRY = 600
"""An entry longer than this (characters) is folded, its first line its summary."""
SWARM_DOCS = ("SWARM.md", "REPORT.md", "DELIVERABLE.md")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"
"""Every page's Content-Security-Policy: no script, no request off the page's own site.
The server sends it as a header; each page carries it as a meta tag too, so a page
opened from an export's folder is held to it alike."""


_ENV = Environment(
    loader=PackageLoader("horde_tui.web", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=StrictUndefined,
)
_ENV.globals.update(
    long_entry=LONG_ENTRY,
    anchor=anchor,
    entry_page=entry_page,
    when=format_time,
    cost=format_cost,
    markdown=lambda text: Markup(markdown(text)),
    markdown_line=lambda text: Markup(markdown_line(text)),
)


class Renderer(Scope):
    """The pages of one scope (see `Scope`), drawn one at a time."""

    def __init__(
        self,
        horde_dir: Path,
        runs: Iterable[str] | None = None,
        swarms: Iterable[str] | None = None,
        *,
        masker: Masker | None = None,
    ) -> None:
        super().__init__(horde_dir, runs, swarms)
        self.mask = masker or Masker(self.horde_dir)
        self.top = Path(os.path.realpath(self.horde_dir))
        self._index = RunsAndSwarms(self.horde_dir)
        self._at = "index.html"
        self._query = ""
        """What every link of the page being rendered carries (`?refresh=0`)."""
        self._args: dict[str, str] = {}
        """The query of the page being rendered (`?run=` narrows a project page)."""
        self._project: LedgerView | None = None
        self.served = False
        """Set by the server: `graph.mmd` links absolute (`/runs/...`), as served; an
        export's are relative."""

    def href(self, target: str) -> str:
        """`target` (a site path, `#anchor` allowed) relative to this page; "" stays ""."""
        if not target:
            return ""
        path, _, frag = target.partition("#")
        rel = _relative(path, posixpath.dirname(self._at) or ".") + self._query if path else ""
        return rel + (f"#{frag}" if frag else "")

    def tpl(self, template: str, **context: Any) -> str:
        """`template` rendered for the page being rendered (its links relative to it)."""
        return _ENV.get_template(template).render(href=self.href, **context)

    def html(self, page: Page, refresh: bool = False) -> str:
        """The whole document of `page`, masked; `refresh`: reload every three seconds
        (the server's live pages; an export never refreshes)."""
        footer = Markup(build_footer())
        doc = self.tpl(
            "document.html", page=page, refresh=refresh, csp=CSP, css=Markup(CSS), footer=footer
        )
        return self.mask(doc)

    def json(self, page: Page) -> str:
        return self.mask(json.dumps(page.data, ensure_ascii=False, default=str))

    def _prompt(self, run_dir: Path | None, prompt: str) -> str:
        """A run's prompt, read from its TASK.md, or the line saying why not when that
        file leads outside the horde directory."""
        try:
            if run_dir is not None:
                confined(self.horde_dir, run_dir / "TASK.md")
        except Outside as exc:
            return str(exc)
        return prompt

    def document(self, folder: Path, name: str, scope: str) -> Page | None:
        allowed = READING_ORDER if "run" in scope else SWARM_DOCS
        if name not in allowed or is_secret(Path(os.path.realpath(folder / name)), self.top):
            return None  # a document linked to a secret file (store/secretfiles.py) is not shown
        try:
            path = confined(self.horde_dir, folder / name)
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        body = self.tpl("text.html", text=text, pre=name.endswith(".json"))
        return Page("", f"{name} · {scope}", body, {"name": name, "text": text})


@functools.lru_cache(maxsize=4096)
def _relative(path: str, start: str) -> str:
    """`posixpath.relpath`, remembered: a graph page makes hundreds of the same links."""
    return posixpath.relpath(path, start)
