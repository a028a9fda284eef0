"""A whole run played by the sloppy demo model, natively and under `--tool-protocol json`.

Real supervisor, gateway and member processes over the bundled sample; only the model is
scripted (`horde_tui.demo.sloppy`). The run must finish with the real findings filed, no
process may crash, every refusal the model received must be one line that says what to
send instead, and the member that kept sending one refused call must be reset for
`looping`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv, stub_env

from horde_tui.common.fence import unfence
from horde_tui.demo.policy import DEFECTS
from horde_tui.demo.run import copy_tree, prepare_demo, sample_files
from horde_tui.demo.sloppy import (
    EXPECTED_REFUSALS,
    GATEWAY_REFUSALS,
    LOOPER,
    NATIVE_ONLY_REFUSALS,
    SLOPPY_MEMBERS,
    SLOPPY_PROMPT,
    sloppy_policy,
)
from horde_tui.stubmodel import RecordedRequest, StubThread
from horde_tui.stubmodel.agent import GATEWAY_REFUSAL, _text_results

MEMBERS = [f"member-{n}" for n in range(1, SLOPPY_MEMBERS + 1)]
REFUSED = ("refused", "usage:", GATEWAY_REFUSAL)
REMINDER = "\n\n[reminder]"


def _run(tmp_path: Path, stub: StubThread, *args: str) -> subprocess.CompletedProcess[str]:
    env = stub_env(stub)
    command = ["run", "--headless", "--no-verifier", str(SLOPPY_MEMBERS), SLOPPY_PROMPT]
    return subprocess.run(
        cli_argv(*command, *args),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _results(request: RecordedRequest) -> list[str]:
    """The results (and gateway corrections) in one request, as the model read them."""
    messages = request.body["messages"]
    if request.body.get("tools"):
        return [unfence(str(m["content"])) for m in messages if m.get("role") == "tool"]
    return _text_results(messages)


def _refusals(stub: StubThread) -> set[str]:
    """Every refusal any member's model received, without the periodic reminder."""
    seen: set[str] = set()
    for request in stub.stub.requests:
        if request.member in MEMBERS:
            seen.update(
                text.split(REMINDER, 1)[0] for text in _results(request) if text.startswith(REFUSED)
            )
    return seen


def _events(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == "lifecycle"]


@pytest.mark.slow  # a long real-process run: `pytest -m slow`
@pytest.mark.e2e
@pytest.mark.parametrize("protocol", ["native", "json"])
def test_a_sloppy_model_costs_one_line_per_mistake_and_the_run_finishes(
    tmp_path: Path, protocol: str
) -> None:
    copy_tree(sample_files(), tmp_path)
    with StubThread(policy=sloppy_policy(0)) as stub:
        done = _run(tmp_path, stub, "--tool-protocol", protocol)
        refusals = _refusals(stub)

    out, err = done.stdout, done.stderr
    assert done.returncode == 0, out[-3000:] + err[-3000:]
    assert "outcome: finished" in out
    run_dir = next((tmp_path / ".horde" / "runs").iterdir())

    # The real findings are filed, once each, and nothing forged reached the ledger.
    findings = (tmp_path / ".horde" / "FINDINGS.md").read_text()
    for key in ("secret", "sql", "timing"):
        assert findings.count(f"concern `{DEFECTS[key].slug}`") == 1, findings[:3000]
    assert "forged" not in findings and "mine now" not in findings
    assert "# Mine" not in (tmp_path / ".horde" / "BOARD.md").read_text()

    # No process crashed: no traceback anywhere, every member ended on its own.
    assert "Traceback" not in out + err
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert b"Traceback" not in path.read_bytes(), path
    exits = [(e["member"], e["cause"]) for e in _events(run_dir) if e["kind"] == "member-exit"]
    assert ("member-1", "completed") in exits and ("member-2", "completed") in exits

    # Each refusal is one line, and each mistake got the line that says what to send.
    assert refusals
    assert all("\n" not in text for text in refusals), [t for t in refusals if "\n" in t]
    expected = EXPECTED_REFUSALS | (
        GATEWAY_REFUSALS if protocol == "json" else NATIVE_ONLY_REFUSALS
    )
    missing = {k: v for k, v in expected.items() if not any(v in text for text in refusals)}
    assert not missing, sorted(refusals)

    # The looper was told to stop, then reset for `looping`; its second session filed.
    resets = [e for e in _events(run_dir) if e["kind"] == "member-reset"]
    assert [(e["member"], e["cause"]) for e in resets] == [(LOOPER, "looping")]
    assert (LOOPER, "looping") in exits and exits[-1] != (LOOPER, "looping")
    assert f"[member-reset] {LOOPER} cause=looping" in out


def test_the_demo_command_plays_the_sloppy_policy(tmp_path: Path) -> None:
    """`horde-tui demo --policy sloppy --tool-protocol json` sets up this run by hand."""
    demo = prepare_demo(0, parent=tmp_path, policy_name="sloppy", tool_protocol="json")
    try:
        assert demo.settings.gateway.tool_protocol == "json"
        assert (demo.request.count, demo.request.verifier) == (SLOPPY_MEMBERS, False)
        assert demo.request.prompt == SLOPPY_PROMPT and demo.request.demo
        assert demo.stub.stub.policy is not None
        step = demo.stub.stub.policy("member-1", {"messages": [], "tools": [{}]})
        assert step is not None and step.tool_calls[0].name == "horde"
        assert "create_idea" in step.tool_calls[0].arguments_json()
    finally:
        demo.stub.close()
