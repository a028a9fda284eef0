"""A refused name is echoed cut: a 100 KB `HORDE_MEMBER` (or `HORDE_RUN`) must not come
back whole in the one-line refusal of `horde-tui tool`, the `horde` tool or a member."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import cli

from horde_tui.member.config import MemberConfigError, load_member_config
from horde_tui.protocol import run_action
from horde_tui.store.store import HordeStore

HUGE = "X" * 100_000


@pytest.mark.parametrize("name", ["HORDE_MEMBER", "HORDE_RUN"])
def test_the_cli_cuts_a_huge_name_in_its_refusal(tmp_path: Path, name: str) -> None:
    done = cli(tmp_path, "tool", "list", **{name: HUGE})
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 600, len(done.stderr)
    assert "100000 characters" in lines[0], lines[0][:300]


def test_the_tool_and_a_member_cut_a_huge_actor(tmp_path: Path) -> None:
    result = run_action(HordeStore(tmp_path / ".horde", HUGE), {"action": "list"}, run="r1")
    assert not result.ok and len(result.text) < 600 and "100000 characters" in result.text
    with pytest.raises(MemberConfigError) as refused:
        load_member_config({"HORDE_MEMBER": HUGE})
    assert len(str(refused.value)) < 600 and "100000 characters" in str(refused.value)
