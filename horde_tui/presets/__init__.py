"""Role presets: personas for a run's members (`--preset NAME`, `preset` in
`.horde/config.toml`, `HORDE_PRESET`, the launch form's Preset field).

A preset is a TOML file: a `description` and `[[roles]]`, each a `name`, a `persona`
(the text that enters the member's system prompt), optionally a `model` (that member
runs on it: a verifier from another model family checks the work) and `verifier = true`
for the roles the run's verifiers take. Bundled presets ship in this package
(`security-review`, `code-audit`, `osint`, `paper-analysis`, `filings`); a project's
`.horde/presets/<name>.toml` adds one or replaces a bundled one of the same name.

Members are dealt roles in order: verifier roles to the run's verifier members, the
other roles to the other members, round again when there are more members than roles.
A role's model comes after the run's own per-member models (`--member-model`, the
variable, the config key): an explicit choice always wins.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

NO_PRESET = "none"
"""The preset name that means no preset (to turn off a config file's from a flag)."""
NAME_RULE = "lower-case letters, digits, - and _, starting with a letter or digit, up to 40"
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
PRESETS_DIR = "presets"
"""The project's own presets: `.horde/presets/<name>.toml`."""


class PresetError(ValueError):
    """A preset cannot be used; the message is one line: what, which rule, what to do."""


class Role(BaseModel):
    """One persona of a preset."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=80)
    persona: str = Field(min_length=1, max_length=4000)
    model: str | None = Field(default=None, min_length=1)
    verifier: bool = False


class Preset(BaseModel):
    """A named set of roles, and where it was read from (`bundled` or its file)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = Field(default="", max_length=200)
    roles: list[Role] = Field(min_length=1, max_length=12)
    source: str = "bundled"


class MemberSlot(Protocol):
    """What role dealing needs of a member (`supervisor.setup.MemberSpec` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


def _parse(name: str, text: str, source: str) -> Preset:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"refused: preset {source}: cannot parse: {exc}; fix the file") from None
    try:
        return Preset.model_validate({**data, "name": name, "source": source})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"]) or "preset"
        raise PresetError(
            f"refused: preset {source}: {where}: {err['msg']}; a preset has `description` "
            "and [[roles]] of name, persona, optional model and verifier"
        ) from None


def _bundled() -> dict[str, str]:
    """Bundled preset names and their TOML text (package data: in the wheel too)."""
    found: dict[str, str] = {}
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".toml"):
            found[entry.name.removesuffix(".toml")] = entry.read_text(encoding="utf-8")
    return found


def _project_files(horde_dir: Path) -> dict[str, Path]:
    folder = horde_dir / PRESETS_DIR
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.toml")) if p.is_file()}


def preset_names(horde_dir: Path) -> list[str]:
    """Every preset name usable here, bundled and project-local, sorted."""
    return sorted(set(_bundled()) | {n for n in _project_files(horde_dir) if NAME.fullmatch(n)})


def find_preset(name: str, horde_dir: Path) -> Preset | None:
    """The preset `name` (the project's file before a bundled one); None for `none`."""
    name = name.strip()
    if name == NO_PRESET:
        return None
    if not NAME.fullmatch(name):
        raise PresetError(
            f"refused: {name!r} is not a preset name (names rule: {NAME_RULE}); "
            "`horde-tui presets` lists them"
        )
    path = _project_files(horde_dir).get(name)
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PresetError(f"refused: preset {path}: cannot read: {exc}") from None
        return _parse(name, text, str(path))
    bundled = _bundled()
    if name in bundled:
        return _parse(name, bundled[name], "bundled")
    raise PresetError(
        f"refused: no preset {name!r} (bundled, or {horde_dir / PRESETS_DIR}/{name}.toml); "
        f"known: {', '.join(preset_names(horde_dir))}; `horde-tui presets` lists them"
    )


def all_presets(horde_dir: Path) -> tuple[list[Preset], list[str]]:
    """Every preset usable here, and one line per project file that cannot be used."""
    presets: list[Preset] = []
    problems: list[str] = []
    for name in sorted(set(_bundled()) | set(_project_files(horde_dir))):
        try:
            preset = find_preset(name, horde_dir)
        except PresetError as exc:
            problems.append(str(exc))
            continue
        if preset is not None:
            presets.append(preset)
    return presets, problems


def deal_roles(preset: Preset, members: Iterable[MemberSlot]) -> dict[str, Role]:
    """Each member's role: verifier roles to verifier members, the others to the rest,
    in order and round again; a member with no role of its kind gets none."""
    verifiers = [r for r in preset.roles if r.verifier]
    others = [r for r in preset.roles if not r.verifier]
    dealt: dict[str, Role] = {}
    counts = {"verifier": 0, "member": 0}
    for member in members:
        kind = "verifier" if member.role == "verifier" else "member"
        pool = verifiers if kind == "verifier" else others
        if pool:
            dealt[member.name] = pool[counts[kind] % len(pool)]
            counts[kind] += 1
    return dealt


def role_models(
    preset: Preset, members: Iterable[MemberSlot], explicit: Mapping[str, str]
) -> dict[str, str]:
    """The run's per-member models: `explicit` (flag, variable, config) over the
    preset's role models."""
    models = {n: r.model for n, r in deal_roles(preset, members).items() if r.model}
    return {**models, **explicit}


def persona_text(preset: Preset, role: Role) -> str:
    """What a member's system prompt ends with: its persona under the protocol."""
    return (
        f"# Your persona: {role.name} (preset {preset.name})\n\n{role.persona.strip()}\n\n"
        "The persona says what you look for; the protocol above still says how you work.\n"
    )


def listing(presets: list[Preset]) -> str:
    """`horde-tui presets`: each preset, its description and source, then its roles."""
    lines: list[str] = []
    for preset in presets:
        where = "bundled" if preset.source == "bundled" else preset.source
        lines.append(f"{preset.name}  ({where})  {preset.description}".rstrip())
        for role in preset.roles:
            extra = " [verifier]" if role.verifier else ""
            extra += f" model {role.model}" if role.model else ""
            lines.append(f"  - {role.name}{extra}")
    return "\n".join(lines)


def cmd_presets(args: Any) -> int:
    """`horde-tui presets`: every preset usable in this directory; a project file that
    cannot be used is one line on stderr (and exit 1), the others are still listed."""
    horde_dir = Path.cwd() / ".horde"
    presets, problems = all_presets(horde_dir)
    print(listing(presets))
    for problem in problems:
        print(f"horde-tui presets: {problem}", file=sys.stderr)
    return 1 if problems else 0


def add_presets_command(sub: Any) -> None:
    presets = sub.add_parser(
        "presets",
        help="list the role presets (bundled and .horde/presets/*.toml) for --preset",
        description="Role presets give members personas and optionally per-role models: "
        "bundled ones, and the project's .horde/presets/<name>.toml (which replaces a "
        "bundled one of its name). Use one with run/plan --preset NAME, `preset` in "
        ".horde/config.toml or the launch form; --preset none turns a configured one off.",
    )
    presets.set_defaults(func=cmd_presets)
