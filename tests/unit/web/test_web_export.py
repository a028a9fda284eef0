"""The browser pages and `horde-tui export`: every page of a finished fixture run and of
a fixture swarm renders, every link of an export resolves inside it, nothing of this
machine (paths, keys, the gateway token) leaves in it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import Horde
from support.cli import cli_argv
from support.processes import wait_until
from support.web_scene import (
    FAKE_KEY,
    GATEWAY_TOKEN,
    OUTSIDE,
    RUN_ID,
    SWARM_ID,
    plant_symlinks,
    web_scene,
)

from horde_tui.store.mask import Masker
from horde_tui.store.runs import UnknownRun
from horde_tui.web.export import WARNING, export, resolve_scope
from horde_tui.web.pages import CSP, Site, esc


class Links(HTMLParser):
    """Every href/src of a page, and every id (the anchors a link may name)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            if name == "id" and value:
                self.ids.add(value)
        self.scripts += tag == "script"


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    return web_scene(tmp_path / "project")


def test_every_page_of_the_run_and_the_swarm_renders(horde: Path) -> None:
    site = Site(horde)
    paths = list(site.paths())
    run = f"runs/{RUN_ID}/"
    for expected in (
        "index.html",
        f"{run}index.html",
        f"{run}findings.html",
        f"{run}findings-clusters.html",
        f"{run}collaboration.html",
        f"{run}events-1.html",
        f"{run}graph.html",
        f"{run}graph.mmd",
        f"{run}files/REPORT.md.html",
        f"{run}members/member-1/transcript-1-3.html",
        f"swarms/{SWARM_ID}/index.html",
        f"swarms/{SWARM_ID}/findings.html",
        f"runs/{SWARM_ID}-h1/findings.html",
    ):
        assert expected in paths, expected
    for path in paths:
        page = site.render(path)
        assert page.status == 200, (path, page.body)
        assert page.data is not None, path
    findings = site.render(f"{run}findings.html")
    assert [r["id"] for r in findings.data["rows"]] == ["F3", "F2", "F1"]
    assert 'id="F1"' in findings.body and "ran build_query" in findings.body  # review inline
    swarm = site.render(f"swarms/{SWARM_ID}/index.html")
    assert [h["horde"] for h in swarm.data["hordes"]] == ["h1", "h2", "h3"]
    graph = site.render(f"swarms/{SWARM_ID}/graph.html")
    assert graph.data["lanes"] == ["swarm", "h1", "h2", "h3"]
    assert graph.body.count('class="lane"') == 4 and graph.data["timeline"]
    assert site.render("runs/nope/index.html").status == 404


def _crawl(root: Path) -> list[Path]:
    """Every link of every page resolves to a file of the export, and every `#fragment`
    to an id on the page it names."""
    pages = sorted(root.rglob("*.html"))
    assert pages
    parsed: dict[Path, Links] = {}
    for page in pages:
        parser = parsed[page.resolve()] = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        assert parser.scripts == 0, page
    for page in pages:
        for link in parsed[page.resolve()].links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "mailto"):
                continue
            assert not parts.scheme and not parts.netloc and not link.startswith("/"), (page, link)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            assert target.is_file(), f"{page.relative_to(root)} links to missing {link}"
            assert target.is_relative_to(root.resolve()), (page, link)
            if parts.fragment:
                ids = parsed[target.resolve()].ids if target.suffix == ".html" else set()
                assert unquote(parts.fragment) in ids, (
                    f"{page.relative_to(root)} links to {link}: no such anchor there"
                )
    return pages


def _graph_marks(page: Path) -> list[str]:
    """The hrefs of a run graph's marks (the SVG's links)."""
    svg = page.read_text(encoding="utf-8").split("<svg", 1)[1].split("</svg>", 1)[0]
    return re.findall(r'<a href="([^"]*)"', svg)


