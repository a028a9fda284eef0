"""`horde-tui mcp`: the `horde` tool as an MCP server, driven by the `mcp` SDK's own client.

A real server process over stdio on a real `.horde/`: the tool it lists is the member's
tool (same schema), every call goes through the one dispatcher (`protocol.run_action`), so
texts, refusals and `requestId` replays are the ones `horde-tui tool` gives; the ledgers
are resources and the member protocol is a prompt. The identity rule holds: a live run's
members and `parent` belong to their owners, and `--member auto` joins as `ext-N`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv
from support.mcpclient import call, cli_tool, events, server_env, stdio_session
from support.paths import HELPERS

from horde_tui.common.prompts import SYSTEM_PROMPT
from horde_tui.protocol import run_action
from horde_tui.protocol.schema import tool_schema
from horde_tui.store.store import HordeStore

RUN = "r1"
FAKE_SUPERVISOR = HELPERS / "fake_supervisor.py"


def ledger(horde: Any) -> list[dict[str, Any]]:
    return [json.loads(x) for x in horde.ledger_bytes().decode().splitlines() if x.strip()]


async def test_the_listed_tool_is_the_members_horde_tool(horde: Any) -> None:
    horde.store().ensure_run(RUN)  # `mcp --run` names a run that exists
    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        tools = (await session.list_tools()).tools

    definition = tool_schema()["function"]
    assert [t.name for t in tools] == ["horde"]
    assert tools[0].input_schema == definition["parameters"]
    assert tools[0].description is not None
    assert tools[0].description.startswith(definition["description"])


def test_the_schema_types_each_field_one_way_for_strict_clients() -> None:
    """Gemini's schema subset takes one `type` per field: no lists of types, no unions.
    The whole numbers are integers (strings still pass validation, as models send)."""
    properties = tool_schema()["function"]["parameters"]["properties"]
    for name, prop in properties.items():
        assert isinstance(prop.get("type"), str), (name, prop)
        assert not {"anyOf", "oneOf", "allOf"} & set(prop), (name, prop)
    assert {properties[n]["type"] for n in ("page", "limit", "revision")} == {"integer"}


async def test_an_id_sent_as_a_json_number_is_taken(horde: Any) -> None:
    """The MCP Inspector sends `id=3` as the number 3; the field says the bare number works."""
    horde("member-1", "idea", text="Audit app/db/query.py")

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        claimed = await session.call_tool("horde", {"action": "claim", "id": 1})
        done = await session.call_tool("horde", {"action": "done", "id": 1, "result": "clean"})

    assert not claimed.is_error, claimed.content
    assert not done.is_error, done.content
    assert horde.state("reader").ideas["#1"].status == "done"


async def test_every_action_family_writes_as_the_member_the_server_was_started_for(
    horde: Any,
) -> None:
    horde.claimed("member-1", "Audit app/db/query.py")
    assert horde(
        "member-1",
        "finding",
        text="SQL injection in build_query()",
        evidence="app/db/query.py:42",
        concern="sql-injection",
        concernDef="SQL built from untrusted input",
    ).ok

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        said = {
            "idea": await call(session, "idea", text="Audit app/web/login.py"),
            "claim": await call(session, "claim", id="#2"),
            "post": await call(session, "post", text="Plan: read login.py, then fuzz it"),
            "finding": await call(
                session,
                "finding",
                idea="#2",
                text="login() compares passwords with ==",
                evidence="app/web/login.py:17",
                concern="timing-attack",
                concernDef="secret compared in non-constant time",
            ),
            "fact": await call(session, "fact", text="The app runs Python 3.12"),
            "assert": await call(session, "assert", text="The admin panel requires 2FA"),
            "review": await call(
                session,
                "review",
                target="F1",
                verdict="supports",
                support="tested",
                checked="build_query with a quote",
                evidence="ran it: the quote breaks the SQL",
            ),
            "message": await call(
                session, "message", to="member-1", kind="question", text="Is F1 reachable?"
            ),
            "done": await call(session, "done", id="#2", result="filed F2"),
            "solved": await call(session, "solved", text="Injectable, see F1", cites="F1"),
            "list": await call(session, "list"),
        }

    failed = {action: text for action, (error, text) in said.items() if error}
    assert not failed
    state = horde.state("reader")
    assert state.ideas["#2"].status == "done" and state.ideas["#2"].owner == "ext-1"
    assert state.findings["F2"].by == "ext-1"
    assert [v.by for v in state.reviews.values()] == ["ext-1"]
    assert state.proposals[RUN][-1].by == "ext-1"
    # The same read through the dispatcher in this process gives the same text.
    direct = run_action(HordeStore(horde.root, "ext-1"), {"action": "list"}, run=RUN)
    assert said["list"][1] == direct.text


async def test_a_refusal_is_the_one_line_horde_tui_tool_prints(horde: Any) -> None:
    held = horde.claimed("member-1", "Audit app/db/query.py")

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        error, text = await call(session, "claim", id=held)
    cli = cli_tool(horde.workdir, "ext-1", RUN, "claim", f"id={held}")

    assert (cli.returncode, cli.stderr) == (1, "")
    assert text == cli.stdout.rstrip("\n")
    assert text.startswith("refused: ") and "\n" not in text
    assert error  # a rule's refusal is a tool error the agent reads and recovers from


async def test_a_retry_with_the_same_request_id_writes_once(horde: Any) -> None:
    horde.store().ensure_run(RUN)  # `mcp --run` names a run that exists
    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        first = await call(session, "idea", text="Audit app/api/search.py", requestId="ext-1-7")
        again = await call(session, "idea", text="Audit app/api/search.py", requestId="ext-1-7")

    assert first[0] is False and first[1].startswith("ok #1 added")
    receipt = first[1].splitlines()[0]
    assert again[0] is False and again[1].startswith(f"{receipt} (replayed: same requestId)")
    assert [r["op"] for r in ledger(horde) if r["op"].startswith("idea")] == ["idea.add"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"action": "fly"}, "usage: unknown action 'fly'"),
        ({"action": "idea"}, "usage: field 'text' is required for action 'idea'"),
        ({"action": "claim", "id": ["#1"]}, "usage: field 'id' must be a string"),
        ({"text": "no action"}, "usage: field 'action' is required"),
    ],
)
async def test_a_bad_argument_is_a_tool_error_and_the_server_carries_on(
    horde: Any, arguments: dict[str, Any], expected: str
) -> None:
    horde.store().ensure_run(RUN)  # `mcp --run` names a run that exists
    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        bad = await session.call_tool("horde", arguments)
        after = await call(session, "idea", text="Audit app/api/search.py")

    assert bad.is_error
    assert bad.content[0].type == "text" and bad.content[0].text.startswith(expected)
    assert after[0] is False and after[1].startswith("ok #1 added")


async def test_the_ledgers_are_resources_and_the_protocol_a_prompt(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        listed = (await session.list_resources()).resources
        uris = [str(r.uri) for r in listed]
        ideas = await session.read_resource("horde://ledger/IDEAS.md")
        prompts = [p.name for p in (await session.list_prompts()).prompts]
        prompt = await session.get_prompt("horde-member")

    for name in ("IDEAS", "FINDINGS", "FACTS", "CLAIMS", "RESOURCES", "BOARD", "CONCERNS"):
        assert f"horde://ledger/{name}.md" in uris
    assert f"horde://run/{RUN}/TASK.md" in uris
    text = ideas.contents[0]
    assert "Audit app/db/query.py" in getattr(text, "text", "")
    assert prompts == ["horde-member"]
    # Remote members read these: no absolute path of the serving machine.
    for resource in listed:
        assert str(horde.workdir) not in (resource.description or ""), resource
        assert " /" not in f" {resource.description}", resource
    body = prompt.messages[0].content
    assert body.type == "text"
    assert SYSTEM_PROMPT.splitlines()[0] in body.text
    assert "ext-1" in body.text and RUN in body.text


def live_run(workdir: Path, members: tuple[str, ...]) -> subprocess.Popen[str]:
    """A stand-in supervisor of run r1 that records `members` (the first one a live
    process that has already ended its script), live until its stdin closes."""
    script = workdir / "member.sh"
    script.write_text("read go\n")
    sup = subprocess.Popen(
        [sys.executable, str(FAKE_SUPERVISOR), str(workdir / ".horde"), RUN, str(script), *members],
        cwd=workdir,
        env=server_env(workdir / ".horde"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert sup.stdout is not None
    assert sup.stdout.readline().startswith("member-exit")
    return sup


def mcp_process(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_argv("mcp", *args),
        cwd=workdir,
        env=server_env(workdir / ".horde"),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("name", ["member-2", "parent"])
def test_a_live_runs_member_or_parent_is_refused_in_one_line(horde: Any, name: str) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    sup = live_run(horde.workdir, ("member-1", "member-2"))
    try:
        done = mcp_process(horde.workdir, "--member", name, "--run", RUN)
    finally:
        assert sup.stdin is not None
        sup.stdin.close()
        sup.wait(30)

    assert done.returncode == 1, done
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("horde-tui mcp: refused: ") and "(identity rule)" in lines[0]
    assert not [e for e in events(horde.workdir, RUN) if e.get("kind") == "member-join"]


async def test_auto_joins_a_live_run_as_the_next_free_external_name(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    sup = live_run(horde.workdir, ("member-1", "member-2"))
    try:
        async with (
            stdio_session(horde.workdir, "--member", "auto", "--run", RUN) as one,
            stdio_session(horde.workdir, "--member", "auto", "--run", RUN) as two,
        ):
            first = await call(one, "post", text="hello from one")
            second = await call(two, "post", text="hello from two")
            joined = [e for e in events(horde.workdir, RUN) if e.get("kind") == "member-join"]
    finally:
        assert sup.stdin is not None
        sup.stdin.close()
        sup.wait(30)

    assert not first[0] and not second[0]
    assert sorted(e["member"] for e in joined) == ["ext-1", "ext-2"]
    assert all(e["type"] == "lifecycle" and e["role"] == "external" for e in joined)
    posts = {p.by for p in horde.state("reader").posts}
    assert {"ext-1", "ext-2"} <= posts
    left = [e["member"] for e in events(horde.workdir, RUN) if e.get("kind") == "member-leave"]
    assert sorted(left) == ["ext-1", "ext-2"]


async def test_a_clean_stop_reaches_the_agent_as_the_wind_down_refusal(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        before = await call(session, "idea", text="Audit app/web/login.py")
        (horde.root / "runs" / RUN / ".stop-clean").write_text("")
        during = await call(session, "idea", text="Audit app/api/search.py")
        posted = await call(session, "post", text="Wrapping up: nothing held")

    assert before[0] is False
    assert during == (
        True,
        "refused: `idea` during wind-down (a clean stop was requested); finish what you "
        "hold: file findings, mark ideas done or rule-out, and post a summary",
    )
    assert posted[0] is False


async def test_a_finished_runs_own_member_writes_on_without_becoming_external(
    horde: Any,
) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    run_dir = horde.root / "runs" / RUN
    (run_dir / "MANIFEST.json").write_text('{"members": [{"name": "member-1", "role": "member"}]}')

    async with stdio_session(horde.workdir, "--member", "member-1", "--run", RUN) as session:
        posted = await call(session, "post", text="A late note after the run")

    assert posted[0] is False
    assert not [e for e in events(horde.workdir, RUN) if e.get("kind") == "member-join"]


def finish(run_dir: Path) -> None:
    """The files of a run the supervisor finished: its task, manifest and report."""
    (run_dir / "TASK.md").write_text("Audit the app.\n")
    (run_dir / "MANIFEST.json").write_text('{"members": [{"name": "member-1"}]}')
    (run_dir / "REPORT.md").write_text("# Report\n")


def test_a_finished_run_refuses_a_join_in_one_line(horde: Any) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    finish(horde.root / "runs" / RUN)

    done = mcp_process(horde.workdir, "--member", "auto", "--run", RUN)

    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"horde-tui mcp: refused: run {RUN} is finished")
    assert not [e for e in events(horde.workdir, RUN) if e.get("kind") == "member-join"]


async def test_a_run_that_finishes_under_the_server_refuses_writes_in_one_line(
    horde: Any,
) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")

    async with stdio_session(horde.workdir, "--member", "ext-1", "--run", RUN) as session:
        finish(horde.root / "runs" / RUN)
        wrote = await call(session, "idea", text="Audit app/web/login.py")
        read = await call(session, "list")

    assert wrote[0] is True
    assert wrote[1].startswith(f"refused: run {RUN} is finished")
    assert "\n" not in wrote[1]
    assert read[0] is False and "Audit app/db/query.py" in read[1]
    assert len(horde.state("reader").ideas) == 1
