"""Hostile and sloppy input (issue 12, item 9): no input yields a traceback.

Each case is a real `horde-tui tool` process (or a real in-process call where the member
runs the same code): one line on stderr, exit 1 for a rule, 2 for usage.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.common.inputs import JSON_DEPTH_HINT, loads, whole_number


def tool(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    full_env.update({"HORDE_MEMBER": "member-1", **env})
    return subprocess.run(
        cli_argv("tool", *args),
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line(r: subprocess.CompletedProcess[str], code: int) -> str:
    """The single stderr line of a refused call with exit status `code`."""
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines() or r.stdout.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# -- numbers: ASCII digits only ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["²", "1²", "٣", "①", "12\n", " 7", "+3", "-1", "9" * 5000, ""],
    ids=[
        "sup2",
        "1sup2",
        "arabic3",
        "circled1",
        "newline",
        "space",
        "plus",
        "minus",
        "huge",
        "empty",
    ],
)
def test_whole_number_takes_ascii_digits_only(text: str) -> None:
    assert whole_number(text) is None


def test_whole_number_reads_plain_digits() -> None:
    assert whole_number("8080") == 8080
    assert whole_number("007") == 7


def test_superscript_port_is_a_one_line_refusal(tmp_path: Path) -> None:
    assert tool(tmp_path, "resource", "name=db").returncode == 0
    r = tool(tmp_path, "resource-state", "id=R1", "state=ready", "ports=²")
    line = one_line(r, 1)
    assert "port '²' is not a number from 1 to 65535" in line
    # A refused call writes no port: the resource still has none.
    assert "²" not in (tmp_path / ".horde" / "RESOURCES.md").read_text()


@pytest.fixture
def artifact(horde):
    """member-1 published runnable A1; member-2 may review it."""
    horde.claimed("member-1", "Audit app/db/query.py")
    (horde.workdir / "poc.py").write_text("print('poc')\n")
    assert horde("member-1", "artifact", path="poc.py", criteria="prints poc").id == "A1"
    return horde


def review(horde, **extra: str):
    fields = {
        "target": "A1",
        "verdict": "supports",
        "support": "tested",
        "checked": "the whole claim",
        "evidence": "ran it",
    }
    return horde("member-2", "review", **{**fields, **extra})


def test_superscript_revision_is_refused(artifact) -> None:
    result = review(artifact, revision="r²")
    assert result.exit_code == 1
    assert "`revision`='r²' is not a whole number" in result.text
    assert artifact.state().reviews == {}


def test_huge_event_number_cited_as_evidence_is_refused_not_a_crash(artifact) -> None:
    result = review(artifact, evidence="see E" + "9" * 5000)
    assert result.exit_code == 1
    assert "which does not exist" in result.text
    assert artifact.state().reviews == {}


@pytest.mark.parametrize(
    "ident", ["#²", "#٣", "٣", "1²"], ids=["sup2", "hash-arabic3", "arabic3", "1sup2"]
)
def test_non_ascii_digit_ids_are_refused_not_read_as_numbers(horde, ident: str) -> None:
    horde("member-1", "idea", text="Audit app/db/query.py")
    result = horde("member-1", "claim", id=ident)
    assert result.exit_code == 1
    assert "is not a #N id" in result.text
    assert horde.state().ideas["#1"].status == "open"


# -- JSON nested without bound -----------------------------------------------------------


def test_loads_turns_deep_nesting_into_value_error() -> None:
    with pytest.raises(ValueError, match=JSON_DEPTH_HINT):
        loads("[" * 50_000 + "]" * 50_000)
    assert loads('{"a": [1]}') == {"a": [1]}


@pytest.mark.parametrize(
    "text",
    ["[" * 50_000 + "]" * 50_000, '{"text": ' + "[" * 50_000 + "]" * 50_000 + "}"],
    ids=["array", "in-object"],
)
def test_deep_json_option_is_usage_not_a_traceback(tmp_path: Path, text: str) -> None:
    line = one_line(tool(tmp_path, "post", "--json", text), 2)
    assert "--json is not valid JSON" in line
    assert not (tmp_path / ".horde" / "ledger.jsonl").exists()


def test_deep_json_tool_arguments_from_a_model_are_a_usage_line(tmp_path: Path) -> None:
    """The member parses a model's `horde` arguments with the same code."""
    from horde_tui.member.tools import _checked_args, _Refused

    with pytest.raises(_Refused, match="not valid JSON"):
        _checked_args("bash", "[" * 50_000 + "]" * 50_000)


# -- @FILE values (regression: already one line on main) ---------------------------------


def test_invalid_utf8_file_value_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not text")
    line = one_line(tool(tmp_path, "idea", "text=@bad.txt"), 2)
    assert "not UTF-8 text" in line


def test_endless_file_value_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    line = one_line(tool(tmp_path, "idea", "text=@/dev/zero"), 2)
    assert "over the cap of 4000 characters" in line


# -- a .horde that cannot be used -----------------------------------------------------------


@pytest.mark.parametrize("action", [["list"], ["idea", "text=Audit app/db/query.py"]])
def test_horde_dir_naming_a_regular_file_is_usage(tmp_path: Path, action: list[str]) -> None:
    (tmp_path / "afile").write_text("not a directory\n")
    line = one_line(tool(tmp_path, *action, HORDE_DIR="afile"), 2)
    assert "HORDE_DIR" in line and "not a directory" in line
    assert (tmp_path / "afile").read_text() == "not a directory\n"