def test_export_links_all_resolve_and_nothing_of_this_machine_leaves(
    horde: Path, tmp_path: Path
) -> None:
    before = sorted((p.relative_to(horde), p.stat().st_mtime_ns) for p in horde.rglob("*"))
    where = export(horde, "all", tmp_path / "out")
    assert where == tmp_path / "out" / "horde-export-all"
    pages = _crawl(where)
    assert len(pages) > 60
    for graph in where.glob("runs/*/graph.html"):  # each mark names its entry or its event
        marks = _graph_marks(graph)
        assert marks and all("#" in href for href in marks), (graph, marks)
    artifact = _graph_marks(where / f"runs/{SWARM_ID}-h1/graph.html")
    assert any(href.endswith("#A1") for href in artifact), artifact
    policy = f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
    for page in pages:  # as the served pages' header says, for a page opened from disk
        assert policy in page.read_text(encoding="utf-8").split("</head>")[0], page
    machine = str(tmp_path)
    for path in where.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert machine not in text, path
            assert str(Path.home()) not in text, path
            assert FAKE_KEY not in text and GATEWAY_TOKEN not in text, path
    first = (where / f"runs/{RUN_ID}/members/member-1/transcript-1-1.html").read_text()
    assert "OPENAI_API_KEY=[masked]" in first and "[project]/src" in first
    assert sorted((p.relative_to(horde), p.stat().st_mtime_ns) for p in horde.rglob("*")) == before


def test_one_run_exports_alone_and_a_zip_holds_one_folder(horde: Path, tmp_path: Path) -> None:
    folder = export(horde, RUN_ID, tmp_path)
    _crawl(folder)
    assert not (folder / "swarms").exists()
    index = (folder / "index.html").read_text()
    assert RUN_ID in index and SWARM_ID not in index
    seen: list[tuple[int, int]] = []
    archive = export(
        horde, SWARM_ID, tmp_path, as_zip=True, progress=lambda d, t, p: seen.append((d, t))
    )
    assert seen and seen[-1][0] == seen[-1][1]
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
    assert {n.split("/")[0] for n in names} == {f"horde-export-{SWARM_ID}"}
    assert f"horde-export-{SWARM_ID}/runs/{SWARM_ID}-h1/index.html" in names
    assert not any(f"runs/{RUN_ID}/" in n for n in names)


def test_a_page_names_the_version_and_the_graph_links_each_mark(horde: Path) -> None:
    site = Site(horde)
    graph = site.render(f"runs/{RUN_ID}/graph.html")
    lanes = [lane["name"] for lane in graph.data["lanes"]]
    assert lanes == ["parent", "member-1", "member-2", "member-3"]
    assert graph.body.count('class="lane"') == len(lanes)
    assert '<a href="findings.html#F1"' in graph.body
    assert re.search(r'class="phase".*discovery', graph.body)
    doc = site.html(graph)
    assert "horde-tui 0.1.0" in doc and 'http-equiv="refresh"' not in doc


def test_the_graph_draws_reviews_challenges_and_ideas_as_edges(horde: Path) -> None:
    page = Site(horde).render(f"runs/{RUN_ID}/graph.html")
    edges = {(e["src"][:1], e["dst"], e["label"]) for e in page.data["edges"]}
    assert ("v", "f1", "supports") in edges and ("v", "f3", "refutes") in edges
    assert ("f", "i1", "under") in edges  # F1 filed under #1
    assert ("q", "f3", "challenge") in edges  # the refuting review's challenge ...
    assert ("e", "q2", "resolved") in edges  # ... and the question it answered, resolved
    drawn = re.findall(r'<path class="edge[^"]*" data-src="(\w+)" data-dst="(\w+)"', page.body)
    assert len(drawn) == len(page.data["edges"]) > 6
    assert "<title>refutes</title>" in page.body


