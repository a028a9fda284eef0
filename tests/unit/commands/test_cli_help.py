"""`horde-tui help [TOPIC]`, as the reference's `help`: every command with its flags and
every target form, read from the real parser so it cannot drift; `help CMD` is `CMD
--help` byte for byte; an unknown topic is one line naming the nearest commands."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from support.cli import cli, heavy_imports

from horde_tui.commands.cli import build_parser


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand name (aliases too) the real parser has, with its parser."""
    parser = build_parser()
    return next(
        dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)
    )


def test_help_lists_every_command_its_flags_and_the_target_forms(tmp_path: Path) -> None:
    done = cli(tmp_path, "help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    headers = [line for line in out.splitlines() if line and not line[0].isspace()]
    listed = {line.split()[0].rstrip(":") for line in headers}
    for name, sub in commands().items():
        assert name in listed or f"(alias: {name})" in out, name
        if name == "gateway":  # its flags are the gateway's own parser's (checked below)
            continue
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:  # hidden from `CMD --help` too
                continue
            for flag in action.option_strings:
                assert flag in out, f"{name} {flag}"
    assert "--run-dir" in out and "--max-cost-usd" in out  # gateway's own flags
    for form in ("all", "member-N", "hN", "hN:member-M"):
        assert f" {form}" in out, form


@pytest.mark.parametrize(("topic", "command"), [("run", "run"), ("stop", "stop-hard")])
def test_help_topic_is_the_commands_own_help(tmp_path: Path, topic: str, command: str) -> None:
    own = cli(tmp_path, command, "--help", COLUMNS="100")
    helped = cli(tmp_path, "help", topic, COLUMNS="100")
    assert own.returncode == helped.returncode == 0, helped.stderr
    assert helped.stdout == own.stdout and helped.stderr == ""


def test_help_gateway_is_the_gateways_own_help(tmp_path: Path) -> None:
    own = cli(tmp_path, "gateway", "--help", COLUMNS="100")
    helped = cli(tmp_path, "help", "gateway", COLUMNS="100")
    assert own.returncode == helped.returncode == 0, helped.stderr
    assert helped.stdout == own.stdout and "--run-dir" in own.stdout


def test_an_unknown_topic_is_one_line_naming_the_nearest_commands(tmp_path: Path) -> None:
    done = cli(tmp_path, "help", "rnu")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "'rnu'" in lines[0] and "run" in lines[0] and "horde-tui help" in lines[0]


def test_help_imports_neither_textual_nor_litellm(tmp_path: Path) -> None:
    """`help gateway` walks every parser, the gateway's too, and stays a fast command."""
    assert heavy_imports(tmp_path, "help", "gateway", heavy=("textual", "litellm")) == (0, [])
