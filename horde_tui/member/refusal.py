"""The refusal list for members' shell commands: destructive forms never run.

A model can be prompt-injected by what it reads, so `refusal_reason` parses a command the
way a shell splits it (separators, quotes, `sudo`/`env` prefixes, `bash -c "..."`,
`$(...)`) and refuses destructive forms with one line naming the rule and what to do
instead, while ordinary commands that merely mention a dangerous word (`grep -r
shutdown`, `echo "rm -rf /"`) still run. It is a guard rail against the obvious, not a
sandbox: anything the user can do, a determined command can still do.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Callable

_MAX_DEPTH = 4
"""Nested `bash -c`, `eval` and `$(...)` levels the refusal list looks into."""

_RULES: dict[str, tuple[str, str]] = {
    "rm-root": (
        "deletes the filesystem root, a top-level directory or a home directory",
        "delete only specific paths inside the working directory",
    ),
    "no-preserve-root": (
        "switches off rm's protection of /",
        "delete only specific paths inside the working directory",
    ),
    "mkfs": (
        "formats or wipes a filesystem",
        "work on files inside the working directory; never format disks",
    ),
    "device": (
        "writes to a device",
        "write to a file inside the working directory (or discard output to /dev/null)",
    ),
    "power": (
        "shuts down or reboots the machine",
        "other members share this machine; to finish, stop calling tools",
    ),
    "perm-root": (
        "changes ownership or permissions recursively across / or a home directory",
        "change only specific paths inside the working directory",
    ),
    "force-push": (
        "force-pushes and rewrites remote history",
        "push without force; if the remote moved, fetch and rebase first",
    ),
    "crontab": (
        "deletes every cron job of the user",
        "list jobs with crontab -l and change specific entries",
    ),
    "kill-all": (
        "signals every process of the user",
        "kill only the pids you started: kill PID",
    ),
    "kill-horde": (
        "could kill the horde's own processes",
        "kill only the pids you started: kill PID",
    ),
    "ledger": (
        "changes .horde/, whose ledgers are written only through the horde tool",
        "record it with the horde tool (horde-tui tool from bash); reading .horde/ is fine",
    ),
    "fork-bomb": ("is a fork bomb", "run bounded commands"),
    "too-deep": (
        f"nests shells more than {_MAX_DEPTH} levels deep, past what the refusal list checks",
        "run the inner command directly",
    ),
    "nested-horde": (
        "starts a nested horde, which members may not do",
        "coordinate through the horde tool (or horde-tui tool) in the current run",
    ),
    "run-control": (
        "controls the running horde, which only the user and the supervisor do",
        "post your concern on the board through the horde tool",
    ),
}
"""Rule name -> (what the command does, what to do instead)."""

_FORK_BOMB = re.compile(r"([A-Za-z_:][\w:]*)\(\)\{[^}]*\1\|\1")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_SHORT_OPTS = re.compile(r"^-[A-Za-z0-9]+$")
_PYTHON = re.compile(r"^python[0-9.]*$")
_HORDE_PROCESSES = (
    "python3",
    "horde-tui",
    "python3 -m horde_tui.member",
    "python3 -m horde_tui.gateway",
    "/usr/bin/python3 .venv/bin/horde-tui run 4 task",
)
"""Names and command lines of a horde's own processes, to test pkill/killall patterns on."""
_HOME_TARGET = re.compile(r"^(~[\w.-]*|\$HOME|\$\{HOME\})(/[*.]*)*$")
_GLOB_TAIL = re.compile(r"(/[*?.\[\]]*)+$")
_HORDE_PATH = re.compile(r"(^|/)\.horde(/|$)")
_SAFE_DEVICES = re.compile(r"^/dev/(null|zero|full|random|urandom|stdout|stderr|tty|fd/|pts/|shm/)")

_KEYWORDS = frozenset("! { } ( then do else elif if while until time nohup setsid".split())
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset("-u -g -C -D -h -p -r -t -T -U --user --group".split()),
    "doas": frozenset("-u -C".split()),
    "env": frozenset("-u -C -S --unset --chdir --split-string".split()),
    "nice": frozenset("-n --adjustment".split()),
    "ionice": frozenset("-c -n -p -P -u".split()),
    "timeout": frozenset("-s -k --signal --kill-after".split()),
    "stdbuf": frozenset("-i -o -e".split()),
    "xargs": frozenset("-a -d -E -I -L -n -P -s".split()),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
}
"""Prefixes that run the command after them -> their options that take a value."""
_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "pipx"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish"})
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset(
    "poweroff reboot halt kexec rescue emergency suspend hibernate hybrid-sleep".split()
)
_HORDE_NESTED = frozenset({"run", "plan", "demo", "app", "attach"})
_HORDE_CONTROL = frozenset({"stop", "stop-hard", "stop-clean", "pause", "resume"})
_HORDE_INFO = frozenset({"-h", "--help", "--version", "-V"})