def test_the_graph_axis_is_real_time(tmp_path: Path) -> None:
    """Marks sit at their events' times: one event after a pause is drawn far right,
    though many events come after it in the file; phase bands span their real times."""
    horde = Horde(tmp_path)
    parent = horde.store("parent")
    parent.ensure_run("r1")

    def life(kind: str, **data: str) -> None:
        parent.append_event("r1", {"type": "lifecycle", "kind": kind, **data})

    life("run-start")
    life("phase-start", phase="discovery")
    assert horde("member-1", "idea", text="first").ok
    time.sleep(1.0)
    assert horde("member-2", "idea", text="after a pause").ok
    for n in range(8):
        assert horde("member-3", "post", text=f"busy {n}").ok
    life("phase-end", phase="discovery")
    page = Site(horde.root).render("runs/r1/graph.html")
    marks = {m["text"]: m for lane in page.data["lanes"] for m in lane["marks"]}
    left, width = page.data["plot"]["left"], page.data["plot"]["width"]
    span = max(m["t"] for m in marks.values())
    assert marks["#2"]["t"] >= 1.0 and marks["#1"]["t"] < 0.5
    for mark in ("#1", "#2"):  # alone in their lanes: exactly at their times
        assert marks[mark]["x"] == pytest.approx(left + marks[mark]["t"] / span * width, abs=1.0)
    band = re.search(
        r'<rect class="phase" data-phase="discovery" x="([\d.]+)" y="2" width="([\d.]+)"', page.body
    )
    assert band and float(band.group(1)) <= marks["#1"]["x"]
    assert float(band.group(1)) + float(band.group(2)) >= marks["#2"]["x"]


def test_graph_mmd_clicks_through_relative_in_an_export(horde: Path, tmp_path: Path) -> None:
    where = export(horde, RUN_ID, tmp_path / "out")
    mmd = (where / "runs" / RUN_ID / "graph.mmd").read_text()
    assert 'click f1 href "findings.html#F1"' in mmd
    assert re.search(r'click e\d+ href "events-1\.html#E\d+"', mmd)
    assert "/runs/" not in mmd


def test_an_unknown_target_is_one_line(horde: Path, tmp_path: Path) -> None:
    with pytest.raises(UnknownRun, match=r"^no run or swarm named nope in .*runs` lists them$"):
        resolve_scope(horde, "nope")
    assert "may carry secrets" in WARNING
    assert not list(tmp_path.glob("horde-export-*"))


