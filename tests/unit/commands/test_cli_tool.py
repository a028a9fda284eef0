"""`horde-tui tool`: the shell entry to the horde tool, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from support.cli import cli, heavy_imports

horde = partial(cli, member="member-1")
"""The CLI as member-1, the actor these tests write as unless they say another."""


def test_write_then_read_as_text(tmp_path: Path) -> None:
    r = horde(tmp_path, "tool", "idea", "text=Check src/api/users.py for SQL injection")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok #1 added (open); claim it to work it"
    assert (tmp_path / ".horde" / "runs" / "manual" / "TASK.md").exists()
    r = horde(tmp_path, "tool", "list")
    assert r.returncode == 0
    assert "#1 Check src/api/users.py for SQL injection" in r.stdout


def test_json_output_and_refusal_exit_1(tmp_path: Path) -> None:
    horde(tmp_path, "tool", "idea", "text=Audit the login handler in app/login.py")
    r = horde(tmp_path, "tool", "claim", "id=1", "--output", "json")
    assert json.loads(r.stdout) == {"ok": True, "id": "#1", "text": "ok #1 claimed."}
    r = horde(tmp_path, "tool", "claim", "id=#1", "--output", "json", member="member-2")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["ok"] is False and out["id"] is None
    assert "claimed by member-1" in out["text"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["tool", "frobnicate"], "unknown action 'frobnicate'"),
        (["tool", "claim"], "field 'id' is required"),
        (
            ["tool", "finding", "text=x", "concernNew=maybe"],
            "field 'concernNew' must be true or false",
        ),
        (["tool", "post", "text=hi", "colour=red"], "field 'colour' is not accepted"),
        (["tool", "post", "oops"], "expected key=value"),
        (["tool", "post", "--json", "[1]"], "--json must be a JSON object"),
    ],
)
def test_bad_usage_exit_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    r = horde(tmp_path, *args)
    assert r.returncode == 2
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_json_fields_file_and_stdin_values(tmp_path: Path) -> None:
    horde(tmp_path, "tool", "idea", "text=Check build_query in src/db.py")
    horde(tmp_path, "tool", "claim", "id=1")
    (tmp_path / "ev.txt").write_text("src/db.py:12 f-string into SQL\n")
    r = horde(
        tmp_path,
        "tool",
        "finding",
        "--json",
        json.dumps({"concern": "sql-injection", "concernDef": "untrusted input reaches SQL"}),
        "evidence=@ev.txt",
        "text=@-",
        "importance=high",
        stdin="build_query concatenates user input\n",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = horde(tmp_path, "tool", "inspect", "target=F1")
    assert "src/db.py:12 f-string into SQL" in r.stdout
    assert "build_query concatenates user input" in r.stdout


def test_env_selects_dir_and_run(tmp_path: Path) -> None:
    elsewhere = tmp_path / "other" / ".horde"
    r = horde(tmp_path, "tool", "post", "text=hello", HORDE_DIR=str(elsewhere), HORDE_RUN="r-7")
    assert r.returncode == 0, r.stderr
    assert (elsewhere / "runs" / "r-7" / "events.jsonl").exists()
    assert "## Run r-7" in (elsewhere / "BOARD.md").read_text()
    r = horde(tmp_path, "tool", "post", "text=hello", HORDE_RUN="../x")
    assert r.returncode == 2 and "not a valid run id" in r.stderr


def test_tool_imports_neither_textual_nor_litellm_nor_aiohttp(tmp_path: Path) -> None:
    heavy = ("textual", "litellm", "json_repair", "aiohttp")
    assert heavy_imports(tmp_path, "tool", "list", heavy=heavy) == (0, [])


def test_a_tool_write_scans_no_installed_package_metadata(tmp_path: Path) -> None:
    """pydantic looks for plugins in every installed package's entry points the first
    time a model validates; a `horde-tui tool` process lives for one write and has no
    use for them (issue 11 item 7: a cold write finishes in 300 ms)."""
    code = (
        "import importlib.metadata as md\n"
        "def scan(*a, **k):\n"
        "    raise SystemExit('entry points scanned')\n"
        "md.entry_points = scan\n"
        "from horde_tui.commands.cli import main\n"
        "raise SystemExit(main(['tool', 'post', 'text=no scan']))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 0 and r.stdout.startswith("ok"), (r.stdout, r.stderr)


def test_schema_is_one_flat_horde_tool(tmp_path: Path) -> None:
    r = horde(tmp_path, "schema")
    schema = json.loads(r.stdout)
    assert schema["function"]["name"] == "horde"
    props = schema["function"]["parameters"]["properties"]
    assert "claim" in props["action"]["enum"]
    for name in (
        "text",
        "id",
        "idea",
        "deltaOf",
        "supersedes",
        "concernDef",
        "concernNew",
        "requestId",
        "cites",
        "target",
        "note",
        "cleanup",
        "name",
    ):
        assert name in props, name


@pytest.mark.parametrize("name", ["\r", "a\nb", "tab\there\x1b[2J"])
def test_an_unreadable_file_value_is_refused_on_one_line(tmp_path: Path, name: str) -> None:
    """`text=@NAME` naming a file that cannot be read says so on one line, whatever
    control characters NAME holds (hypothesis found `@\\r` splitting the line)."""
    result = horde(tmp_path, "tool", "post", f"text=@{name}")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read" in lines[0], result.stderr
