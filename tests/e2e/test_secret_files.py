"""One list of secret files (`store/secretfiles.py`), and every secret a run writes is on it.

A real headless run on the stub model (supervisor, gateway, a member) and a real
`horde-tui mcp --http` on that run write their files; the test then reads every file
under `.horde/` and fails on any that holds a secret (the gateway token, the MCP token,
the provider key) and is not named by the list. The same list refuses the `read` tool,
the sandbox masks and the export masker, checked here on the files the run left.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.app import RUN_ID
from support.cli import cli, headless, wait_for_line
from support.mcpclient import http_server
from support.web_scene import web_scene

from horde_tui.member.tools import WorkspaceTools
from horde_tui.store.mask import Masker
from horde_tui.store.secretfiles import is_secret, masked_files
from horde_tui.stubmodel import StubThread
from horde_tui.stubmodel.agent import AgentPolicy
from horde_tui.web.pages import Site

PLAN = {"*": [{"tool": "horde", "args": {"action": "list"}, "until_ok": 0, "hold_ms": 200}] * 300}


def _secrets_in(horde_dir: Path, values: list[str]) -> dict[Path, list[str]]:
    """Every file under `horde_dir` holding one of `values`, and which."""
    found: dict[Path, list[str]] = {}
    for path in sorted(horde_dir.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        held = [v for v in values if v.encode() in data]
        if held:
            found[path] = held
    return found


@pytest.mark.slow
@pytest.mark.e2e
def test_every_file_holding_a_secret_is_on_the_list(tmp_path: Path) -> None:
    key = "sk-provider-" + os.urandom(12).hex()
    with StubThread(policy=AgentPolicy(PLAN)) as stub:
        proc = headless(tmp_path, stub, ("HORDE_API_KEY", key), members=1)
        wait_for_line(proc, "[member-spawn] member-1")
        run_dir = next((tmp_path / ".horde" / "runs").iterdir())
        try:
            with http_server(tmp_path, "--member", "ext-1", "--run", run_dir.name):
                mcp_token = (run_dir / "mcp-token").read_text().strip()
                gateway_token = (run_dir / "gateway.token").read_text().strip()
        finally:
            cli(tmp_path, "stop-hard")
            proc.communicate(timeout=120)
    horde_dir = (tmp_path / ".horde").resolve()
    values = [mcp_token, gateway_token, key]
    found = _secrets_in(horde_dir, values)
    assert {v for held in found.values() for v in held} >= {mcp_token, gateway_token}, found
    outside = {
        str(p.relative_to(horde_dir)): v for p, v in found.items() if not is_secret(p, horde_dir)
    }
    assert outside == {}, f"secrets outside the list of secret files: {outside}"
    unmasked = set(found) - set(masked_files(horde_dir, locks=False))
    assert unmasked == set(), f"secret files the sandbox would not mask: {unmasked}"
    tools = WorkspaceTools(tmp_path)
    for path in found:
        refused = tools.read(str(path.relative_to(tmp_path.resolve())))
        assert not refused.ok and not any(v in refused.text for v in values), refused.text
    masked = Masker(horde_dir)(f"token {mcp_token} and {gateway_token}")
    assert mcp_token not in masked and gateway_token not in masked, masked


def test_the_mcp_token_is_refused_by_read_and_masked_in_exports(horde) -> None:  # type: ignore[no-untyped-def]
    run_dir = horde.root / "runs" / "r1"
    run_dir.mkdir(parents=True, exist_ok=True)
    token = "mcp-" + os.urandom(16).hex()
    (run_dir / "mcp-token").write_text(token + "\n")
    result = WorkspaceTools(horde.workdir).read(".horde/runs/r1/mcp-token")
    assert not result.ok and token not in result.text and result.text.startswith("refused: ")
    assert token not in Masker(horde.root)(f"Authorization: {token}")


def test_export_masks_credentials_in_urls(horde) -> None:  # type: ignore[no-untyped-def]
    text = (
        "DATABASE_URL=postgres://app:pw-SECRET-1@db.internal:5432/app\n"
        "git remote: https://bob:ghtok-SECRET-2@example.com/r.git and http://example.com/x\n"
    )
    shown = Masker(horde.root)(text)
    assert "SECRET" not in shown, shown
    assert "postgres://[masked]@db.internal:5432/app" in shown
    assert "http://example.com/x" in shown


def test_serve_refuses_a_document_linked_to_a_secret_file(tmp_path: Path) -> None:
    """`REPORT.md` made a link to the run's `mcp-token`: its page is not found, rather
    than the token shown (masked or not)."""
    horde_dir = web_scene(tmp_path / "project")
    run_dir = horde_dir / "runs" / RUN_ID
    (run_dir / "mcp-token").write_text("mcp-token-SECRET-" + os.urandom(8).hex() + "\n")
    (run_dir / "REPORT.md").unlink(missing_ok=True)
    (run_dir / "REPORT.md").symlink_to(run_dir / "mcp-token")
    page = Site(horde_dir).render(f"runs/{RUN_ID}/files/REPORT.md.html")
    assert page.status == 404 and "SECRET" not in page.body and "[masked]" not in page.body
