"""The settings reference: one source (the model and its table of process variables),
printed by `horde-tui config`, written into the docs' settings page
(docs/reference/settings.md), and covering every `HORDE_*` variable the code reads.

The docs test fails when the table there and the model differ; the coverage test
reads the source itself (string constants and keyword names), so a new variable read
anywhere without a line in the reference fails it.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli_argv, host_env
from support.paths import REPO

from horde_tui.commands import settings_doc
from horde_tui.commands.settings_doc import (
    SETTINGS_PAGE,
    TABLE_END,
    TABLE_START,
    page_with_table,
    settings_markdown,
)
from horde_tui.common.settings import (
    ENVIRONMENT,
    FLAGS,
    SETTING_FIELDS,
    env_name,
    literal_choices,
)

PACKAGE = REPO / "horde_tui"
WORD = re.compile(r"[A-Z][A-Z0-9_]*")


def variables_in_source(path: Path) -> set[str]:
    """`HORDE_*` names a file reads or sets: whole string constants made only of such
    words ("HORDE_DIR", "HORDE_DIR HORDE_RUN".split()) and keyword names (env.update(
    HORDE_RUN=...)); prose that merely mentions one is not counted."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        words: list[str] = []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts = node.value.split()
            if parts and all(WORD.fullmatch(p) for p in parts):
                words = parts
        elif isinstance(node, ast.keyword) and node.arg:
            words = [node.arg]
        found.update(w for w in words if w.startswith("HORDE_") and w != "HORDE_")
    return found


def test_every_horde_variable_the_code_reads_is_in_the_reference() -> None:
    documented = {env_name(name) for name in SETTING_FIELDS} | {v.name for v in ENVIRONMENT}
    used: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in variables_in_source(path):
            used.setdefault(name, []).append(str(path.relative_to(REPO)))
    missing = {name: files for name, files in used.items() if name not in documented}
    assert not missing, f"undocumented HORDE_* variables (add them to settings.py): {missing}"
    assert len(used) >= 25  # the scan found the variables at all


def test_each_process_variable_is_read_where_the_reference_says() -> None:
    for variable in ENVIRONMENT:
        assert variable.read_in, variable.name
        for module in variable.read_in:
            path = REPO / module
            assert path.is_file(), f"{variable.name}: {module} does not exist"
            assert variable.name in variables_in_source(path), f"{variable.name} not in {module}"
        assert variable.description.endswith("."), variable.name


def test_every_setting_has_a_one_sentence_description() -> None:
    for name, info in SETTING_FIELDS.items():
        text = info.description or ""
        assert text.endswith(".") and text.count(". ") == 0 and len(text) > 15, (name, text)


def test_the_docs_table_is_the_models() -> None:
    assert SETTINGS_PAGE == REPO / "docs" / "reference" / "settings.md"
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert TABLE_START in page and TABLE_END in page, "the settings page has no table"
    assert page_with_table(page) == page, (
        "docs/reference/settings.md's table differs from the settings model; regenerate it "
        "with `python -m horde_tui.commands.settings_doc --write`"
    )