def refusal_reason(command: str) -> str | None:
    """Why `command` must not run, as one line for the model, or None when it may run."""
    return _refusal(command, 0)


def _refusal(command: str, depth: int) -> str | None:
    if _FORK_BOMB.search(re.sub(r"\s+", "", command)):
        return _message("fork-bomb", command.strip())
    if depth > _MAX_DEPTH:
        return _message("too-deep", command.strip())
    for words, redirects in _segments(_tokens(command)):
        reason = _segment_refusal(words, redirects, depth)
        if reason:
            return reason
    return None


def _message(rule: str, fragment: str) -> str:
    what, instead = _RULES[rule]
    shown = fragment if len(fragment) <= 80 else fragment[:77] + "..."
    return f"refused: '{shown}' {what} (shell refusal list); {instead}"


def _tokens(command: str) -> list[str]:
    """Split like a shell: operators become their own tokens, quotes are removed."""
    text = command.replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&`")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: a plain split still exposes the words
        return re.sub(r"([();<>|&`])", r" \1 ", text.replace('"', " ").replace("'", " ")).split()


def _segments(tokens: list[str]) -> list[tuple[list[str], list[str]]]:
    """Simple commands between separators, each as (words, redirect targets written to)."""
    segments: list[tuple[list[str], list[str]]] = [([], [])]
    pending_redirect: str | None = None
    for token in tokens:
        words, targets = segments[-1]
        if pending_redirect is not None:
            if ">" in pending_redirect:
                targets.append(token)
            pending_redirect = None
        elif token and all(ch in "();<>|&`" for ch in token):
            if any(ch in token for ch in "()`") or not any(ch in token for ch in "<>"):
                segments.append(([], []))
            else:
                pending_redirect = token
        else:
            words.append(token)
    return segments


def _segment_refusal(words: list[str], redirects: list[str], depth: int) -> str | None:
    for target in redirects:
        rule = _written([target])
        if rule:
            return _message(rule, f"> {target}")
    for word in words:
        for match in _SUBSTITUTION.finditer(word):
            reason = _refusal(match.group(1) or match.group(2) or "", depth + 1)
            if reason:
                return reason
    command = _strip_prefixes(words)
    if not command:
        return None
    name, args = command[0].rsplit("/", 1)[-1], command[1:]
    if name in _SHELLS:
        script = _shell_script(args)
        return _refusal(script, depth + 1) if script else None
    if name == "eval":
        return _refusal(" ".join(args), depth + 1)
    if name == "su":
        script = _option_value(args, "-c", "--command")
        return _refusal(script, depth + 1) if script else None
    if (
        _PYTHON.match(name)
        and len(args) >= 2
        and args[0] == "-m"
        and args[1].startswith("horde_tui")
    ):
        name, args = "horde-tui", args[2:]
    rule = _command_rule(name, args)
    return _message(rule, " ".join(words)) if rule else None


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop assignments, keywords and wrappers (`sudo -u x`, `env A=1`, `timeout 5`, ...)."""
    rest = list(words)
    while rest:
        head = rest[0].rsplit("/", 1)[-1]
        if rest[0] in _KEYWORDS or _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
        elif head in _WRAPPERS:
            rest = _skip_options(rest[1:], _WRAPPERS[head])
            if head == "timeout" and rest:
                rest = rest[1:]  # the duration
        elif head in _RUNNERS and len(rest) > 1 and rest[1] == "run":
            rest = _skip_options(rest[2:], frozenset())
        elif head == "uvx":
            rest = _skip_options(rest[1:], frozenset())
        else:
            break
    return rest


def _skip_options(args: list[str], takes_value: frozenset[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--":
            return args[i + 1 :]
        i += 2 if args[i] in takes_value else 1
    return args[i:]


def _shell_script(args: list[str]) -> str | None:
    """The script of `bash -c SCRIPT` (also `-lc`, `-ec`, ...), or None."""
    for i, arg in enumerate(args):
        if _SHORT_OPTS.match(arg) and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
    return None


def _option_value(args: list[str], short: str, long: str) -> str | None:
    for i, arg in enumerate(args):
        if arg in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(long + "="):
            return arg.split("=", 1)[1]
    return None


def _command_rule(name: str, args: list[str]) -> str | None:
    """The rule a simple command (wrappers already stripped) breaks, if any."""
    if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs"):
        return "mkfs"
    if name in _POWER:
        return "power"
    check = _CHECKS.get(name)
    return check(args) if check else None


def _rm(args: list[str]) -> str | None:
    if "--no-preserve-root" in args:
        return "no-preserve-root"
    operands = _operands(args)
    if any(_broad_target(a) for a in operands):
        return "rm-root"
    return "ledger" if any(_in_ledgers(a) for a in operands) else None


def _recursive_perm(args: list[str]) -> str | None:
    recursive = any(a == "--recursive" or (_SHORT_OPTS.match(a) and "R" in a) for a in args)
    return "perm-root" if recursive and any(_broad_target(a) for a in _operands(args)) else None


def _dd(args: list[str]) -> str | None:
    return _written([a[3:] for a in args if a.startswith("of=")])


def _writes_operands(args: list[str]) -> str | None:
    return _written(_operands(args))


def _copy(args: list[str]) -> str | None:
    return _written(_operands(args)[-1:])


def _move(args: list[str]) -> str | None:
    operands = _operands(args)
    return "ledger" if any(_in_ledgers(a) for a in operands) else _written(operands[-1:])


def _sed(args: list[str]) -> str | None:
    in_place = any(a.startswith(("-i", "--in-place")) for a in args)
    return _written(_operands(args)) if in_place else None


def _init(args: list[str]) -> str | None:
    return "power" if args and re.fullmatch(r"[0-6sS]", args[0]) else None


def _systemctl(args: list[str]) -> str | None:
    return "power" if any(a in _SYSTEMCTL_POWER for a in _operands(args)) else None


def _git(args: list[str]) -> str | None:
    rest = _skip_options(args, frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"}))
    if not rest or rest[0] != "push":
        return None
    for arg in rest[1:]:
        if arg.startswith("--force") or arg.startswith("+"):
            return "force-push"
        if _SHORT_OPTS.match(arg) and "f" in arg:
            return "force-push"
    return None


def _crontab(args: list[str]) -> str | None:
    return "crontab" if any(_SHORT_OPTS.match(a) and "r" in a for a in args) else None


def _kill(args: list[str]) -> str | None:
    rest = args
    if rest and rest[0] in ("-s", "-n", "--signal"):
        rest = rest[2:]
    elif rest and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[1:]  # the signal: -9, -KILL, -SIGTERM
    if rest and rest[0] == "--":
        rest = rest[1:]
    return "kill-all" if "-1" in rest else None


def _pkill(args: list[str]) -> str | None:
    if any(a in ("-u", "-U", "--euid", "--uid") for a in args):
        return "kill-all"
    return "kill-horde" if any(_matches_horde(a) for a in _operands(args)) else None


def _matches_horde(pattern: str) -> bool:
    """Whether a pkill/killall pattern would match the horde's own processes."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    return any(compiled.search(name) for name in _HORDE_PROCESSES)


