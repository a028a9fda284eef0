"""The member's file tools on real files: paging, containment, the `.horde/` and `.git/`
write rules, exact-match edits, atomic writes, and the argument checks of `dispatch`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from horde_tui.member.tools import TOOL_DEFINITIONS, WorkspaceTools


@pytest.fixture
def work(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    (workdir / ".horde").mkdir(parents=True)
    (workdir / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (tmp_path / "secret.txt").write_text("outside\n")
    return workdir


@pytest.fixture
def tools(work: Path) -> WorkspaceTools:
    return WorkspaceTools(work)


def _one_line_refusal(text: str) -> bool:
    return text.startswith("refused: ") and "\n" not in text


def test_read_numbers_lines_and_pages_with_offset_and_limit(tools: WorkspaceTools) -> None:
    whole = tools.read("notes.txt")
    assert whole.ok
    assert whole.text.splitlines()[0] == "    1\tline 1"
    assert whole.text.splitlines()[-1] == "   10\tline 10"
    assert whole.summary == "read notes.txt:1-10"

    page = tools.read("notes.txt", offset=3, limit=2)
    assert page.text == (
        "    3\tline 3\n    4\tline 4\n[... file continues: use offset=5 to read on; 10 lines in all]"
    )
    assert page.summary == "read notes.txt:3-4"
    assert tools.read("notes.txt", offset=9).text == "    9\tline 9\n   10\tline 10"


def test_read_caps_lines_bytes_and_long_lines(work: Path) -> None:
    (work / "big.txt").write_text("".join(f"{i:04d} " + "x" * 95 + "\n" for i in range(500)))
    by_lines = WorkspaceTools(work, read_max_lines=100).read("big.txt", limit=400)
    assert by_lines.text.count("\n") == 100
    assert by_lines.text.endswith("use offset=101 to read on; 500 lines in all]")

    by_bytes = WorkspaceTools(work, read_max_bytes=1_000).read("big.txt")
    assert len(by_bytes.text.encode()) < 1_100
    assert by_bytes.text.endswith("use offset=10 to read on; 500 lines in all]")

    (work / "min.js").write_text("a" * 10_000 + "\nend")
    long_line = WorkspaceTools(work, read_max_line_bytes=100).read("min.js")
    first, second = long_line.text.splitlines()
    assert first.startswith("    1\t" + "a" * 100 + " [... line cut: 100 of 10001 bytes shown")
    assert second == "    2\tend"


def test_read_refuses_past_end_binary_directories_and_missing(
    tools: WorkspaceTools, work: Path
) -> None:
    past = tools.read("notes.txt", offset=50)
    assert not past.ok and _one_line_refusal(past.text)
    assert "past the end of the file (10 lines); use an offset from 1 to 10" in past.text

    (work / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    binary = tools.read("logo.png")
    assert not binary.ok and _one_line_refusal(binary.text)
    assert "binary file" in binary.text

    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("")
    listing = tools.read("src")
    assert not listing.ok
    assert listing.text.splitlines()[1:] == ["app.py"]

    assert tools.read("src/app.py").text == "[empty file]"
    missing = tools.read("nope.txt")
    assert not missing.ok and _one_line_refusal(missing.text)


def test_read_stays_inside_the_working_directory(tools: WorkspaceTools, work: Path) -> None:
    (work / "link.txt").symlink_to(work.parent / "secret.txt")
    (work / "outdir").symlink_to(work.parent)
    for path in ["../secret.txt", str(work.parent / "secret.txt"), "link.txt", "outdir/secret.txt"]:
        result = tools.read(path)
        assert not result.ok, path
        assert _one_line_refusal(result.text)
        assert "outside the working directory" in result.text
        assert "outside\n" not in result.text

    (work / "inner.txt").symlink_to(work / "notes.txt")
    assert tools.read("inner.txt").ok


def test_ledgers_in_horde_dir_are_readable(tools: WorkspaceTools, work: Path) -> None:
    (work / ".horde" / "BOARD.md").write_text("# Board\n")
    result = tools.read(".horde/BOARD.md")
    assert result.ok
    assert result.text == "    1\t# Board"


def test_edit_replaces_the_one_exact_match_and_keeps_the_mode(
    tools: WorkspaceTools, work: Path
) -> None:
    script = work / "run.sh"
    script.write_text("#!/bin/sh\necho one\necho two\n")
    script.chmod(0o755)
    result = tools.edit("run.sh", "echo two\n", "echo 2\necho 3\n")
    assert result.ok
    assert result.text == "edited run.sh at line 3: 1 lines replaced by 2"
    assert script.read_text() == "#!/bin/sh\necho one\necho 2\necho 3\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert [p.name for p in work.iterdir() if p.name.endswith(".tmp")] == []


def test_edit_refuses_missing_multiple_and_absent_matches(
    tools: WorkspaceTools, work: Path
) -> None:
    (work / "dup.txt").write_text("x = 1\nx = 1\nx = 1\n")
    multiple = tools.edit("dup.txt", "x = 1", "x = 2")
    assert not multiple.ok and _one_line_refusal(multiple.text)
    assert "oldText matches 3 times" in multiple.text
    assert "include more context" in multiple.text

    absent = tools.edit("dup.txt", "y = 1", "y = 2")
    assert not absent.ok and "oldText not found" in absent.text

    missing = tools.edit("new.txt", "a", "b")
    assert not missing.ok and "create it with write" in missing.text
    assert not (work / "new.txt").exists()

    same = tools.edit("notes.txt", "line 1\n", "line 1\n")
    assert not same.ok and "identical" in same.text
    assert (work / "dup.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_matches_crlf_files_with_plain_newlines(tools: WorkspaceTools, work: Path) -> None:
    (work / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    assert tools.edit("win.txt", "a\nb\n", "A\nB\n").ok
    assert (work / "win.txt").read_bytes() == b"A\r\nB\r\nc\r\n"


def test_write_creates_parents_and_replaces_atomically(tools: WorkspaceTools, work: Path) -> None:
    created = tools.write("docs/deep/plan.md", "# Plan\nstep\n")
    assert created.ok
    assert created.text == "wrote docs/deep/plan.md: created, 2 lines, 12 bytes"
    assert created.summary == "write docs/deep/plan.md (2 lines)"
    replaced = tools.write("docs/deep/plan.md", "new")
    assert "replaced" in replaced.text
    assert (work / "docs/deep/plan.md").read_text() == "new"
    assert os.listdir(work / "docs/deep") == ["plan.md"]


def test_write_and_edit_refuse_outside_ledgers_and_git(tools: WorkspaceTools, work: Path) -> None:
    (work / ".git").mkdir()
    (work / "ledgers").symlink_to(work / ".horde")
    cases = {
        "../escape.txt": "outside the working directory",
        ".horde/BOARD.md": "the ledgers are written only through the horde tool",
        "ledgers/BOARD.md": "the ledgers are written only through the horde tool",
        ".git/config": "inside .git/",
    }
    for path, rule in cases.items():
        result = tools.write(path, "x")
        assert not result.ok and _one_line_refusal(result.text), path
        assert rule in result.text
        assert tools.edit(path, "a", "b").text.startswith("refused: ")
    assert not (work.parent / "escape.txt").exists()
    assert not (work / ".horde" / "BOARD.md").exists()
    assert tools.write(".gitignore", "*.pyc\n").ok


def test_write_refuses_content_over_the_cap(work: Path) -> None:
    result = WorkspaceTools(work, write_max_bytes=10).write("big.txt", "x" * 11)
    assert not result.ok and "over the 10-byte cap" in result.text
    assert not (work / "big.txt").exists()


def test_bash_runs_in_the_working_directory(tools: WorkspaceTools, work: Path) -> None:
    result = tools.bash("pwd && ls notes.txt")
    assert result.ok
    assert result.text.startswith(f"{work}\nnotes.txt\n[exit 0 in ")
    assert result.summary == "bash: pwd && ls notes.txt"
    failed = tools.bash("exit 2", timeout=5_000)
    assert not failed.ok
    assert failed.text.startswith("[timeout set to 600s: allowed range 1-600]\n[exit 2 in ")
    refused = tools.bash("rm -rf /")
    assert not refused.ok and _one_line_refusal(refused.text)


def test_dispatch_checks_tools_and_arguments(tools: WorkspaceTools) -> None:
    assert tools.dispatch("read", {"path": "notes.txt", "limit": 1}).text.startswith("    1\t")
    assert tools.dispatch("read", '{"path": "notes.txt", "offset": "10", "limit": null}').ok
    assert tools.dispatch("bash", {"command": "true", "timeout": 2.5}).ok

    errors = {
        ("find", '{"path": "x"}'): "unknown tool 'find'; use one of read, grep, bash, edit, write",
        ("read", "{}"): "read is missing argument 'path' (string)",
        ("read", '{"file_path": "x"}'): "read has no argument 'file_path'",
        ("read", '{"path": 3}'): "read argument 'path' must be a string, got int 3",
        ("read", '{"path": "x", "offset": "ten"}'): "'offset' must be an integer",
        ("read", '{"path": "x", "offset": true}'): "'offset' must be an integer",
        ("read", '{"path": "x", "limit": 2.5}'): "'limit' must be an integer",
        ("bash", '{"command": "ls", "timeout": "soon"}'): "'timeout' must be a number",
        ("edit", '{"path": "notes.txt", "oldText": "a"}'): "missing argument 'newText'",
        ("write", '{"path": "a", "content": '): "arguments are not valid JSON",
        ("write", "[1, 2]"): "arguments must be a JSON object",
    }
    for (name, args), expected in errors.items():
        result = tools.dispatch(name, args)
        assert not result.ok, (name, args)
        assert _one_line_refusal(result.text)
        assert expected in result.text, result.text


def test_tool_definitions_are_openai_functions() -> None:
    names = [d["function"]["name"] for d in TOOL_DEFINITIONS]
    assert names == ["read", "bash", "edit", "write", "links", "sitemap"]
    for definition in TOOL_DEFINITIONS:
        assert definition["type"] == "function"
        params = definition["function"]["parameters"]
        assert params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        assert definition["function"]["description"]


def test_grep_searches_text_files_without_a_shell(tools: WorkspaceTools, work: Path) -> None:
    """The read-only sessions' search: `path:line: text` per match, in name order; .git/,
    binary files and the run's secret files are never searched; a link leaving the working
    directory is not followed."""
    (work / "src").mkdir()
    (work / "src" / "a.py").write_text("x = 1\nTOKEN = 'abc'\n")
    (work / "src" / "b.bin").write_bytes(b"TOKEN\0\0")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("TOKEN in git\n")
    (work / ".horde" / "runs" / "r1").mkdir(parents=True)
    (work / ".horde" / "runs" / "r1" / "gateway.token").write_text("TOKEN secret\n")
    (work / ".horde" / "FINDINGS.md").write_text("F1 TOKEN is hard-coded\n")
    (work / "out").symlink_to(work.parent / "secret.txt")

    found = tools.dispatch("grep", {"pattern": "TOKEN"})
    assert found.ok
    assert found.text == ".horde/FINDINGS.md:1: F1 TOKEN is hard-coded\nsrc/a.py:2: TOKEN = 'abc'"
    assert tools.grep("(?i)token", "src").text == "src/a.py:2: TOKEN = 'abc'"
    assert tools.grep("outside").text == "no line matches 'outside' under ."
    assert tools.grep("x = ", "src/a.py").text == "src/a.py:1: x = 1"


def test_grep_refuses_bad_patterns_and_paths_in_one_line(tools: WorkspaceTools) -> None:
    for refused in (
        tools.grep("(unclosed"),
        tools.grep("x", "../"),
        tools.grep("x", "nowhere"),
        tools.dispatch("grep", {"path": "."}),
    ):
        assert not refused.ok and _one_line_refusal(refused.text), refused.text


def test_grep_caps_its_matches(work: Path) -> None:
    (work / "many.txt").write_text("hit\n" * 300)
    text = WorkspaceTools(work).grep("hit").text.splitlines()
    assert len(text) == 201 and text[199] == "many.txt:200: hit"
    assert text[-1].startswith("[... more than 200 matches")