def test_write_rewrites_only_the_pages_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--write` replaces what lies between the markers and keeps the prose around them."""
    page = tmp_path / "settings.md"
    page.write_text(f"# Settings\n\nprose\n\n{TABLE_START}\nstale\n{TABLE_END}\n\nafter\n")
    monkeypatch.setattr(settings_doc, "SETTINGS_PAGE", page)
    assert settings_doc.main(["--write"]) == 0
    text = page.read_text(encoding="utf-8")
    assert "stale" not in text and settings_markdown() in text
    assert text.startswith("# Settings\n\nprose\n\n") and text.endswith(f"{TABLE_END}\n\nafter\n")
    assert "rewritten" in capsys.readouterr().out
    assert settings_doc.main(["--write"]) == 0 and page.read_text(encoding="utf-8") == text
    assert "already current" in capsys.readouterr().out


def test_the_table_changes_when_the_model_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs test can fail: a changed description gives another table."""
    before = settings_markdown()
    info = SETTING_FIELDS["reset_cap"]
    monkeypatch.setattr(info, "description", "Something else entirely.")
    after = settings_markdown()
    assert before != after and "Something else entirely." in after
    assert "| `reset_cap` | `HORDE_RESET_CAP` |" in after


def test_the_table_names_each_setting_its_variable_flag_and_default() -> None:
    table = settings_markdown()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(SETTING_FIELDS) + len(ENVIRONMENT)
    assert "| `model` | `HORDE_MODEL` | `--model` | unset |" in table
    assert "| `reset_cap` | `HORDE_RESET_CAP` | — | `2` |" in table
    assert "| `deliverable` | `HORDE_DELIVERABLE` | — | `on` |" in table
    assert "| `HORDE_LOCK_TIMEOUT_S` |" in table and "horde_tui/store/lock.py" in table


def config(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_argv("config", *args),
        cwd=cwd,
        env=host_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_config_lists_every_setting_with_its_variable_and_flag(tmp_path: Path) -> None:
    done = config(tmp_path)
    assert done.returncode == 0, done.stderr
    for name in SETTING_FIELDS:
        assert f"{name} " in done.stdout and env_name(name) in done.stdout, name
    assert "--member-model" in done.stdout and "--preset" in done.stdout


def test_config_effective_says_where_each_value_came_from(tmp_path: Path) -> None:
    horde = tmp_path / ".horde"
    horde.mkdir()
    (horde / "config.toml").write_text(
        '[horde]\nreset_cap = 5\nthinking = "low"\nmodel = "openai/f"\n'
    )
    done = config(
        tmp_path,
        "--effective",
        "--model",
        "openai/flag",
        "--member-model",
        "member-4=anthropic/claude-x",
        HORDE_THINKING="high",
        HORDE_STALL_MS="0",
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert lines["model"].split()[1:] == ["openai/flag", "(flag", "--model)"]
    assert lines["member_models"].split()[1:] == [
        "member-4=anthropic/claude-x",
        "(flag",
        "--member-model)",
    ]
    assert lines["thinking"].split()[1:] == ["high", "(variable", "HORDE_THINKING)"]
    assert lines["stall_ms"].split()[1:] == ["0", "(variable", "HORDE_STALL_MS)"]
    assert lines["reset_cap"].split()[1:] == ["5", "(file", ".horde/config.toml)"]
    assert lines["canary_ms"].split()[1:] == ["60000", "(default)"]
    assert lines["api_key"].split()[1:] == ["unset", "(default)"]


def test_config_effective_never_prints_the_key(tmp_path: Path) -> None:
    done = config(tmp_path, "--effective", HORDE_API_KEY="sk-secret-123")
    assert done.returncode == 0, done.stderr
    assert "sk-secret-123" not in done.stdout
    key = next(line for line in done.stdout.splitlines() if line.startswith("api_key"))
    assert key.split()[1:] == ["(set,", "not", "shown)", "(variable", "HORDE_API_KEY)"]


def test_config_effective_refuses_a_bad_value_in_one_line(tmp_path: Path) -> None:
    done = config(tmp_path, "--effective", HORDE_RESET_CAP="many")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "HORDE_RESET_CAP: reset_cap" in done.stderr


def test_config_markdown_is_the_docs_table(tmp_path: Path) -> None:
    done = config(tmp_path, "--markdown")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == settings_markdown().strip()


def _option_choices(parser: argparse.ArgumentParser) -> dict[tuple[str, str], Any]:
    """Every subcommand option naming a setting, and its choices: (command, flag) -> choices."""
    found: dict[tuple[str, str], Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for arg in sub._actions:
                    for flag in arg.option_strings:
                        found[(name, flag)] = arg.choices
    return found


def test_a_settings_choices_are_the_models_everywhere() -> None:
    """`--tool-protocol auto` is the model's default, so every command that takes the flag
    (run, plan, demo, config, the gateway) offers exactly the model's values, and so does
    completion, which reads the parser's choices."""
    from horde_tui.commands.cli import build_parser
    from horde_tui.gateway.__main__ import parse_args

    choices = _option_choices(build_parser())
    for name, flag in FLAGS.items():
        allowed = literal_choices(name)
        if allowed is None:
            continue
        taking = {cmd: c for (cmd, f), c in choices.items() if f == flag}
        assert {"run", "plan", "config"} <= set(taking), (flag, taking)
        for command, offered in taking.items():
            assert tuple(offered or ()) == allowed, (command, flag, offered)
    assert literal_choices("tool_protocol") == ("auto", "native", "json")
    assert (
        build_parser().parse_args(["run", "--tool-protocol", "auto", "2", "task"]).tool_protocol
        == "auto"
    )
    assert parse_args(["--tool-protocol", "auto"]).tool_protocol == "auto"
