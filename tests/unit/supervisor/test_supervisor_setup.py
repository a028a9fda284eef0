"""Run setup without models: roles, plan layers, run files, targets, counts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from horde_tui.common.settings import load_settings
from horde_tui.protocol.targets import (
    ALL,
    Target,
    TargetError,
    parse_count,
    parse_targets,
    selects,
)
from horde_tui.store.store import HordeStore
from horde_tui.supervisor.run import Supervisor
from horde_tui.supervisor.setup import (
    RunRequest,
    assign_roles,
    parse_layers,
    seed_plan,
    write_run_files,
)


def roles(request: RunRequest) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(s.name, s.role, s.layers) for s in assign_roles(request)]


def test_unpartitioned_run_of_three_makes_the_last_member_the_verifier() -> None:
    assert roles(RunRequest("p", 3)) == [
        ("member-1", "member", ()),
        ("member-2", "member", ()),
        ("member-3", "verifier", ()),
    ]
    assert [r[1] for r in roles(RunRequest("p", 2))] == ["member", "member"]
    assert [r[1] for r in roles(RunRequest("p", 4, verifier=False))] == ["member"] * 4


def test_plan_layers_are_dealt_round_robin_and_layerless_members_verify() -> None:
    layers = parse_layers("parser; type checker;; code generator ")
    assert layers == ["parser", "type checker", "code generator"]
    assert roles(RunRequest("p", 2, layers)) == [
        ("member-1", "member", ("parser", "code generator")),
        ("member-2", "member", ("type checker",)),
    ]
    assert roles(RunRequest("p", 4, layers))[3] == ("member-4", "verifier", ())


def test_run_files_and_plan_seeding(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Be brief.\n")
    horde = tmp_path / ".horde"
    request = RunRequest("Audit the parser", 3, ["lexer", "parser"])
    settings = load_settings(environ={"HORDE_MODEL": "openai/x"})
    specs = assign_roles(request)
    run_dir = write_run_files(horde, "r1", request, settings, specs)
    task = (run_dir / "TASK.md").read_text()
    assert "Audit the parser" in task and "- layers: lexer; parser" in task
    assert "member-3 (verifier)" in task
    assert (run_dir / "PLAN.md").read_text().splitlines()[4:] == [
        "- member-1: lexer",
        "- member-2: parser",
        "- member-3: verifier (no layer)",
    ]
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    assert (
        manifest["hashes"]["TASK.md"]
        == hashlib.sha256((run_dir / "TASK.md").read_bytes()).hexdigest()
    )
    assert manifest["hashes"]["AGENTS.md"] == hashlib.sha256(b"Be brief.\n").hexdigest()
    assert "api_key" not in manifest["config"]
    owned = seed_plan(horde, "r1", specs)
    assert owned == {"member-1": ["#1"], "member-2": ["#2"]}
    store = HordeStore(horde, "reader")
    store.refresh()
    assert [(i.text, i.owner) for i in store.state.ideas.values()] == [
        ("Layer: lexer", "member-1"),
        ("Layer: parser", "member-2"),
    ]
    assert f"TASK.md sha256 `{manifest['hashes']['TASK.md']}`" in (horde / "BOARD.md").read_text()


def test_short_layer_names_are_not_merged_as_duplicates(tmp_path: Path) -> None:
    request = RunRequest("p", 2, ["api", "db"])
    specs = assign_roles(request)
    write_run_files(tmp_path / ".horde", "r1", request, load_settings(environ={}), specs)
    assert seed_plan(tmp_path / ".horde", "r1", specs) == {"member-1": ["#1"], "member-2": ["#2"]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ALL),
        ("all", ALL),
        ("member-3", (Target(None, 3),)),
        ("3", (Target(None, 3),)),
        ("h2", (Target(2, None),)),
        ("h2:member-3", (Target(2, 3),)),
        ("h1:4", (Target(1, 4),)),
        ("member-1, 2 h3", (Target(None, 1), Target(None, 2), Target(3, None))),
    ],
)
def test_targets(text: str, expected: tuple[Target, ...]) -> None:
    assert parse_targets(text) == expected


@pytest.mark.parametrize(
    ("text", "needle"), [("member-13", "1 to 12"), ("h5", "h1 to h4"), ("bob", "unknown target")]
)
def test_bad_targets_name_what_is_accepted(text: str, needle: str) -> None:
    with pytest.raises(TargetError, match=needle):
        parse_targets(text)


def test_a_bare_member_names_it_in_every_horde() -> None:
    targets = parse_targets("member-2")
    assert selects(targets, 1, "member-2") and selects(targets, 3, "member-2")
    assert not selects(targets, 1, "member-1")
    assert selects(parse_targets("h2:2"), 2, "member-2") and not selects(
        parse_targets("h2:2"), 1, "member-2"
    )


def test_counts() -> None:
    assert (parse_count("6").hordes, parse_count("6").members) == (1, 6)
    assert (parse_count("2/4").hordes, parse_count("2/4").members) == (2, 4)
    for bad in ("0", "13", "5/2", "x"):
        with pytest.raises(TargetError):
            parse_count(bad)


def test_the_retry_after_cap_from_the_config_file_reaches_the_gateway(tmp_path: Path) -> None:
    """The gateway reads only its environment, so the run hands the setting over there."""
    config = tmp_path / "config.toml"
    config.write_text("[horde]\nretry_after_max_ms = 5000\n")
    settings = load_settings(config, environ={"HORDE_MODEL": "openai/x"})
    supervisor = Supervisor(tmp_path, RunRequest("p", 1), settings)
    assert supervisor._gateway_env()["HORDE_RETRY_AFTER_MAX_MS"] == "5000"
