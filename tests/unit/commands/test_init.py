"""`horde-tui init`: a commented config.toml that cannot drift from the settings model,
an AGENTS.md brief template, the `.horde/.gitignore`; never overwrites without --force.
And the LICENSE the package declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from support.cli import cli
from support.paths import REPO

from horde_tui.commands.init import config_text
from horde_tui.common.settings import (
    SETTING_FIELDS,
    Settings,
    env_name,
    load_settings,
    settings_record,
)


def test_init_writes_the_config_the_brief_and_the_gitignore(tmp_path: Path) -> None:
    done = cli(tmp_path, "init")
    assert done.returncode == 0, done.stderr
    config = tmp_path / ".horde" / "config.toml"
    assert config.is_file() and (tmp_path / "AGENTS.md").is_file()
    assert "runs/" in (tmp_path / ".horde" / ".gitignore").read_text()
    assert "doctor --probe" in done.stdout
    # Every setting is there as a commented line with its variable.
    text = config.read_text()
    for name in SETTING_FIELDS:
        assert re.search(rf"^# {name} =", text, re.M), name
        assert env_name(name) in text


def test_the_written_config_parses_back_to_the_defaults(tmp_path: Path) -> None:
    assert cli(tmp_path, "init").returncode == 0
    path = tmp_path / ".horde" / "config.toml"
    assert load_settings(path, environ={}) == Settings()


def test_each_commented_default_uncommented_is_the_default() -> None:
    """Uncommenting a line gives the model's default: the file cannot lie about them."""
    lines = [line for line in config_text().splitlines() if re.match(r"^# \w+ = \S", line)]
    defaults = settings_record(Settings())
    checked = 0
    for line in lines:
        key = line[2:].split(" =", 1)[0]
        value = tomllib.loads(line[2:])[key]
        assert value == defaults[key], line
        checked += 1
    unset = [n for n, v in defaults.items() if v is None]
    assert checked == len(defaults) - len(unset)


def test_init_is_idempotent_and_keeps_what_exists(tmp_path: Path) -> None:
    assert cli(tmp_path, "init").returncode == 0
    brief = tmp_path / "AGENTS.md"
    brief.write_text("# my brief\n")
    config = tmp_path / ".horde" / "config.toml"
    config.write_text('[horde]\nmodel = "openai/gpt-4o"\n')
    again = cli(tmp_path, "init")
    assert again.returncode == 0, again.stderr
    assert brief.read_text() == "# my brief\n"
    assert config.read_text() == '[horde]\nmodel = "openai/gpt-4o"\n'
    assert "--force" in again.stdout and "kept" in again.stdout


def test_force_rewrites_and_keeps_a_backup(tmp_path: Path) -> None:
    brief = tmp_path / "AGENTS.md"
    brief.write_text("# my brief\n")
    done = cli(tmp_path, "init", "--force")
    assert done.returncode == 0, done.stderr
    assert brief.read_text() != "# my brief\n"
    assert (tmp_path / "AGENTS.md.bak").read_text() == "# my brief\n"


def test_a_file_where_horde_belongs_is_one_line(tmp_path: Path) -> None:
    (tmp_path / ".horde").write_text("not a folder")
    done = cli(tmp_path, "init")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert (tmp_path / ".horde").read_text() == "not a folder"


def test_the_licence_is_the_declared_mit() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == {"text": "MIT"}
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "the horde-tui authors" in text
    assert "WITHOUT WARRANTY OF ANY KIND" in text
