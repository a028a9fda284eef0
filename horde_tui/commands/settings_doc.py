"""The settings reference, printed three ways from the one model in `settings.py`:
`horde-tui config` (every setting), `horde-tui config --effective` (each value and where
it came from: flag, variable, file or default) and the docs' settings page
(`horde-tui config --markdown`; `python -m horde_tui.commands.settings_doc --write`
rewrites its table in place, and a test fails when the page and the model differ).

Imported by `cli.py` for `config` only: `horde-tui tool` never loads it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from horde_tui.common.settings import (
    ENVIRONMENT,
    FLAGS,
    SECRET_SETTINGS,
    SETTING_FIELDS,
    SWITCHES,
    SettingsError,
    default_text,
    env_name,
    literal_choices,
    load_settings_with_sources,
    setting_text,
    setting_value,
    settings_help,
)

TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"
SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"
"""The checkout's settings page (the table is a checkout's concern; a wheel has none)."""
PRECEDENCE = (
    "Precedence: flag > `HORDE_*` variable > `.horde/config.toml` key (in a `[horde]` "
    "table) > default; `horde-tui config --effective` shows where each value came from."
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def settings_markdown() -> str:
    """The docs' settings table, then the table of the other `HORDE_*` variables."""
    lines = [
        PRECEDENCE,
        "",
        "| Key | Variable | Flag | Default | What it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, info in SETTING_FIELDS.items():
        flag = f"`{FLAGS[name]}`" if name in FLAGS else "—"
        default = default_text(name)
        shown = default if default == "unset" else f"`{default}`"
        lines.append(
            f"| `{name}` | `{env_name(name)}` | {flag} | {shown} | {_cell(info.description or '')} |"
        )
    lines += [
        "",
        "Variables that are not settings: who a process is and where it works (the "
        "supervisor sets them for its members; set the first ones yourself for "
        "`horde-tui tool`), and debugging aids.",
        "",
        "| Variable | Set by | Default | What it does | Read in |",
        "| --- | --- | --- | --- | --- |",
    ]
    for var in ENVIRONMENT:
        where = ", ".join(f"`{m}`" for m in var.read_in)
        lines.append(
            f"| `{var.name}` | {var.set_by} | `{var.default}` | {_cell(var.description)} | {where} |"
        )
    return "\n".join(lines) + "\n"


def reference_text() -> str:
    """`horde-tui config`: every setting, then every other variable."""
    lines = [settings_help(), "", "other variables: name (set by): default; what it does"]
    for var in ENVIRONMENT:
        lines.append(f"  {var.name} ({var.set_by}): {var.default}; {var.description}")
    return "\n".join(lines)


def effective_text(
    config_path: Path, environ: Mapping[str, str] | None, overrides: Mapping[str, Any]
) -> str:
    """Each setting's effective value and its source, one line each; keys never shown."""
    settings, sources = load_settings_with_sources(config_path, environ, overrides)
    width = max(len(name) for name in SETTING_FIELDS)
    lines = []
    for name in SETTING_FIELDS:
        value = setting_value(settings, name)
        if value in (None, [], {}):
            shown = "unset"
        elif name in SECRET_SETTINGS:
            shown = "(set, not shown)"
        else:
            shown = setting_text(value)
        lines.append(f"{name:<{width}}  {shown}  ({sources[name]})")
    return "\n".join(lines)


def page_with_table(page: str) -> str:
    """`page` with the text between the markers replaced by the generated table."""
    start, end = page.index(TABLE_START), page.index(TABLE_END)
    return page[: start + len(TABLE_START)] + "\n\n" + settings_markdown() + "\n" + page[end:]


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """The run's setting flags (`FLAGS`), taken as text (`load_settings` checks them), those
    of a fixed few values offering the model's (for `--help` and completion)."""
    for name, flag in FLAGS.items():
        if name in SWITCHES:
            parser.add_argument(flag, dest=name, action="store_const", const=True)
        elif name == "member_models":
            parser.add_argument(flag, dest=name, action="append", metavar="MEMBER=MODEL")
        else:
            parser.add_argument(flag, dest=name, metavar="VALUE", choices=literal_choices(name))


def cmd_config(args: argparse.Namespace) -> int:
    if args.markdown:
        print(settings_markdown(), end="")
        return 0
    if not args.effective:
        print(reference_text())
        return 0
    overrides = {name: getattr(args, name, None) for name in FLAGS}
    try:
        print(effective_text(Path(".horde") / "config.toml", None, overrides))
    except SettingsError as exc:
        print(f"horde-tui config: {exc}", file=sys.stderr)
        return 2
    return 0


def add_config_command(sub: Any) -> None:
    config = sub.add_parser(
        "config",
        help="the settings reference; --effective: each value and where it came from",
        description="Every setting: its .horde/config.toml key, HORDE_* variable, flag, "
        "default and what it does. " + PRECEDENCE,
    )
    config.add_argument(
        "--effective",
        action="store_true",
        help="each setting's value here (with these flags) and its source: flag, variable, "
        "file or default",
    )
    config.add_argument(
        "--markdown", action="store_true", help="the reference as the docs' Markdown table"
    )
    add_setting_flags(config)
    config.set_defaults(func=cmd_config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m horde_tui.commands.settings_doc",
        description="Print the settings table, or rewrite it in docs/reference/settings.md.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the settings page's table")
    args = parser.parse_args(argv)
    if not args.write:
        print(settings_markdown(), end="")
        return 0
    page = SETTINGS_PAGE
    text = page.read_text(encoding="utf-8")
    if TABLE_START not in text or TABLE_END not in text:
        print(f"{page}: no {TABLE_START} / {TABLE_END} markers", file=sys.stderr)
        return 1
    updated = page_with_table(text)
    if updated != text:
        page.write_text(updated, encoding="utf-8")
    print(f"{page}: settings table {'rewritten' if updated != text else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
