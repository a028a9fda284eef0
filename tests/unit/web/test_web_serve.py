"""`horde-tui serve`: the pages live, read-only, on 127.0.0.1, through the gateway's
HTTP stack; every page's JSON twin under /api/ carries the data its HTML shows."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from conftest import Horde
from support.app import RUN_ID
from support.cli import cli_argv
from support.ledger_scene import lifecycle
from support.web_scene import FAKE_KEY, OUTSIDE, SWARM_ID, plant_symlinks, web_scene

from horde_tui.common.httpserve import HttpServer
from horde_tui.web.serve import start


@pytest.fixture
def horde(tmp_path: Path) -> Path:
    return web_scene(tmp_path / "project")


@pytest.fixture
async def server(horde: Path) -> AsyncIterator[HttpServer]:
    served, pages = await start(horde, 0)
    try:
        yield served
    finally:
        await served.close()
        pages.close()


async def _get(
    url: str, method: str = "GET", *, follow: bool = True, **headers: str
) -> tuple[int, str, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers=headers, allow_redirects=follow) as r,
    ):
        return r.status, await r.text(), dict(r.headers)


def _tree(horde: Path) -> list[tuple[str, int, int]]:
    return sorted(
        (str(p.relative_to(horde)), p.stat().st_mtime_ns, p.stat().st_size)
        for p in horde.rglob("*")
    )


async def test_json_twins_carry_what_the_pages_show(server: HttpServer, horde: Path) -> None:
    before = _tree(horde)
    base = server.url
    status, index, _ = await _get(f"{base}/")
    twin = json.loads((await _get(f"{base}/api/"))[1])
    assert status == 200
    assert {r["id"] for r in twin["runs"]} == {RUN_ID, SWARM_ID}
    for row in twin["runs"]:
        assert f">{row['id']}</a>" in index
    status, html, headers = await _get(f"{base}/runs/{RUN_ID}/findings.html")
    data = json.loads((await _get(f"{base}/api/runs/{RUN_ID}/findings.html"))[1])
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    table = html.split("<h2>Entries</h2>")[0]
    shown = re.findall(r'<td><a href="findings.html#(F\d+)">', table)
    assert shown == [r["id"] for r in data["rows"]] == ["F3", "F2", "F1"]
    page = json.loads(
        (await _get(f"{base}/api/runs/{RUN_ID}/members/member-1/transcript-1-1.html"))[1]
    )
    assert len(page["entries"]) == 50 and page["pages"] == 3
    assert FAKE_KEY not in json.dumps(page) and "[masked]" in json.dumps(page)
    status, mmd, headers = await _get(f"{base}/runs/{RUN_ID}/graph.mmd")
    assert headers["Content-Type"].startswith("text/plain") and "flowchart LR" in mmd
    # served, each node clicks through to its page by an absolute path
    assert f'click f1 href "/runs/{RUN_ID}/findings.html#F1"' in mmd
    assert (await _get(f"{base}/runs/nope/index.html"))[0] == 404
    assert _tree(horde) == before  # nothing under .horde/ written


async def test_only_reads_from_this_machine(server: HttpServer) -> None:
    url = f"{server.url}/runs/{RUN_ID}/index.html"
    status, body, headers = await _get(url, "HEAD")
    assert status == 200 and body == "" and int(headers["Content-Length"]) > 1000
    for method in ("POST", "PUT", "DELETE"):
        status, body, headers = await _get(url, method)
        assert status == 405 and headers["Allow"] == "GET, HEAD", (method, body)
    status, body, _ = await _get(url, **{"Sec-Fetch-Site": "cross-site"})
    assert status == 403 and "cross-site" in body
    assert (await _get(url, **{"Sec-Fetch-Site": "same-origin"}))[0] == 200
    status, body, _ = await _get(url, Host="evil.example:7433")
    assert status == 403 and f"open {server.url}/" in body, body  # the port it listens on
    assert server.host == "127.0.0.1"


async def test_a_live_run_refreshes_and_its_new_events_show_next_time(
    server: HttpServer, horde: Path
) -> None:
    live = f"{server.url}/runs/{SWARM_ID}-h1/index.html"  # h1's supervisor is this process
    assert '<meta http-equiv="refresh" content="3">' in (await _get(live))[1]
    assert 'http-equiv="refresh"' not in (await _get(live + "?refresh=0"))[1]
    done = f"{server.url}/runs/{RUN_ID}/index.html"
    assert 'http-equiv="refresh"' not in (await _get(done))[1]  # finished: nothing to wait for
    events = f"{server.url}/api/runs/{RUN_ID}/events-1.html"
    seen = json.loads((await _get(events))[1])["events"]
    lifecycle(Horde(horde.parent), "stop-clean", reason="a late stop for the test")
    now = json.loads((await _get(events))[1])["events"]
    assert len(now) == len(seen) + 1 and "a late stop for the test" in now[-1]


def test_a_busy_port_is_one_line(horde: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            cli_argv("serve", "--port", str(port)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "HORDE_DIR": str(horde)},
        )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"horde-tui serve: refused: port {port} on 127.0.0.1 is in use; pick another with --port N"
    )


def _serve_on_busy_port(
    horde: Path, variable: str | None, config: str | None = None
) -> tuple[int, subprocess.CompletedProcess[str]]:
    """`horde-tui serve` without --port while a port is taken; `variable` and `config`
    (HORDE_DASHBOARD_PORT and the config's serve_port; `{port}` is the busy one) say
    which port to use, and the refusal names the port it tried."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "HORDE_DASHBOARD_PORT"}
        if variable is not None:
            env["HORDE_DASHBOARD_PORT"] = variable.format(port=port)
        if config is not None:
            (horde / "config.toml").write_text(
                f"[horde]\nserve_port = {config.format(port=port)}\n"
            )
        done = subprocess.run(
            cli_argv("serve"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**env, "HORDE_DIR": str(horde)},
        )
    return port, done


def test_the_default_port_comes_from_the_variable_or_the_config(horde: Path) -> None:
    port, done = _serve_on_busy_port(horde, "{port}")
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr, done.stderr
    port, done = _serve_on_busy_port(horde, "{port}", config="1")
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr  # the variable wins
    port, done = _serve_on_busy_port(horde, None, config="{port}")
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr, done.stderr
    port, done = _serve_on_busy_port(horde, "seventy", config="{port}")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "HORDE_DASHBOARD_PORT" in done.stderr, done.stderr


async def test_the_command_serves_until_interrupted(horde: Path) -> None:
    """The real process: it says where it listens, answers, and a Ctrl-C ends it cleanly."""
    proc = subprocess.Popen(
        cli_argv("serve", "--port", "0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HORDE_DIR": str(horde)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)/ \(Ctrl-C stops\)", line)
        assert found, line + (proc.stderr.read() if proc.stderr else "")
        status, body, _ = await _get(f"{found.group(1)}/runs/{RUN_ID}/collaboration.html")
        assert status == 200 and "Event audit" in body
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_symlink_out_of_the_horde_is_not_served(
    server: HttpServer, horde: Path, tmp_path: Path
) -> None:
    """`REPORT.md -> /etc/passwd` was served as HTML and under /api/: now 403 with one line."""
    for page in plant_symlinks(horde, tmp_path / "elsewhere"):
        for url in (f"{server.url}/{page}", f"{server.url}/api/{page}"):
            status, body, _ = await _get(url)
            assert status == 403 and OUTSIDE not in body, (url, body)
            assert body.count("outside the horde directory") == 1, (url, body)
    status, body, _ = await _get(f"{server.url}/runs/{RUN_ID}/members/member-1/index.html")
    assert status == 200 and "refused: outside the horde directory" in body


async def test_a_folder_without_its_slash_redirects(server: HttpServer) -> None:
    """`/runs/<id>` is the run's folder: 301 to `/runs/<id>/`, keeping the query."""
    for path in (f"/runs/{RUN_ID}", f"/api/runs/{RUN_ID}", f"/runs/{RUN_ID}/members/member-1"):
        status, _, headers = await _get(f"{server.url}{path}?refresh=0", follow=False)
        assert status == 301 and headers["Location"] == f"{path}/?refresh=0", (path, headers)
    status, body, _ = await _get(f"{server.url}/runs/{RUN_ID}")
    assert status == 200 and f"Run {RUN_ID}" in body
    assert (await _get(f"{server.url}/runs/{RUN_ID}/nope.html", follow=False))[0] == 404
    status, _, headers = await _get(f"{server.url}//evil", follow=False)
    assert status == 301 and headers["Location"] == "/evil/"  # never off this site


async def test_refresh_0_survives_clicks(server: HttpServer) -> None:
    """A live page read with `?refresh=0` links on with it, so a click does not start the
    reloading again; without it, links stay bare (and an export never has it)."""
    live = f"{server.url}/runs/{SWARM_ID}-h1/index.html"
    _, body, _ = await _get(live + "?refresh=0")
    local = [h for h in re.findall(r'href="([^"]*)"', body) if not h.startswith("http")]
    assert local and all("?refresh=0" in h for h in local), local
    findings = next(h for h in local if h.startswith("findings.html"))
    _, page, _ = await _get(f"{server.url}/runs/{SWARM_ID}-h1/{findings}")
    assert 'http-equiv="refresh"' not in page and 'findings-oldest.html?refresh=0"' in page
    _, bare, _ = await _get(live)
    assert "refresh=0" not in bare


async def test_served_project_pages_and_logs_take_their_query(server: HttpServer) -> None:
    base = server.url
    status, page, _ = await _get(f"{base}/ideas.html?refresh=0")
    assert status == 200 and '<div class="scope">project</div>' in page
    assert f'href="ideas.html?refresh=0&amp;run={RUN_ID}"' in page  # the run filter
    data = json.loads((await _get(f"{base}/api/ideas.html?run={RUN_ID}"))[1])
    assert data["run"] == RUN_ID and data["rows"]
    assert {row["run"] for row in data["rows"]} == {RUN_ID}
    nothing = json.loads((await _get(f"{base}/api/ideas.html?run=nope"))[1])
    assert nothing["rows"] == []
    log = f"{base}/api/runs/{RUN_ID}/members/member-1/log.html?tail=1"
    assert json.loads((await _get(log))[1])["tail"] == "exit completed after 60 turns\n"
