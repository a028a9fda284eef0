"""Role presets: bundled and project-local personas, dealt to a run's members, their
per-role models routed to the gateway, listed by `horde-tui presets`, and a bad name
refused in one line.

The end-to-end test drives `horde-tui run --headless` on the stub model: the members'
system prompts must carry their personas, and the verifier's role model must reach the
stub as its own model string (through the gateway, not a standalone one).
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest
from support.cli import cli, cli_argv, stub_env

from horde_tui.launch.launch import RunOptions, check_launch
from horde_tui.presets import (
    PresetError,
    all_presets,
    deal_roles,
    find_preset,
    preset_names,
)
from horde_tui.stubmodel import MODEL_ID, StubThread
from horde_tui.supervisor.setup import MemberSpec, RunRequest, assign_roles, write_run_files

BUNDLED = ["code-audit", "filings", "osint", "paper-analysis", "security-review"]
LOCAL = """\
description = "two hunters and a verifier on another provider"

[[roles]]
name = "secrets hunter"
persona = "You hunt hard-coded secrets: passwords, tokens and keys in code and config."

[[roles]]
name = "crypto reviewer"
persona = "You review cryptography: algorithms, modes, randomness and key handling."

[[roles]]
name = "cross-family verifier"
verifier = true
model = "openai/verifier-family-x"
persona = "You are a verifier from another model family: reproduce each finding."
"""


def local_preset(workdir: Path, name: str = "mine", text: str = LOCAL) -> Path:
    folder = workdir / ".horde" / "presets"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def test_the_bundled_presets_ship_as_package_data_and_load(tmp_path: Path) -> None:
    shipped = sorted(
        e.name.removesuffix(".toml")
        for e in resources.files("horde_tui.presets").iterdir()
        if e.name.endswith(".toml")
    )
    assert shipped == BUNDLED
    presets, problems = all_presets(tmp_path / ".horde")
    assert problems == []
    assert [p.name for p in presets] == BUNDLED
    for preset in presets:
        assert preset.source == "bundled" and preset.description
        assert sum(r.verifier for r in preset.roles) == 1, preset.name
    security = next(p for p in presets if p.name == "security-review")
    assert [(r.name, r.verifier) for r in security.roles] == [
        ("attack-surface mapper", False),
        ("injection hunter", False),
        ("authz reviewer", False),
        ("skeptic verifier", True),
    ]


def test_roles_are_dealt_verifiers_to_verifiers_and_the_rest_in_turn(tmp_path: Path) -> None:
    preset = find_preset("security-review", tmp_path)
    assert preset is not None
    four = deal_roles(preset, assign_roles(RunRequest("x", 4)))
    assert {m: r.name for m, r in four.items()} == {
        "member-1": "attack-surface mapper",
        "member-2": "injection hunter",
        "member-3": "authz reviewer",
        "member-4": "skeptic verifier",
    }
    six = deal_roles(preset, assign_roles(RunRequest("x", 6)))
    assert [six[f"member-{n}"].name for n in (4, 5, 6)] == [
        "attack-surface mapper",
        "injection hunter",
        "skeptic verifier",
    ]
    two = deal_roles(preset, assign_roles(RunRequest("x", 2)))  # no verifier under 3
    assert {m: r.name for m, r in two.items()} == {
        "member-1": "attack-surface mapper",
        "member-2": "injection hunter",
    }
    plan = deal_roles(
        preset, [MemberSpec("member-1", "member", ("api",)), MemberSpec("member-2", "verifier")]
    )
    assert plan["member-2"].name == "skeptic verifier"


def test_a_project_preset_replaces_a_bundled_one_of_its_name(tmp_path: Path) -> None:
    path = local_preset(tmp_path, "osint")
    preset = find_preset("osint", tmp_path / ".horde")
    assert preset is not None and preset.source == str(path)
    assert preset.roles[0].name == "secrets hunter"
    assert "osint" in preset_names(tmp_path / ".horde")


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("nope", None, "refused: no preset 'nope'"),
        ("Bad Name", None, "is not a preset name (names rule:"),
        ("broken", "[[roles]\n", "cannot parse"),
        ("typo", '[[roles]]\nname = "a"\npersonna = "b"\n', "roles.0.persona: Field required"),
        ("empty", 'description = "none"\nroles = []\n', "roles: List should have at least 1"),
    ],
)
def test_a_bad_preset_is_one_line_naming_what_and_why(
    tmp_path: Path, name: str, text: str | None, says: str
) -> None:
    if text is not None:
        local_preset(tmp_path, name, text)
    with pytest.raises(PresetError) as caught:
        find_preset(name, tmp_path / ".horde")
    message = str(caught.value)
    assert says in message and "\n" not in message, message
    if name == "nope":
        assert "known: code-audit, filings, osint, paper-analysis, security-review" in message


def test_none_turns_a_configured_preset_off(tmp_path: Path) -> None:
    assert find_preset("none", tmp_path) is None


def launch(workdir: Path, **options: object) -> tuple[object, object]:
    env = {"HORDE_MODEL": "openai/members-model"}
    check = check_launch(RunOptions(**options), workdir / ".horde", environ=env)  # type: ignore[arg-type]
    return check, check.settings


def test_a_role_model_becomes_that_members_model_and_an_explicit_one_wins(tmp_path: Path) -> None:
    local_preset(tmp_path)
    check, settings = launch(tmp_path, count="3", prompt="Review", preset="mine")
    assert check.ok, check.refusals  # type: ignore[attr-defined]
    assert settings.gateway.member_models == {"member-3": "openai/verifier-family-x"}  # type: ignore[attr-defined]
    assert check.request.preset.name == "mine"  # type: ignore[attr-defined]
    check, settings = launch(
        tmp_path, count="3", prompt="Review", preset="mine", member_models=["member-3=openai/mine"]
    )
    assert settings.gateway.member_models == {"member-3": "openai/mine"}  # type: ignore[attr-defined]
    # The config file's preset counts like the flag's.
    (tmp_path / ".horde" / "config.toml").write_text('preset = "mine"\n')
    check, settings = launch(tmp_path, count="4", prompt="Review")
    assert settings.gateway.member_models == {"member-4": "openai/verifier-family-x"}  # type: ignore[attr-defined]
    check, settings = launch(tmp_path, count="4", prompt="Review", preset="none")
    assert settings.gateway.member_models == {} and check.request.preset is None  # type: ignore[attr-defined]


def test_plan_deals_the_verifier_role_to_the_layerless_member(tmp_path: Path) -> None:
    """`plan 3 "api; db" --preset mine`: the two layer owners hunt, the third verifies
    on the role's model; `member_models` in config.toml still wins for its member."""
    local_preset(tmp_path)
    env = {"HORDE_MODEL": "openai/members-model"}
    check = check_launch(RunOptions("3", preset="mine"), tmp_path / ".horde", "api; db", env)
    assert check.ok and check.settings is not None, check.refusals
    assert check.settings.gateway.member_models == {"member-3": "openai/verifier-family-x"}
    (tmp_path / ".horde" / "config.toml").write_text(
        '[horde]\nmember_models = { "member-3" = "openai/from-config" }\n'
    )
    check = check_launch(RunOptions("3", preset="mine"), tmp_path / ".horde", "api; db", env)
    assert check.settings is not None
    assert check.settings.gateway.member_models == {"member-3": "openai/from-config"}