def _horde_tui(args: list[str]) -> str | None:
    operands = [a for a in args if not a.startswith("-")]
    if not operands:
        return None if any(a in _HORDE_INFO for a in args) else "nested-horde"
    if operands[0] in _HORDE_NESTED:
        return "nested-horde"
    return "run-control" if operands[0] in _HORDE_CONTROL else None


_CHECKS: dict[str, Callable[[list[str]], str | None]] = {
    "rm": _rm,
    "chmod": _recursive_perm,
    "chown": _recursive_perm,
    "chgrp": _recursive_perm,
    "dd": _dd,
    "tee": _writes_operands,
    "shred": _writes_operands,
    "truncate": _writes_operands,
    "cp": _copy,
    "install": _copy,
    "ln": _copy,
    "mv": _move,
    "sed": _sed,
    "init": _init,
    "telinit": _init,
    "systemctl": _systemctl,
    "git": _git,
    "crontab": _crontab,
    "kill": _kill,
    "pkill": _pkill,
    "killall": _pkill,
    "killall5": lambda _args: "kill-all",
    "horde-tui": _horde_tui,
}


def _operands(args: list[str]) -> list[str]:
    """Non-option arguments; everything after `--` counts as an operand."""
    if "--" in args:
        cut = args.index("--")
        return [a for a in args[:cut] if not a.startswith("-")] + args[cut + 1 :]
    return [a for a in args if not a.startswith("-")]


def _broad_target(arg: str) -> bool:
    """`/`, `/*`, a top-level directory like `/usr`, or a home directory (`~`, `$HOME/*`)."""
    if _HOME_TARGET.match(arg):
        return True
    if not arg.startswith("/"):
        return False
    path = _GLOB_TAIL.sub("", posixpath.normpath(arg)) or "/"
    home = posixpath.normpath(os.path.expanduser("~"))
    return path.count("/") <= 1 or path == home


def _written(paths: list[str]) -> str | None:
    """The rule broken by writing to `paths`: a device, or the ledgers in `.horde/`."""
    if any(_unsafe_device(p) for p in paths):
        return "device"
    return "ledger" if any(_in_ledgers(p) for p in paths) else None


def _unsafe_device(path: str) -> bool:
    return path.startswith("/dev/") and not _SAFE_DEVICES.match(path)


def _in_ledgers(path: str) -> bool:
    return bool(_HORDE_PATH.search(path))