@pytest.fixture
def immutable_lock(tmp_path: Path) -> Iterator[Path]:
    """A `.horde/` whose `.lock` cannot be opened for writing, even by root: `chattr +i`
    where the file system allows it, else `.lock` is a directory."""
    assert tool(tmp_path, "idea", "text=Audit app/db/query.py").returncode == 0
    lock = tmp_path / ".horde" / ".lock"
    chattr = shutil.which("chattr")
    made_immutable = (
        chattr is not None
        and subprocess.run([chattr, "+i", str(lock)], capture_output=True).returncode == 0
    )
    if not made_immutable:
        lock.unlink()
        lock.mkdir()
    try:
        yield tmp_path
    finally:
        if made_immutable:
            subprocess.run([str(chattr), "-i", str(lock)], capture_output=True)


@pytest.mark.parametrize("action", [["list"], ["idea", "text=Check app/web/login.py"]])
def test_unopenable_lock_is_one_line_and_loses_nothing(
    immutable_lock: Path, action: list[str]
) -> None:
    ledger = immutable_lock / ".horde" / "ledger.jsonl"
    before = ledger.read_bytes()
    r = tool(immutable_lock, *action)
    assert "Traceback" not in r.stderr, r.stderr
    if action == ["list"]:
        # A read takes no lock: it still works.
        assert r.returncode == 0 and "#1 Audit app/db/query.py" in r.stdout
        return
    line = one_line(r, 1)
    assert ".lock" in line and "nothing was recorded" in line
    assert ledger.read_bytes() == before


def test_unreadable_ledger_is_one_line(tmp_path: Path) -> None:
    """A ledger that cannot be read (here: a directory in its place, since root reads
    any file whatever its mode)."""
    horde_dir = tmp_path / ".horde"
    horde_dir.mkdir()
    (horde_dir / "ledger.jsonl").mkdir()
    for action in (["list"], ["idea", "text=Audit app/db/query.py"]):
        line = one_line(tool(tmp_path, *action), 1)
        assert "ledger.jsonl" in line, line


# -- process settings read from the environment ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HORDE_COMPACT_TOKENS", "lots"),
        ("HORDE_GATEWAY_BACKOFF_MS", "x"),
        ("HORDE_GATEWAY_BACKOFF_MS", "inf"),
    ],
    ids=["compact-word", "backoff-word", "backoff-inf"],
)
def test_gateway_number_typo_is_usage_at_start(tmp_path: Path, name: str, value: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env[name] = value
    r = subprocess.run(
        [sys.executable, "-m", "horde_tui.gateway", "--model", "openai/stub", "--port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = one_line(r, 2)
    assert name in line and repr(value) in line


def test_a_hand_edited_pid_file_or_variable_is_no_pid(tmp_path: Path) -> None:
    """`.live` and HORDE_PARENT_PID hold a pid; '²' there used to crash `status`."""
    from horde_tui.common.watchdog import parent_pid_from_env
    from horde_tui.store.runs import live_file, supervisor_pid

    live_file(tmp_path).write_text("²\n")
    assert supervisor_pid(tmp_path) is None
    live_file(tmp_path).write_text("123\n")
    assert supervisor_pid(tmp_path) == 123
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HORDE_PARENT_PID", "١٢")
        assert parent_pid_from_env() is None


def test_run_with_an_unopenable_lock_is_one_line(immutable_lock: Path) -> None:
    """The supervisor takes the same lock at start: `horde-tui run` stops there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env["HORDE_MODEL"] = "openai/stub"
    r = subprocess.run(
        cli_argv("run", "--headless", "2", "audit app.py"),
        cwd=immutable_lock,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = one_line(r, 1)
    assert line.startswith("horde-tui run: cannot use ") and ".lock" in line


def test_a_ledger_line_with_a_huge_number_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """json.loads refuses over 4300 digits, and so did the salvage of the bad line's seq."""
    assert tool(tmp_path, "idea", "text=Audit app/db/query.py").returncode == 0
    ledger = tmp_path / ".horde" / "ledger.jsonl"
    with ledger.open("a") as fh:
        fh.write('{"seq": ' + "9" * 5000 + ', "op": "idea.add", "id": "#' + "7" * 5000 + '"}\n')
    r = tool(tmp_path, "list")
    assert "Traceback" not in r.stderr, r.stderr[-300:]
    assert r.returncode == 0 and "#1 Audit app/db/query.py" in r.stdout
    r = tool(tmp_path, "idea", "text=Check app/web/login.py")
    assert r.returncode == 0 and r.stdout.startswith("ok #2 added"), r.stdout


@pytest.mark.parametrize(
    "count", ["9" * 5000, "٣", "2/٣", "²"], ids=["huge", "arabic", "h-arabic", "sup"]
)
def test_member_count_takes_ascii_digits_only(count: str) -> None:
    """`horde-tui run COUNT`: '٣' was read as 3 and 5000 digits crashed int()."""
    from horde_tui.protocol.targets import TargetError, parse_count

    with pytest.raises(TargetError, match="is not M or H/M"):
        parse_count(count)
    assert parse_count("2/4").members == 4
