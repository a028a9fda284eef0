"""`horde-tui` command line.

Subcommands import what they need lazily: `horde-tui tool` must start fast (a script or
an agent may call it hundreds of times), so nothing here imports Textual or litellm.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from horde_tui import __version__

TOOL_EPILOG = """\
Fields are given as key=value (repeatable) and/or --json '{...}'. A value of @FILE reads
the file, @- reads standard input (UTF-8, up to the field's cap; see `horde-tui schema`
for each field's maxLength). Lists take commas: cites=F1,T2.

Environment: HORDE_MEMBER (actor, default 'user'; a lower-case name such as member-1),
HORDE_DIR (default ./.horde), HORDE_RUN (default 'manual', created on demand),
HORDE_ROLE (default 'member').

Exit status: 0 done, 1 refused by a rule, 2 bad usage.

Examples:
  horde-tui tool list
  horde-tui tool idea text="Check src/api/users.py for SQL injection"
  horde-tui tool claim id=1
  horde-tui tool finding idea=1 concern=sql-injection concernDef="untrusted input reaches SQL" \\
      text="build_query concatenates user input" evidence=@evidence.txt importance=high
"""


class CliUsageError(ValueError):
    """Bad command-line input; printed as one line, exit status 2."""


def _read_value(key: str, raw: str) -> str:
    """`raw`, or for `@FILE` / `@-` the file's or standard input's text, read only up
    to the field's cap: a stray `text=@big.log` must not pull gigabytes into memory."""
    if raw == "@-":
        return _read_bounded(sys.stdin.buffer, key, "standard input")
    if raw.startswith("@") and len(raw) > 1:
        path = Path(raw[1:])
        # Named as typed, unless it holds control characters: a refusal stays one line.
        shown = str(path) if str(path).isprintable() else repr(str(path))
        try:
            with open(path, "rb") as fh:
                return _read_bounded(fh, key, shown)
        except OSError as exc:
            raise CliUsageError(f"cannot read {shown}: {exc.strerror or exc}") from None
    return raw


def _read_bounded(fh: BinaryIO, key: str, source: str) -> str:
    """At most the cap of field `key` in characters, as UTF-8 text with newlines made
    `\\n` (as text-mode reading does), or one line saying why not."""
    from horde_tui.protocol.bounds import cap_of

    cap = cap_of(key)
    data = fh.read(cap * 4 + 1)  # a character is at most 4 bytes of UTF-8
    too_long = (
        f"refused: `{key}` from {source} is over the cap of {cap} characters (size cap); "
        "shorten it, or cite the file by path in a shorter text"
    )
    if len(data) > cap * 4:
        raise CliUsageError(too_long)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliUsageError(
            f"cannot read {source}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); convert it, or cite the file by path"
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > cap:
        raise CliUsageError(too_long)
    return text


def tool_fields(action: str, pairs: list[str], json_text: str | None) -> dict[str, Any]:
    """Merge `--json` and `key=value` pairs into one raw `horde` call."""
    from horde_tui.common.inputs import loads

    fields: dict[str, Any] = {}
    if json_text:
        try:
            loaded = loads(json_text)
        except ValueError as exc:
            raise CliUsageError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise CliUsageError('--json must be a JSON object, e.g. \'{"text": "..."}\'')
        fields.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliUsageError(f"expected key=value, got {pair!r}")
        fields[key] = _read_value(key, value)
    fields["action"] = action
    return fields


def cmd_tool(args: argparse.Namespace) -> int:
    """One `horde` call, performed in this process under the horde's lock."""
    from horde_tui.store.paths import (
        ACTOR_NAME_RULE,
        MANUAL_RUN,
        default_horde_dir,
        shown,
        valid_actor_name,
        valid_run_id,
    )

    try:
        raw = tool_fields(args.action, args.fields, args.json)
    except CliUsageError as exc:
        print(f"horde-tui tool: {exc}", file=sys.stderr)
        return 2
    run = os.environ.get("HORDE_RUN") or MANUAL_RUN
    if not valid_run_id(run):
        print(f"horde-tui tool: HORDE_RUN={shown(run)} is not a valid run id", file=sys.stderr)
        return 2
    actor = os.environ.get("HORDE_MEMBER") or "user"
    if not valid_actor_name(actor):
        print(
            f"horde-tui tool: HORDE_MEMBER={shown(actor)} is not a member name (names rule: "
            f"{ACTOR_NAME_RULE}); set it to a name such as member-1 or ext-1",
            file=sys.stderr,
        )
        return 2
    role = os.environ.get("HORDE_ROLE") or "member"
    siblings: dict[str, Path] = {}
    if os.environ.get("HORDE_SIBLINGS", "").strip():
        from horde_tui.store.siblings import parse_siblings

        try:
            siblings = parse_siblings(os.environ["HORDE_SIBLINGS"])
        except ValueError as exc:
            print(f"horde-tui tool: HORDE_SIBLINGS: {exc}", file=sys.stderr)
            return 2
    horde_dir = default_horde_dir()
    if horde_dir.exists() and not horde_dir.is_dir():
        named = (
            f"HORDE_DIR={os.environ['HORDE_DIR']!r}" if os.environ.get("HORDE_DIR") else ".horde"
        )
        print(
            f"horde-tui tool: {named} is not a directory; point HORDE_DIR at a .horde "
            "directory (or unset it to use ./.horde)",
            file=sys.stderr,
        )
        return 2
    # pydantic's plugin discovery reads every installed package's entry points on the
    # first validation: a process that lives for one write has no use for plugins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from horde_tui.protocol import run_action
    from horde_tui.store.store import HordeStore

    result = run_action(HordeStore(horde_dir, actor), raw, run=run, role=role, siblings=siblings)
    if args.output == "json":
        print(json.dumps(result.as_json(), ensure_ascii=False))
    elif result.usage_error:
        print(f"horde-tui tool: {result.text}", file=sys.stderr)
    else:
        print(result.text.rstrip("\n"))
    return result.exit_code


def cmd_schema(args: argparse.Namespace) -> int:
    from horde_tui.protocol.schema import tool_schema

    print(json.dumps(tool_schema(), indent=2))
    return 0


def cmd_transcript(args: argparse.Namespace) -> int:
    from horde_tui.store.transcript import print_transcript

    path = Path(args.file)
    if not path.is_file():
        print(f"horde-tui transcript: {path} is not a file", file=sys.stderr)
        return 2
    return print_transcript(path, args.max_chars)


def cmd_models(args: argparse.Namespace) -> int:
    """The swarm's live text models, most available first (a wrong id queues forever)."""
    import asyncio

    from horde_tui.gateway import aihorde

    try:
        live = asyncio.run(aihorde.fetch_models(args.api_base))
    except aihorde.HordeError as exc:
        print(f"horde-tui models: {exc.message}", file=sys.stderr)
        return 1
    ranked = aihorde.by_availability(live)
    if args.json:
        print(json.dumps([m.as_json() for m in ranked], indent=2))
    else:
        print(aihorde.models_table(ranked))
    return 0


def cmd_gateway(args: argparse.Namespace) -> int:
    from horde_tui.gateway.__main__ import main as gateway_main

    return gateway_main(args.gateway_args)


def cmd_app(args: argparse.Namespace) -> int:
    from horde_tui.app.app import open_app

    return open_app(no_mouse=getattr(args, "no_mouse", False))


def cmd_help(args: argparse.Namespace) -> int:
    """`help TOPIC` is `TOPIC --help`; bare `help` is every command with its flags and
    every target form, all read from the parser itself so none of it can drift."""
    import difflib

    from horde_tui.commands.completion import command_parsers

    parser = build_parser()
    commands = command_parsers(parser)
    if args.topic is not None:
        if args.topic in commands:
            commands[args.topic].print_help()
            return 0
        close = difflib.get_close_matches(args.topic, commands, n=3, cutoff=0.6)
        near = close or difflib.get_close_matches(args.topic, commands, n=3, cutoff=0)
        raise CliUsageError(
            f"no command named {args.topic[:80]!r} (nearest: {', '.join(near)}); "
            "`horde-tui help` lists every command"
        )
    from horde_tui.protocol.targets import FORMS

    blocks = [f"{parser.format_usage()}\n{parser.description}"]
    blocks.append("Commands (`horde-tui help COMMAND` prints COMMAND --help):")
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for entry in subparsers._choices_actions:
        name = entry.dest
        sub = commands[name]
        aliases = [n for n, p in subparsers.choices.items() if n != name and p is sub]
        named = f"{name} (alias: {', '.join(aliases)})" if aliases else name
        fmt = sub.formatter_class(prog=sub.prog)
        fmt.add_usage(sub.usage, sub._actions, sub._mutually_exclusive_groups, prefix="")
        fmt.add_arguments([a for a in sub._actions if not isinstance(a, argparse._HelpAction)])
        lines = [f"  {line}".rstrip() for line in fmt.format_help().strip("\n").splitlines()]
        blocks.append("\n".join([f"{named}: {entry.help}", *lines]))
    width = max(len(form) for form, _ in FORMS)
    blocks.append(
        "\n".join(
            [
                "Targets (status, stop-hard, stop-clean, pause, resume, reset), or a comma or",
                "space separated list of them:",
                *(f"  {form:<{width}}  {meaning}" for form, meaning in FORMS),
            ]
        )
    )
    print("\n\n".join(blocks))
    return 0


def build_parser(*, tool_only: bool = False) -> argparse.ArgumentParser:
    """The whole command line, or with `tool_only` just `tool` and `schema`: the other
    commands' options come from `runcli`, whose settings import (pydantic models, asyncio)
    costs a cold `horde-tui tool` call about 200 ms it does not need."""
    parser = argparse.ArgumentParser(
        prog="horde-tui",
        description="Run a small swarm of LLM agents that coordinate through .horde/ ledgers.",
        epilog="Settings come from flags, HORDE_* variables and .horde/config.toml; "
        "`horde-tui run --help` lists every one; `horde-tui help` lists every command and flag.",
    )
    parser.add_argument("--version", action="version", version=f"horde-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    tool = sub.add_parser(
        "tool",
        help="perform one `horde` tool action (for people, scripts and external agents)",
        description="Perform one `horde` tool action on ./.horde (or $HORDE_DIR).",
        epilog=TOOL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tool.add_argument("action", help="list, idea, claim, finding, ... (see `horde-tui schema`)")
    tool.add_argument("fields", nargs="*", metavar="key=value")
    tool.add_argument("--json", metavar="OBJECT", help="fields as one JSON object")
    tool.add_argument("--output", choices=("text", "json"), default="text")
    tool.set_defaults(func=cmd_tool)

    schema = sub.add_parser("schema", help="print the `horde` tool definition as JSON")
    schema.set_defaults(func=cmd_schema)
    if tool_only:
        return parser

    from horde_tui.commands.runcli import add_commands

    add_commands(sub)
    from horde_tui.eval.command import add_eval_command

    add_eval_command(sub)
    from horde_tui.commands.doctor.checks import add_doctor_command

    add_doctor_command(sub)
    from horde_tui.commands.ask import add_ask_command

    add_ask_command(sub)
    from horde_tui.commands.init import add_init_command

    add_init_command(sub)
    from horde_tui.commands.completion import add_completion_command

    add_completion_command(sub)
    from horde_tui.commands.lessons import add_lessons_command

    add_lessons_command(sub)
    from horde_tui.commands.settings_doc import add_config_command

    add_config_command(sub)
    from horde_tui.presets import add_presets_command

    add_presets_command(sub)
    from horde_tui.mcp.command import add_mcp_commands

    add_mcp_commands(sub)
    from horde_tui.web.command import add_web_commands

    add_web_commands(sub)
    from horde_tui.commands.share import add_share_command

    add_share_command(sub)

    transcript = sub.add_parser("transcript", help="print a member transcript readably")
    transcript.add_argument("file", help="runs/<id>/sessions/member-N/<session>.jsonl")
    transcript.add_argument("--max-chars", type=int, default=0, help="cut long messages")
    transcript.set_defaults(func=cmd_transcript)

    models = sub.add_parser(
        "models",
        help="list the live AI Horde text models: workers, queue, estimated wait",
        description="The live text models of the AI Horde swarm, most available first. "
        "Run one with --model aihorde/<name>.",
    )
    models.add_argument("--provider", choices=("aihorde",), default="aihorde")
    models.add_argument("--api-base", help="the AI Horde API root (default: the public one)")
    models.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    models.set_defaults(func=cmd_models)

    gateway = sub.add_parser(
        "gateway",
        help="run a model gateway standalone (OpenAI-compatible, on 127.0.0.1)",
        add_help=False,
    )
    gateway.add_argument("gateway_args", nargs=argparse.REMAINDER)
    gateway.set_defaults(func=cmd_gateway)

    app = sub.add_parser(
        "app", help="open the full-screen app (bare `horde-tui` does too, in a terminal)"
    )
    app.add_argument(
        "--no-mouse", action="store_true", help="leave the mouse to the terminal (select, copy)"
    )
    app.set_defaults(func=cmd_app)

    topic = sub.add_parser(
        "help", help="every command with its flags and every target form: help [COMMAND]"
    )
    topic.add_argument("topic", nargs="?", metavar="COMMAND", help="print COMMAND --help")
    topic.set_defaults(func=cmd_help)
    return parser


SIGPIPE_STATUS = 141
"""128 + SIGPIPE: how a Unix tool ends whose reader went away (`... | head -1`)."""


def _reader_gone() -> int:
    """Standard output's reader has gone (`horde-tui status | head -1`): end quietly, as a
    tool killed by SIGPIPE does. Standard output is pointed at /dev/null first, so the
    interpreter's own last flush has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return SIGPIPE_STATUS


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("_ARGCOMPLETE"):
        # A shell is completing a word: only then is argcomplete imported (never on
        # `tool`'s path); it answers on fd 8 and exits.
        from horde_tui.commands.completion import autocomplete

        autocomplete(build_parser())
    words = sys.argv[1:] if argv is None else argv
    if words[:1] == ["gateway"]:
        # The gateway has its own parser: it gets every word as typed. Through this
        # parser's REMAINDER, parse_known_args split `--port P` from its value.
        return cmd_gateway(argparse.Namespace(gateway_args=words[1:]))
    parser = build_parser(tool_only=words[:1] == ["tool"])
    # key=value fields may follow options (`tool finding --json '{}' text=...`), which a
    # plain nargs="*" positional does not accept, so collect the leftovers here.
    args, extra = parser.parse_known_args(argv)
    if extra:
        if getattr(args, "command", None) != "tool" or any(x.startswith("-") for x in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        else:
            args.fields = [*args.fields, *extra]
    if not getattr(args, "func", None):
        if args.command is None and sys.stdin.isatty() and sys.stdout.isatty():
            return cmd_app(args)
        parser.print_help()
        return 2
    usage_errors: tuple[type[Exception], ...] = (CliUsageError,)
    if args.command != "tool":  # `tool`'s fast path imports none of the run readers
        from horde_tui.store.runs import UnknownRun

        usage_errors += (UnknownRun,)
    command = f"horde-tui {args.command}" if args.command else "horde-tui"
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a reader that left shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except usage_errors as exc:
        # A run id that names no run (`store.runs.resolve_run`), in any command: bad usage.
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # The last net for a file the command could not open (an immutable `.lock`, a
        # directory where a file belongs): one line naming it, never a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(
            f"{command}: cannot use {where}{exc.strerror or exc}; make it a readable, "
            "writable file (or move it aside), then retry",
            file=sys.stderr,
        )
        return 1
