"""`horde-tui mcp` against the MCP Inspector CLI (npm `@modelcontextprotocol/inspector`),
a client nobody here wrote (issue 30 item 13).

The issue's Inspector sent `--tool-arg id=3` as the JSON number 3, which the `horde` tool
once refused; the release npm installed here (0.15.0) sends the string "3", so the number
itself is tested with the SDK's client (tests/unit/mcp/test_mcp_server.py), and this test checks
that a claim by bare number works through the Inspector either way. It is found as `$HORDE_MCP_INSPECTOR`, else `mcp-inspector` on PATH (`.ci/run`
installs it with npm); the tests skip, saying so, where it is not installed. Over stdio
only: this Inspector CLI has no option to send a header, so it cannot carry the HTTP
server's bearer token (the SDK's own client covers HTTP, tests/unit/mcp/test_mcp_http.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest
from support.cli import cli_argv
from support.mcpclient import server_env

RUN = "r1"
INSPECTOR = os.environ.get("HORDE_MCP_INSPECTOR") or shutil.which("mcp-inspector")
pytestmark = pytest.mark.skipif(
    INSPECTOR is None,
    reason="the MCP Inspector CLI is not installed (npm install @modelcontextprotocol/inspector, "
    "or set HORDE_MCP_INSPECTOR to its mcp-inspector)",
)


def inspector(horde: Any, *args: str) -> dict[str, Any]:
    assert INSPECTOR is not None
    done = subprocess.run(
        [INSPECTOR, "--cli", *args],
        cwd=horde.workdir,
        env=server_env(horde.root),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)


def test_the_inspector_claims_an_idea_by_its_bare_number_over_stdio(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    server = cli_argv("mcp", "--member", "ext-1", "--run", RUN)

    listed = inspector(horde, *server, "--method", "tools/list")
    claimed = inspector(
        horde, *server, "--method", "tools/call", "--tool-name", "horde",
        "--tool-arg", "action=claim", "--tool-arg", "id=1",
    )  # fmt: skip

    assert [t["name"] for t in listed["tools"]] == ["horde"]
    assert claimed["isError"] is False, claimed
    assert horde.state("reader").ideas["#1"].status == "claimed"

