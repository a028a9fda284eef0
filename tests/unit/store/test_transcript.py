"""`horde-tui transcript FILE`: a member's session, readable, even when its end is torn."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.cli import cli_argv


def write_session(path: Path, torn: bool = False) -> None:
    messages = [
        {"role": "system", "content": "protocol"},
        {"role": "user", "content": "You are member-1."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        },
        {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "x" * 500},
    ]
    text = "".join(json.dumps(m) + "\n" for m in messages)
    if torn:
        text += '{"role": "assistant", "cont'
    path.write_text(text)


def transcript(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_argv("transcript", *args),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_roles_tool_calls_and_usage(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    write_session(session)
    r = transcript(str(session), "--max-chars", "100")
    assert r.returncode == 0
    assert "── 3 assistant [120 in / 7 out]" in r.stdout
    assert '→ bash({"command": "ls"})' in r.stdout
    assert "── 4 tool (bash, c1)" in r.stdout
    assert "[... 400 more characters]" in r.stdout


def test_torn_last_line_is_reported_not_fatal(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    write_session(session, torn=True)
    r = transcript(str(session))
    assert r.returncode == 1
    assert "!! line 5: not valid JSON (torn last line)" in r.stdout
    assert "── 4 tool (bash, c1)" in r.stdout


def test_missing_file_is_usage_error(tmp_path: Path) -> None:
    r = transcript(str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2 and "is not a file" in r.stderr
