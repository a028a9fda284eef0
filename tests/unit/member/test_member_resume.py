"""A member session carried on from its transcript (`HORDE_RESUME_SESSION`).

A real member process is killed in the middle of a tool call; a second process resumes
its transcript against the same gateway and scripted stub, which records what the model
was sent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import GatewayProcess
from support.member import RUN, call, prepare, run_member
from support.processes import wait_until

from horde_tui.common import prompts
from horde_tui.member.session import load_conversation
from horde_tui.store.transcript import print_transcript

NAME = "member-7"
"""A name no other test of the session's shared stub uses, so its requests are ours."""


def records(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_a_killed_session_resumes_with_its_conversation(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    horde_dir = prepare(tmp_path)
    stub = gateway.stub.stub
    stub.set_scripts(
        {
            NAME: [
                call("read", path="app.py"),
                call("bash", command="sleep 60"),
            ]
        }
    )
    sessions = horde_dir / "runs" / RUN / "sessions" / NAME
    first = subprocess.Popen(
        [sys.executable, "-m", "horde_tui.member"],
        cwd=tmp_path,
        env=gateway.member_env(horde_dir, RUN, NAME),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def sleeping() -> bool:
            files = list(sessions.glob("*.jsonl"))
            return bool(files) and "sleep 60" in files[0].read_text()

        assert wait_until(sleeping, 60), "the member never called the slow command"
    finally:
        # SIGTERM ends the member and its command's group, as a stop does; the transcript
        # keeps the call with no result, as after any death in the middle of a tool.
        first.send_signal(signal.SIGTERM)
        first.wait(30)
    (transcript,) = sessions.glob("*.jsonl")
    with open(transcript, "a") as fh:
        fh.write('{"role": "assistant", "content": "torn')  # killed mid-write
    before = [m["role"] for m in records(transcript)]
    assert before == ["system", "user", "assistant", "tool", "assistant"]

    sent_before = len(stub.requests_for(NAME))
    stub.set_scripts({NAME: [{"content": "Resumed and finished."}]})
    code, events, stderr = run_member(gateway, tmp_path, NAME, HORDE_RESUME_SESSION=str(transcript))
    assert code == 0, stderr

    resumed = stub.requests_for(NAME)[sent_before:]
    assert len(resumed) == 1
    messages = resumed[0].body["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
    ]
    assert "hunter2" in messages[3]["content"], "the earlier read result is sent again"
    bash_call = messages[4]["tool_calls"][0]
    assert json.loads(bash_call["function"]["arguments"]) == {"command": "sleep 60"}
    assert messages[5]["tool_call_id"] == bash_call["id"]
    assert messages[5]["content"] == prompts.INTERRUPTED_RESULT
    assert messages[6]["content"] == prompts.RESUMED_NOTICE

    kinds = [e["type"] for e in events]
    assert kinds[0] == "resumed" and events[0]["turns"] == 2
    exit_event = events[-1]
    assert exit_event["cause"] == "completed"
    assert exit_event["turns"] == 3, "the turns before the resume count"
    assert exit_event["transcript"] == str(transcript), "the session's own file continues"

    after = records(transcript)
    assert [m["role"] for m in after] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert after[-1]["content"] == "Resumed and finished."
    conv = load_conversation(transcript)
    assert conv.turns == 3 and not conv.unanswered
    assert print_transcript(transcript) == 1, "the torn line is reported, the rest printed"


def test_resume_of_a_missing_transcript_is_refused_in_one_line(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    missing = tmp_path / "nope.jsonl"
    code, events, stderr = run_member(gateway, tmp_path, NAME, HORDE_RESUME_SESSION=str(missing))
    assert code == 2 and events == []
    assert stderr.strip().splitlines() == [
        f"horde-tui member: HORDE_RESUME_SESSION={str(missing)!r} is not a transcript file "
        "(sessions/<name>/*.jsonl)"
    ]


def test_member_help_names_the_resume_variable() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "horde_tui.member", "--help"],
        env={k: v for k, v in os.environ.items() if not k.startswith("HORDE_")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0 and shown.stderr == ""
    assert "HORDE_RESUME_SESSION=PATH" in shown.stdout
