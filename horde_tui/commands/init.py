"""`horde-tui init [--force]`: a project's starting files for its first real run.

Writes `.horde/config.toml` with every setting as a commented line (its default and its
description, read from the `Settings` model so the file cannot drift from it), an
`AGENTS.md` brief template (every member reads it at the start of each session:
`prompts.agents_md`), and `.horde/.gitignore` (runs stay out of git; the config and the
brief are meant to be committed). An existing file is kept unless `--force`, which keeps
the old text beside it as `<name>.bak`: a brief someone wrote is never lost.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from horde_tui.common.prompts import AGENTS_MD_CAP
from horde_tui.common.settings import FLAGS, SETTING_FIELDS, env_name
from horde_tui.store.paths import HordePaths, atomic_write_text, unwritable

CONFIG_HEAD = """\
# horde-tui settings for this project (`horde-tui init` wrote this file).
# Precedence: command-line flag > HORDE_* variable > this file > default.
# Every setting is listed with its default, commented out: uncomment a line to change it.
# `horde-tui doctor` checks this file (an unknown key is refused, never ignored).

[horde]
"""

BRIEF = f"""\
# Brief for the horde

<!-- horde-tui gives every member the first {AGENTS_MD_CAP} characters of this file at the
start of each session. Replace the bracketed lines; delete what does not apply. -->

## What this is

[The material under study: a codebase, a paper, filings, a data set. Where it lives in
this directory, and what it is for.]

## What we want to know

[The question the run should answer, and what a good answer looks like.]

## Where to look

- [path or glob]: [what is there]

## Out of scope

- [folders, files or topics the members should not spend time on]

## How to check a claim

[Commands that build, run or test the material (e.g. `make test`), and what counts as
evidence here.]

## Conventions

[Vocabulary, units, names: anything a newcomer would get wrong.]
"""


def toml_value(value: Any) -> str | None:
    """`value` as TOML, or None when it has no TOML spelling (an unset setting)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + "}"
    return None


def config_text() -> str:
    """Every setting as `# description (VARIABLE, --flag)` and `# key = default`."""
    parts = [CONFIG_HEAD]
    for name, info in SETTING_FIELDS.items():
        default = info.get_default(call_default_factory=True)
        where = env_name(name) + (f", {FLAGS[name]}" if name in FLAGS else "")
        description = info.description or name.replace("_", " ")
        value = toml_value(default)
        parts.append(f"# {description} ({where})")
        parts.append(f"# {name} = {value}" if value is not None else f"# {name} =   (unset)")
        parts.append("")
    return "\n".join(parts)


def _write(path: Path, text: str, force: bool) -> str:
    """Write `path` unless it exists (then: kept, or with `force` rewritten after a
    `.bak` copy); the line to print."""
    if path.exists():
        if not force:
            return f"kept {path} (it exists; --force rewrites it, keeping a .bak)"
        backup = path.with_name(path.name + ".bak")
        atomic_write_text(backup, path.read_text(encoding="utf-8", errors="replace"))
        atomic_write_text(path, text)
        return f"rewrote {path} (the old one is {backup.name})"
    atomic_write_text(path, text)
    return f"wrote {path}"


def init_project(workdir: Path, force: bool = False) -> list[str]:
    """Write the starting files into `workdir`; the lines saying what happened."""
    paths = HordePaths(workdir / ".horde")
    paths.ensure()  # .horde/, runs/ and .horde/.gitignore
    return [
        _write(paths.root / "config.toml", config_text(), force),
        _write(workdir / "AGENTS.md", BRIEF, force),
        f"{paths.root / '.gitignore'}: runs/ and swarms/ stay out of git",
    ]


def add_init_command(sub: Any) -> None:
    init = sub.add_parser(
        "init",
        help="write .horde/config.toml (every setting, commented), an AGENTS.md brief "
        "template and .horde/.gitignore",
    )
    init.add_argument(
        "--force", action="store_true", help="rewrite existing files (the old ones become .bak)"
    )
    init.set_defaults(func=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    workdir = Path.cwd()
    place = unwritable(workdir / ".horde") or unwritable(workdir)  # and AGENTS.md beside it
    if place is not None:
        print(f"horde-tui init: refused: {place[0]}; {place[1]}", file=sys.stderr)
        return 1
    for line in init_project(workdir, args.force):
        print(line)
    print(
        "next: describe the material in AGENTS.md, set model in .horde/config.toml (or "
        'HORDE_MODEL), then `horde-tui doctor --probe` and `horde-tui run N "task"`'
    )
    return 0
