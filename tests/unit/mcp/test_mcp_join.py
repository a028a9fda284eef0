"""`horde-tui join RUN --agent ...`: each agent's snippet mounts the server for the run.

Each snippet is parsed the way its agent reads it (JSON, TOML, YAML) and must name the
run, the horde directory and `horde-tui mcp`; the Claude Code one is then started with the
SDK's own client to show the command it names really serves the run. `--write` merges
into the project's file and keeps the servers already there.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.cli import cli_argv
from support.mcpclient import call, server_env

RUN = "r1"


def join(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_argv("join", *args),
        cwd=workdir,
        env=server_env(workdir / ".horde"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def body(out: str) -> str:
    """The snippet: the lines between the two comment headers and the brief."""
    lines = out.split("# Brief to paste")[0].splitlines()
    return "\n".join(line for line in lines if not line.startswith("# "))


def server_of(agent: str, text: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment the agent would start, parsed as it reads them."""
    if agent == "claude":
        entry = json.loads(text)["mcpServers"]["horde"]
        return [entry["command"], *entry["args"]], entry["env"]
    if agent == "opencode":
        entry = json.loads(text)["mcp"]["horde"]
        assert entry["type"] == "local" and entry["enabled"] is True
        return entry["command"], entry["environment"]
    if agent == "codex":
        entry = tomllib.loads(text)["mcp_servers"]["horde"]
        return [entry["command"], *entry["args"]], entry["env"]
    yaml = pytest.importorskip("yaml")
    entry = yaml.safe_load(text)["extensions"]["horde"]
    assert entry["type"] == "stdio" and entry["enabled"] is True
    return [entry["cmd"], *entry["args"]], entry["envs"]


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode", "goose"])
def test_each_agents_snippet_mounts_the_server_for_the_run(horde: Any, agent: str) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")

    done = join(horde.workdir, RUN, "--agent", agent)

    assert done.returncode == 0, done.stderr
    command, env = server_of(agent, body(done.stdout))
    assert command[-5:] == ["mcp", "--run", RUN, "--member", "auto"]
    assert Path(command[0]).is_absolute()
    assert env == {"HORDE_DIR": str(horde.root.resolve())}
    brief = done.stdout.split("# Brief to paste as the agent's first message:")[1]
    assert f"horde run {RUN}" in brief and "horde-member" in brief


async def test_the_claude_snippet_starts_a_server_that_serves_the_run(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    command, env = server_of("claude", body(join(horde.workdir, RUN, "--agent", "claude").stdout))

    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await call(session, "list")

    assert listed[0] is False and "Audit app/db/query.py" in listed[1]


def test_write_merges_into_the_projects_file_and_keeps_other_servers(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    existing = {"mcpServers": {"other": {"command": "other-server"}}, "note": "kept"}
    (horde.workdir / ".mcp.json").write_text(json.dumps(existing))

    done = join(horde.workdir, RUN, "--agent", "claude", "--write")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {horde.workdir / '.mcp.json'}")
    written = json.loads((horde.workdir / ".mcp.json").read_text())
    assert written["note"] == "kept"
    assert set(written["mcpServers"]) == {"other", "horde"}
    assert written["mcpServers"]["horde"]["args"][-4:] == ["--run", RUN, "--member", "auto"]


def test_a_remote_snippet_names_the_url_and_reads_the_token_from_the_environment(
    horde: Any,
) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    url = "http://127.0.0.1:8765/mcp"

    done = join(horde.workdir, RUN, "--agent", "codex", "--url", url)

    entry = tomllib.loads(body(done.stdout))["mcp_servers"]["horde"]
    assert entry == {"url": url, "bearer_token_env_var": "HORDE_MCP_TOKEN"}


def test_an_unknown_run_is_one_line(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")

    done = join(horde.workdir, "no-such-run", "--agent", "goose")

    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("horde-tui join: no run named no-such-run in ")
    assert len(done.stderr.splitlines()) == 1