def test_the_launch_check_refuses_an_unknown_preset_under_its_field(tmp_path: Path) -> None:
    check, _ = launch(tmp_path, count="3", prompt="Review", preset="nope")
    refusal = check.refused("preset")  # type: ignore[attr-defined]
    assert refusal is not None and refusal.message.startswith("refused: no preset 'nope'")


def test_run_refuses_an_unknown_preset_in_one_line(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "3", "Review", "--preset", "nope", HORDE_MODEL="openai/x")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused: no preset 'nope'" in lines[0], done.stderr
    assert not (tmp_path / ".horde" / "runs").exists()


def test_presets_lists_bundled_and_project_presets_and_names_a_broken_file(tmp_path: Path) -> None:
    local_preset(tmp_path)
    done = cli(tmp_path, "presets")
    assert done.returncode == 0, done.stderr
    heads = [line.split()[0] for line in done.stdout.splitlines() if not line.startswith(" ")]
    assert heads == sorted([*BUNDLED, "mine"])
    assert "  - skeptic verifier [verifier]" in done.stdout
    assert "  - cross-family verifier [verifier] model openai/verifier-family-x" in done.stdout
    assert ".horde/presets/mine.toml" in done.stdout
    local_preset(tmp_path, "broken", "[[roles]\n")
    done = cli(tmp_path, "presets")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "broken.toml" in done.stderr
    assert "security-review" in done.stdout  # the others are still listed


def test_the_run_files_carry_each_members_persona(tmp_path: Path) -> None:
    from horde_tui.common.settings import Settings

    preset = find_preset("security-review", tmp_path)
    request = RunRequest("Review app.py", 4, preset=preset)
    specs = assign_roles(request)
    run_dir = write_run_files(tmp_path / ".horde", "r1", request, Settings(model="m"), specs)
    persona = (run_dir / "personas" / "member-2.md").read_text()
    assert persona.startswith("# Your persona: injection hunter (preset security-review)")
    assert "You hunt injection" in persona
    task = (run_dir / "TASK.md").read_text()
    assert "- preset: security-review" in task
    assert "member-4 (verifier: skeptic verifier)" in task
    manifest = json.loads((run_dir / "MANIFEST.json").read_text())
    assert manifest["request"]["preset"] == "security-review"
    assert manifest["members"][0]["persona"] == "attack-surface mapper"


@pytest.mark.slow
@pytest.mark.e2e
def test_a_preset_run_gives_personas_and_the_verifiers_own_model(tmp_path: Path) -> None:
    """`run --preset` for real: each member's system prompt ends with its persona; the
    verifier's role model reaches the stub as its own model, the others the run's."""
    local_preset(tmp_path)
    with StubThread() as stub:  # every member's reply: "Done." (no tool call ends a session)
        env = stub_env(
            stub,
            HORDE_DELIVERABLE="off",
            HORDE_POSTMORTEM="off",
            HORDE_REPAIR_ROUNDS="0",
            HORDE_CLEANUP="off",
        )
        done = subprocess.run(
            cli_argv(
                "run",
                "--headless",
                "3",
                "Review",
                "--preset",
                "mine",
            ),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode in (0, 1), done.stderr
        requests = {m: stub.stub.requests_for(m) for m in ("member-1", "member-2", "member-3")}
    for member, persona in [
        ("member-1", "You hunt hard-coded secrets"),
        ("member-2", "You review cryptography"),
        ("member-3", "You are a verifier from another model family"),
    ]:
        assert requests[member], f"{member} sent nothing: {done.stdout[-2000:]}"
        system = requests[member][0].body["messages"][0]
        assert system["role"] == "system" and persona in system["content"], member
        assert "The persona says what you look for" in system["content"]
    assert {r.body["model"] for r in requests["member-3"]} == {"verifier-family-x"}
    assert {r.body["model"] for r in requests["member-1"] + requests["member-2"]} == {MODEL_ID}
