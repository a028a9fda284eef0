"""Shell completion for bash, zsh and fish, through argcomplete.

`horde-tui completion SHELL` prints the script to source. When a shell completes a word
it runs `horde-tui` with `_ARGCOMPLETE` set; `cli.main` then hands the whole parser to
`autocomplete` here, and only then is argcomplete imported: `horde-tui tool`, a member's
hot path, never pays for it. Subcommands, options and their choices come from the parser
(`gateway`'s from the gateway's own); run ids, swarm ids, member targets, preset names
and `tool`'s actions from small completers attached to the arguments by their names.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from horde_tui.store.paths import default_horde_dir
from horde_tui.store.runs import find_run, run_ids, swarm_ids

SHELLS = ("bash", "zsh", "fish")
PROGRAM = "horde-tui"
MAX_MEMBERS = 12


def complete_runs(prefix: str, **_: Any) -> list[str]:
    """Run ids, newest first."""
    return [r for r in reversed(run_ids(default_horde_dir())) if r.startswith(prefix)]


def complete_last_and_runs(prefix: str, **_: Any) -> list[str]:
    """What `ask`, `share` and `replay` take: `last` or a run id, newest first."""
    from horde_tui.store.runs import LAST

    return [r for r in [LAST, *complete_runs(prefix)] if r.startswith(prefix)]


def complete_runs_and_swarms(prefix: str, **_: Any) -> list[str]:
    """What `resume` carries on: a run or a swarm, newest first."""
    found = [*reversed(swarm_ids(default_horde_dir())), *reversed(run_ids(default_horde_dir()))]
    return [r for r in found if r.startswith(prefix)]


def live_members(folder: Path | None) -> list[str]:
    """The members MANIFEST.json names for the run, else member-1..member-12."""
    try:
        manifest = json.loads((folder / "MANIFEST.json").read_text()) if folder else {}
        names = [str(m["name"]) for m in manifest.get("members", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        names = []
    return names or [f"member-{n}" for n in range(1, MAX_MEMBERS + 1)]


def complete_export(prefix: str, **_: Any) -> list[str]:
    """What `export` takes: `all`, a swarm or a run, newest first."""
    return [t for t in ["all", *complete_runs_and_swarms(prefix)] if t.startswith(prefix)]


def complete_actions(prefix: str, **_: Any) -> list[str]:
    """`tool`'s actions (never the file names argcomplete offers a bare positional)."""
    from horde_tui.protocol.schema import action_names

    return [name for name in action_names() if name.startswith(prefix)]


def complete_targets(
    prefix: str, parsed_args: argparse.Namespace | None = None, **_: Any
) -> list[str]:
    """Member targets of the live run (or the `--run` given): all, member-N."""
    run = getattr(parsed_args, "run", None)
    folder = find_run(default_horde_dir(), run)
    return [t for t in ["all", *live_members(folder)] if t.startswith(prefix)]


def complete_resume(prefix: str, **kwargs: Any) -> list[str]:
    """`resume` takes member targets or a run or swarm id."""
    return complete_targets(prefix, **kwargs) + complete_runs_and_swarms(prefix)


def complete_run_members(
    prefix: str, parsed_args: argparse.Namespace | None = None, **_: Any
) -> list[str]:
    """`resume RUN --member`: the members of the run named, else of the live run."""
    words = getattr(parsed_args, "words", None) or []
    folder = find_run(default_horde_dir(), words[0] if len(words) == 1 else None)
    return [t for t in live_members(folder) if t.startswith(prefix)]


def complete_presets(prefix: str, **_: Any) -> list[str]:
    from horde_tui.presets import preset_names  # pydantic: only when completing a preset

    return [name for name in preset_names(Path.cwd() / ".horde") if name.startswith(prefix)]


Completer = Callable[..., Iterable[str]]
BY_DEST: dict[str, Completer] = {
    "run": complete_runs,
    "words": complete_targets,
    "preset": complete_presets,
}
"""Which completer an argument gets, by its `dest` (the same names in every subcommand)."""
BY_COMMAND: dict[tuple[str, str], Completer] = {
    ("resume", "words"): complete_resume,
    ("resume", "member"): complete_run_members,
    ("export", "target"): complete_export,
    ("share", "run"): complete_last_and_runs,
    ("replay", "run"): complete_last_and_runs,
    ("tool", "action"): complete_actions,
}
"""Where one command's argument of that name takes something else."""


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command name (aliases too) with the parser that reads its words, `gateway`'s
    swapped in place for the gateway's own (the CLI passes its words through unparsed):
    what completion completes and `horde-tui help` prints."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if "gateway" in action.choices:
                from horde_tui.gateway.__main__ import build_parser

                action.choices["gateway"] = build_parser()
            return dict(action.choices)
    return {}


def attach_completers(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand's run, target, preset and action arguments their completers
    (`gateway`'s are its own parser's: `command_parsers`)."""
    for name, sub in command_parsers(parser).items():
        for arg in sub._actions:
            completer = BY_COMMAND.get((name, arg.dest)) or BY_DEST.get(arg.dest)
            if completer is not None:
                arg.completer = completer


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit (argcomplete's protocol)."""
    import argcomplete

    attach_completers(parser)
    argcomplete.autocomplete(parser)


def shell_script(shell: str) -> str:
    import argcomplete

    return str(argcomplete.shellcode([PROGRAM], shell=shell))


def add_completion_command(sub: Any) -> None:
    completion = sub.add_parser(
        "completion",
        help="print the shell completion script: completion bash|zsh|fish",
        description="Print the completion script for SHELL. bash: "
        'eval "$(horde-tui completion bash)" in ~/.bashrc; zsh: the same in ~/.zshrc; '
        "fish: horde-tui completion fish > ~/.config/fish/completions/horde-tui.fish",
    )
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    print(shell_script(args.shell))
    return 0