def test_the_command_warns_once_and_says_where(horde: Path, tmp_path: Path) -> None:
    """The installed command, as a person runs it: one warning before it writes, the
    progress, then where the export is."""
    env = {**os.environ, "HORDE_DIR": str(horde)}
    out = tmp_path / "shared"
    done = subprocess.run(
        cli_argv("export", RUN_ID, "--out", str(out)),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("may carry secrets") == 1
    assert re.search(r"\] (\d+)/\1 pages", done.stderr), done.stderr
    assert done.stdout.strip() == f"exported to {out / f'horde-export-{RUN_ID}' / 'index.html'}"
    bad = subprocess.run(
        cli_argv("export", "nope"),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "Traceback" not in bad.stderr and "may carry secrets" not in bad.stderr


def test_an_interrupted_export_leaves_nothing_behind(horde: Path, tmp_path: Path) -> None:
    """Ctrl-C mid-export: one line, exit 130, no folder and no temporary left."""
    events = horde / "runs" / RUN_ID / "events.jsonl"
    line = '{"ts":"2025-01-01T12:00:00.000Z","actor":"member-1","type":"outcome","action":"post","ok":true}\n'
    with open(events, "a") as fh:
        fh.write(line * 60_000)  # 60 audit pages: long enough to interrupt
    out = tmp_path / "out"
    proc = subprocess.Popen(
        cli_argv("export", RUN_ID, "--out", str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HORDE_DIR": str(horde)},
    )
    assert proc.stderr is not None
    assert "may carry secrets" in proc.stderr.readline()  # it has started
    assert wait_until(lambda: any(out.glob(".horde-export-*.tmp/runs")), 60)
    # Stopped first, so the export cannot finish between our look and the Ctrl-C
    # (with warm bytecode it renders the 100 pages in well under a second).
    proc.send_signal(signal.SIGSTOP)
    assert any(out.glob(".horde-export-*.tmp/runs")), "the export ended before the stop"
    status = Path(f"/proc/{proc.pid}/status").read_text()
    masks = [line for line in status.splitlines() if line.startswith(("Sig", "Shd", "Threads"))]
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGCONT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (err, masks)
    assert (
        err.strip().splitlines()[-1]
        == "horde-tui export: interrupted; the partial export was removed"
    )
    assert list(out.iterdir()) == []


def test_the_masker_hides_keys_tokens_and_paths_but_not_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    horde = tmp_path / "proj" / ".horde"
    (horde / "runs" / "r1").mkdir(parents=True)
    (horde / "runs" / "r1" / "gateway.token").write_text("tok-0123456789abcdef\n")
    (horde / "config.toml").write_text('model = "x"\napi_key = "plain-config-key-42"\n')
    monkeypatch.setenv("MY_SERVICE_API_KEY", "env-secret-value-99")
    mask = Masker(horde)
    keys = [
        "sk-ant-api03-" + "x" * 30,
        "AIza" + "B" * 35,
        "ghp_" + "c" * 36,
        "hf_" + "d" * 34,
        "tok-0123456789abcdef",
        "plain-config-key-42",
        "env-secret-value-99",
    ]
    shown = mask(" | ".join(keys) + f" | {tmp_path}/proj/src/a.py | uses sk-learn and a token")
    assert mask("Authorization: Bearer abcdefghij0123456789xyz") == "Authorization: Bearer [masked]"
    assert (
        shown
        == " | ".join(["[masked]"] * len(keys))
        + " | [project]/src/a.py | uses sk-learn and a token"
    )


def test_a_hordes_run_exports_alone(horde: Path, tmp_path: Path) -> None:
    """`export <swarm>-h1` (and `E` on that horde's run screen): its pages, not the swarm's."""
    folder = export(horde, f"{SWARM_ID}-h1", tmp_path)
    _crawl(folder)
    assert (folder / "runs" / f"{SWARM_ID}-h1" / "findings.html").is_file()
    assert not (folder / "runs" / f"{SWARM_ID}-h2").exists()


def test_a_symlink_out_of_the_horde_is_refused_in_one_line(horde: Path, tmp_path: Path) -> None:
    """`REPORT.md -> /etc/passwd` (and a log, GRAPH.md, a transcript): the export writes
    the page, saying in one line that the file leaves the horde directory, not the file."""
    pages = plant_symlinks(horde, tmp_path / "elsewhere")
    where = export(horde, RUN_ID, tmp_path / "out")
    _crawl(where)
    for path in where.rglob("*"):
        if path.is_file():
            assert OUTSIDE not in path.read_text(encoding="utf-8"), path
    for page in pages:
        text = (where / page).read_text(encoding="utf-8")
        found = re.findall(r"refused: [^<\n]*outside the horde directory[^<\n]*", text)
        assert len(found) == 1, (page, text[-600:])


def test_the_overview_says_when_the_demo_model_played(horde: Path) -> None:
    manifest_path = horde / "runs" / RUN_ID / "MANIFEST.json"
    site = Site(horde)
    assert "demo model" not in site.render(f"runs/{RUN_ID}/index.html").body
    manifest = json.loads(manifest_path.read_text())
    manifest["demo_model"] = True
    manifest_path.write_text(json.dumps(manifest))
    page = Site(horde).render(f"runs/{RUN_ID}/index.html")
    assert page.data["demo"] is True
    assert "demo model (scripted, not a real LLM)" in page.body


def test_an_event_is_found_on_its_line_when_numbers_and_lines_part(tmp_path: Path) -> None:
    """A torn line (a crash mid-write) shifts E# against line numbers: the graph's link
    to an event still finds its line, by its number."""
    from horde_tui.store.linefile import LineIndex
    from horde_tui.web.anchors import event_line, event_page

    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"type": "x", "id": f"E{n}"}, separators=(",", ":")) for n in range(1, 6)]
    lines.append('{"type":"x","torn')
    lines += [
        json.dumps({"type": "x", "id": f"E{n}"}, separators=(",", ":")) for n in range(6, 3001)
    ]
    path.write_text("\n".join(lines) + "\n")
    index = LineIndex(path, cache_size=8, transactions=False)
    index.refresh()
    try:
        assert event_line(index, "E3") == 2
        assert event_line(index, "E6") == 6 and event_line(index, "E2500") == 2500
        assert event_line(index, "E3001") is None and event_line(index, "bogus") is None
        assert event_page(2500) == "events-3.html"
    finally:
        index.close()
