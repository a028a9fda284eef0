"""A sloppy model's calls get one line that names what to send instead.

Misnamed actions get the nearest valid action names, misnamed fields the field's real
name for that action; a member that keeps sending the same refused call is told to stop
and then ends its session as `looping`, which the supervisor resets like a crash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import GatewayProcess
from support.member import prepare, run_member

from horde_tui.common.fence import unfence
from horde_tui.member.loop import LOOP_EXIT, LOOP_WARN
from horde_tui.protocol.dispatch import UsageError, parse_params
from horde_tui.stubmodel.agent import AgentPolicy


def usage(raw: dict[str, Any]) -> str:
    with pytest.raises(UsageError) as caught:
        parse_params(raw)
    text = str(caught.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("action", "suggested"),
    [
        ("create_idea", "'idea'"),
        ("add_finding", "'finding'"),
        ("list_findings", "'findings'"),
        ("rule_out", "'rule-out'"),
        ("confirm_solved", "'confirm-solved'"),
        ("ideaa", "'idea'"),
        ("Claim", "'claim'"),
    ],
)
def test_a_misnamed_action_gets_the_nearest_valid_names(action: str, suggested: str) -> None:
    text = usage({"action": action, "text": "x"})
    assert text.startswith(f"unknown action '{action}'; did you mean {suggested}")
    assert "actions: amend, assert, claim" in text  # the full list is still there


def test_an_action_with_no_near_name_lists_the_actions_only() -> None:
    text = usage({"action": "xyzzy"})
    assert text.startswith("unknown action 'xyzzy'; actions: amend")
    assert "did you mean" not in text


@pytest.mark.parametrize(
    ("raw", "field", "real"),
    [
        ({"action": "claim", "idea_id": "#1"}, "idea_id", "id"),
        ({"action": "done", "idea_id": "#1", "result": "r"}, "idea_id", "id"),
        ({"action": "finding", "idea_id": "#1", "text": "t"}, "idea_id", "idea"),
        (
            {"action": "finding", "idea": "#1", "text": "t", "severity": "high"},
            "severity",
            "importance",
        ),
        ({"action": "verify", "finding_id": "F1"}, "finding_id", "id"),
        ({"action": "review", "finding_id": "F1"}, "finding_id", "target"),
        ({"action": "idea", "description": "look at app.py"}, "description", "text"),
        ({"action": "finding", "concern_def": "d", "text": "t"}, "concern_def", "concernDef"),
    ],
)
def test_a_misnamed_field_gets_its_real_name(raw: dict[str, Any], field: str, real: str) -> None:
    text = usage(raw)
    action = raw["action"]
    assert text.startswith(
        f"field '{field}' is not accepted by action '{action}'; the field is '{real}'"
    ), text


def test_an_unknown_field_with_no_near_name_keeps_the_accepted_list() -> None:
    text = usage({"action": "idea", "text": "t", "foo": 1})
    assert text == "field 'foo' is not accepted by action 'idea' (accepted: requestId, text)"


# -- a real member process against the real gateway and the scripted stub --------------------


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_member_repeating_a_refused_call_is_warned_then_ends_looping(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    prepare(tmp_path)
    same = _call("horde", action="create_idea", text="look at app.py")
    other = _call("horde", action="list")
    gateway.stub.stub.set_scripts(
        {"looper-1": [same, same, other, same, same, same, same, same, same, same, same]}
    )

    code, events, stderr = run_member(gateway, tmp_path, "looper-1", HORDE_REMIND_CALLS="0")

    assert code == 0, stderr
    assert "Traceback" not in stderr
    exit_event = events[-1]
    assert exit_event["type"] == "exit" and exit_event["cause"] == "looping"
    assert "create_idea" in exit_event["detail"]
    transcript = Path(exit_event["transcript"])
    results = [
        m["content"]
        for m in map(json.loads, transcript.read_text().splitlines())
        if m.get("role") == "tool"
    ]
    refused = [unfence(r) for r in results if "create_idea" in r]
    # Refusal 5 carries the stop notice on the same line; the session ends at LOOP_EXIT.
    assert len(refused) == LOOP_EXIT
    assert all("\n" not in r for r in refused)  # one line inside the fence
    assert all("did you mean 'idea'" in r for r in refused)
    assert [("stop" in r) for r in refused] == [n >= LOOP_WARN for n in range(1, LOOP_EXIT + 1)]
    assert f"{LOOP_WARN} times" in refused[LOOP_WARN - 1]
    # The interleaved valid call did not reset the count of the identical refused one.
    assert len(gateway.stub.stub.requests_for("looper-1")) == LOOP_EXIT + 1


def test_a_scripted_poll_is_a_new_request_each_try_not_an_identical_call() -> None:
    """The demo's polls wait on other members by retrying a refused call; each retry
    carries its own requestId, so a long wait is not mistaken for a looping model."""
    poll = {"tool": "horde", "args": {"action": "inspect", "target": "F4"}, "until_ok": 20}
    policy = AgentPolicy({"m": [poll]})
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    sent = []
    for _ in range(LOOP_EXIT):
        step = policy("m", {"messages": messages, "tools": [{}]})
        assert step is not None
        sent.append(json.loads(step.tool_calls[0].arguments_json()))
        messages.append({"role": "tool", "content": "[horde result]\nrefused: F4 does not exist"})

    assert "requestId" not in sent[0]
    retries = [args.pop("requestId") for args in sent[1:]]
    assert len(set(retries)) == len(retries)
    assert all(args == {"action": "inspect", "target": "F4"} for args in sent)
