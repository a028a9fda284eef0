"""`edit` and `write` against a directory swapped for a symlink while they work.

The path check and the open used to be two steps: a process that replaced a directory
of the path with a symlink between them sent about 1 write in 3,000 outside the working
directory. Writes now open every directory of the path relative to the one before it
with O_NOFOLLOW, so a swap makes the call fail instead of escaping. The race with a real
swapping process is measured by tests/benchmarks/bench_write_race.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from horde_tui.member import tools as tools_module
from horde_tui.member.tools import WorkspaceTools


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("old text\n")
    outside.mkdir()
    (outside / "f.txt").write_text("old text\n")
    return work, outside


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, work: Path, outside: Path) -> None:
    """Replace work/sub with a symlink to `outside` right after the path check resolved
    it: the worst moment a racing process can pick, made certain."""
    real = os.path.realpath

    def realpath_then_swap(path: str | os.PathLike[str], **kw: bool) -> str:
        resolved = real(path, **kw)
        if (work / "sub").is_dir() and not (work / "sub").is_symlink():
            os.rename(work / "sub", work / "sub.moved")
            os.symlink(outside, work / "sub")
        return resolved

    monkeypatch.setattr(tools_module.os.path, "realpath", realpath_then_swap)


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_a_swap_between_check_and_open_cannot_escape(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    work, outside = layout
    tools = WorkspaceTools(work)
    _swap_after_check(monkeypatch, work, outside)
    if tool == "write":
        result = tools.write("sub/f.txt", "new text\n")
    else:
        result = tools.edit("sub/f.txt", "old", "new")
    monkeypatch.undo()
    assert (outside / "f.txt").read_text() == "old text\n"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert not result.ok
    assert result.text.startswith("refused: ") and "\n" not in result.text
    assert "symlink" in result.text
