"""The export and the server in a real browser: headless Chromium (Debian's `chromium`,
which `.ci/run` installs) opens the exported pages from disk and a served page, and the
DOM it built is checked: the runs table, the findings table, a transcript page, the
graph's SVG lanes. Skipped, with the reason, only where no Chromium can be found.

`python tests/unit/web/test_web_browser.py --screenshots` refreshes the README's two pictures
(`screenshots/web-overview.png`, `screenshots/web-graph.png`) from the same scene.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: --screenshots

from support.paths import REPO
from support.web_scene import RUN_ID, SWARM_ID, web_scene

from horde_tui.web.export import export
from horde_tui.web.serve import start

pytestmark = pytest.mark.slow  # a browser start per page: seconds each

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def _flags(profile: Path) -> list[str]:
    flags = ["--headless", "--disable-gpu", f"--user-data-dir={profile}", "--no-first-run"]
    if os.geteuid() == 0:  # Chromium's own sandbox refuses to start as root
        flags.append("--no-sandbox")
    return flags


def dump_dom(url: str, profile: Path) -> str:
    exe = browser()
    assert exe is not None
    done = subprocess.run(
        [exe, *_flags(profile), "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-2000:]
    return done.stdout


def screenshot(url: str, dest: Path, profile: Path, size: str = "1280,860") -> None:
    exe = browser()
    assert exe is not None
    subprocess.run(
        [
            exe,
            *_flags(profile),
            f"--screenshot={dest}",
            f"--window-size={size}",
            "--hide-scrollbars",
            url,
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )


class Dom(HTMLParser):
    """What the checks need of a DOM: table cells per table class, lanes, entries."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: dict[str, list[str]] = {}
        self.lanes: list[str] = []
        self.edges: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self.details = 0
        self.tags: set[str] = set()
        self._table = ""
        self._in_td = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "table":
            self._table = str(a.get("class") or "")
            self.tables.setdefault(self._table, [])
        if tag == "td":
            self._in_td = True
            self.tables[self._table].append("")
        if tag == "g" and a.get("class") == "lane":
            self.lanes.append(str(a.get("data-lane")))
        if tag == "path" and str(a.get("class") or "").startswith("edge"):
            self.edges.append((str(a.get("data-src")), str(a.get("data-dst"))))
        self.details += tag == "details"

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_td = False

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.tables[self._table][-1] += data


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = browser()
    if exe is None:
        pytest.skip("no Chromium on this machine (`apt-get install chromium`; .ci/run does)")
    return exe


def test_chromium_reads_the_export_from_disk_and_a_served_page(
    chromium: str, tmp_path: Path
) -> None:
    horde = web_scene(tmp_path / "project")
    root = export(horde, "all", tmp_path / "out")
    profile = tmp_path / "profile"
    index = Dom(dump_dom((root / "index.html").as_uri(), profile))
    cells = index.tables["runs"]
    assert RUN_ID in cells and SWARM_ID in cells
    run = root / "runs" / RUN_ID
    findings = Dom(dump_dom((run / "findings.html").as_uri(), profile))
    rows = findings.tables["ledger findings"]
    assert [c for c in rows if re.fullmatch(r"F\d", c)] == ["F3", "F2", "F1"]
    assert {"F1", "F2", "F3"} <= findings.ids
    transcript = Dom(dump_dom((run / "members/member-1/transcript-1-2.html").as_uri(), profile))
    assert {f"m{i}" for i in range(50, 100)} <= transcript.ids
    assert transcript.details >= 50  # every entry's raw JSON one click away
    graph = Dom(dump_dom((run / "graph.html").as_uri(), profile))
    assert "svg" in graph.tags
    assert graph.lanes == ["parent", "member-1", "member-2", "member-3"]
    assert ("f1", "i1") in graph.edges and len(graph.edges) > 6  # the picture's arrows

    async def served() -> str:
        server, pages = await start(horde, 0)
        try:
            url = f"{server.url}/swarms/{SWARM_ID}/index.html?refresh=0"
            proc = await asyncio.create_subprocess_exec(
                chromium,
                *_flags(profile),
                "--dump-dom",
                url,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 120)
            return out.decode()
        finally:
            await server.close()
            pages.close()

    swarm = Dom(asyncio.run(served()))
    assert swarm.tables["hordes"][:1] == ["h1"] and "h2" in swarm.tables["hordes"]


def test_screenshots_are_pictures(chromium: str, tmp_path: Path) -> None:
    shots = take_screenshots(tmp_path / "shots", tmp_path)
    for shot in shots:
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, shot


def take_screenshots(dest: Path, work: Path) -> list[Path]:
    """The run overview and its graph, as exported, from disk."""
    horde = web_scene(work / "scene")
    root = export(horde, RUN_ID, work / "export")
    dest.mkdir(parents=True, exist_ok=True)
    shots = []
    for page, name in (("index.html", "web-overview.png"), ("graph.html", "web-graph.png")):
        shot = dest / name
        screenshot((root / "runs" / RUN_ID / page).as_uri(), shot, work / "profile")
        shots.append(shot)
    return shots


if __name__ == "__main__" and sys.argv[1:] == ["--screenshots"]:
    if browser() is None:
        raise SystemExit("no Chromium found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as work:
        for shot in take_screenshots(REPO / "screenshots", Path(work)):
            print(shot)
