"""The project scope of the browser pages: the project ledgers (what single runs share)
across every run, each row tagged with its run and narrowed by `?run=`, with the scope
line and page row of the run scope, a pointer to the same page of a running swarm, and
who cited each resource in a live run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Horde
from support.web_scene import RUN_ID, SWARM_ID, web_scene

from horde_tui.store.runs import mark_live
from horde_tui.web.footer import build_footer, footer_html, repository_url
from horde_tui.web.pages import Site

LIVE = "20250102-090000-cafe"
PAGES = ("ideas", "board", "findings", "facts", "claims", "resources", "concerns")


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    """The web scene plus a second single run, live (this process supervises it), whose
    member-2 cites the scene's resource R1."""
    root = web_scene(tmp_path / "project")
    scene = Horde(root.parent)
    run = root / "runs" / LIVE
    scene.store("parent").ensure_run(LIVE)
    (run / "TASK.md").write_text("# Task\n\nA second look\n")
    (run / "MANIFEST.json").write_text(json.dumps({"run": LIVE, "members": []}))
    mark_live(run)
    assert scene("member-1", "idea", run=LIVE, text="Recheck the seed data").ok
    assert scene("member-2", "post", run=LIVE, text="using R1 for the recheck").ok
    assert scene("member-3", "post", run=LIVE, text="nothing cited here").ok
    return root


def test_project_pages_list_every_run_tagged_and_narrowed_by_run(horde: Path) -> None:
    site = Site(horde)
    assert {f"{p}.html" for p in PAGES} <= set(site.paths())
    page = site.render("ideas.html")
    assert page.status == 200
    runs = {row["run"] for row in page.data["rows"]}
    assert runs == {RUN_ID, LIVE}
    assert re.search(rf'<td><a href="runs/{RUN_ID}/index.html">{RUN_ID}</a></td>', page.body)
    mine = site.render("ideas.html", query={"run": LIVE})
    assert [r["id"] for r in mine.data["rows"]] == ["#4"]
    assert mine.data["run"] == LIVE
    board = site.render("board.html", query={"run": RUN_ID})
    assert board.data["rows"] and {r["run"] for r in board.data["rows"]} == {RUN_ID}
    concerns = site.render("concerns.html")
    assert {r["id"] for r in concerns.data["rows"]} >= {"sql-injection", "rate-limit"}
    # the scope line and the page row, as in the run scope
    assert '<div class="scope">project</div>' in page.nav
    for name in PAGES:
        assert f'href="{name}.html"' in page.nav
    assert 'class="current">ideas</a>' in page.nav
    # the index leads to them
    assert 'href="findings.html"' in site.html(site.render("index.html"))


def test_a_project_page_points_to_the_same_page_of_a_running_swarm(horde: Path) -> None:
    page = Site(horde).render("findings.html")
    assert f'<a href="swarms/{SWARM_ID}/findings.html">' in page.body
    assert "leave these ledgers untouched" in page.body
    assert page.live  # a single run is live: the project ledgers can change


def test_resources_name_who_cited_each_in_a_live_run(horde: Path) -> None:
    page = Site(horde).render("resources.html")
    r1 = next(row for row in page.data["rows"] if row["id"] == "R1")
    assert r1["cited_in_live_runs"] == {LIVE: ["member-2"]}
    assert f"{LIVE}: member-2" in page.body


def test_a_scoped_export_has_no_project_pages(horde: Path) -> None:
    assert "ideas.html" not in set(Site(horde, runs=[RUN_ID]).paths())
    assert Site(horde, runs=[RUN_ID]).render("ideas.html").status == 404


def test_the_member_log_takes_a_tail_and_has_a_whole_log_view(horde: Path) -> None:
    log = horde / "runs" / RUN_ID / "member-1.log"
    log.write_text("".join(f"log line {n:05d} of the member\n" for n in range(1, 4001)))
    site = Site(horde)
    base = f"runs/{RUN_ID}/members/member-1/"
    assert f"{base}log-all.html" in set(site.paths())
    default = site.render(f"{base}log.html")
    assert "log line 04000" in default.body and "log line 00001" not in default.body
    five = site.render(f"{base}log.html", query={"tail": "5"})
    assert five.data["tail"].splitlines() == [
        f"log line {n:05d} of the member" for n in range(3996, 4001)
    ]
    whole = site.render(f"{base}log-all.html")
    assert whole.data["tail"].count("\n") == 4000 and "log line 00001" in whole.body
    assert site.render(f"{base}log.html", query={"tail": "0"}).data == whole.data
    assert 'href="log-all.html"' in default.body
    member = site.render(f"{base}index.html").body
    assert 'href="log.html"' in member and 'href="log-all.html"' in member


def test_the_footer_links_the_commit_when_the_repository_is_known(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "horde-tui"\n[project.urls]\n'
        'Repository = "https://github.com/example/horde-tui.git"\n'
    )
    repo = repository_url(pyproject)
    assert repo == "https://github.com/example/horde-tui"
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert footer_html("0.1.0", sha + "-dirty", repo) == (
        "horde-tui 0.1.0 · commit "
        f'<a href="https://github.com/example/horde-tui/commit/{sha}">0123456789ab-dirty</a>'
    )
    pyproject.write_text('[project]\nname = "horde-tui"\n')
    assert repository_url(pyproject) is None
    assert footer_html("0.1.0", sha, None) == "horde-tui 0.1.0 · commit 0123456789ab"
    assert footer_html("0.1.0", None, repo) == "horde-tui 0.1.0"
    page = Site(tmp_path).html(Site(tmp_path).render("index.html"))
    assert f"<footer>{build_footer()}</footer>" in page


def test_the_swarm_collaboration_page_shows_each_hordes_acceptance_and_reviews(
    horde: Path,
) -> None:
    page = Site(horde).render(f"swarms/{SWARM_ID}/threads.html")
    h1 = page.data["hordes"]["h1"]
    assert "A1" in [a["target"] for a in h1["acceptance"]]
    assert [(v["id"], v["target"], v["by"]) for v in h1["reviews"]] == [("V1", "A1", "member-2")]
    assert page.data["hordes"]["h3"] is None  # pending: no run yet
    body = page.body
    assert "<h2>h1: acceptance and reviews</h2>" in body
    assert f'href="../../runs/{SWARM_ID}-h1/collaboration.html#A1"' in body
    assert "h3: not started yet" in body


def test_the_index_refreshes_while_anything_is_live_and_stops_after(tmp_path: Path) -> None:
    """A real process hosts the swarm and supervises a run; once it is gone (no file
    changes), the same Site's index stops refreshing."""
    root = web_scene(tmp_path / "project")
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        swarm_json = next((root / "swarms").rglob("SWARM.json"))
        info = json.loads(swarm_json.read_text())
        info["parent_pid"] = host.pid
        swarm_json.write_text(json.dumps(info))
        for live in root.rglob(".live"):
            live.write_text(f"{host.pid}\n")
        site = Site(root)
        assert site.render("index.html").live
        assert 'http-equiv="refresh"' in site.html(site.render("index.html"), refresh=True)
    finally:
        host.kill()
        host.wait()
    index = site.render("index.html")
    assert not index.live, [(r["id"], r["state"]) for r in index.data["runs"]]
