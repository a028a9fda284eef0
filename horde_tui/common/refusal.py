"""The refusal list for members' shell commands: destructive forms never run.

A model can be prompt-injected by what it reads, so `refusal_reason` parses a command the
way a shell splits it (separators, quotes, `sudo`/`env` prefixes, `bash -c "..."`,
`$(...)`) and refuses destructive forms with one line naming the rule and what to do
instead, while ordinary commands that merely mention a dangerous word (`grep -r
shutdown`, `echo "rm -rf /"`) still run. It also follows what the line sets up before a
command (`X=/; rm -rf $X`, `cd .horde && ...`), text piped into a shell, and one-line
`python -c`/`perl -e` programs. It is a courtesy against the obvious, not the boundary:
a script file hides anything from it, which is what the sandbox (`sandbox/policy.py`) is for.

`cleanup_refusal` walks a resource's `cleanup` command with the same parser and also
refuses every simple command that deletes, moves or overwrites a file (`env rm`,
`bash -c 'rm ...'`, `sed -i`, `tee FILE`, `> FILE`): cleanup tears down runtime objects.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

_MAX_DEPTH = 4
"""Nested `bash -c`, `eval` and `$(...)` levels the refusal list looks into."""

_RULES: dict[str, tuple[str, str]] = {
    "rm-root": (
        "deletes the filesystem root, a top-level directory or a home directory",
        "delete only specific paths inside the working directory",
    ),
    "rm-cwd": (
        "deletes the whole working directory or its parent",
        "delete only specific paths inside it, e.g. rm -rf ./build",
    ),
    "computed": (
        "deletes recursively a path computed when it runs ($VAR, $(...)), which the "
        "refusal list cannot check",
        "write the path out, e.g. rm -rf ./build",
    ),
    "hidden-script": (
        "pipes decoded text into a shell, out of the refusal list's sight",
        "run the command itself",
    ),
    "push-delete": (
        "deletes or mirrors remote branches",
        "push branches by name, without --mirror, --delete, --prune or :branch",
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
        "writes to a device or to the kernel's settings (/proc/sys, /sys)",
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
    "keep-files": (
        "changes files: cleanup commands may not delete, move or overwrite files",
        "cleanup is for external runtime objects such as `docker rm -f NAME` or `kill PID`",
    ),
}
"""Rule name -> (what the command does, what to do instead)."""
_RULE_OWNER = {"keep-files": "resources rule"}
"""Rules that are not the shell refusal list's own, by the rule their message names."""
_FILE_CHANGERS = frozenset(
    "rm rmdir unlink shred truncate srm wipe mv cp install ln rsync patch split csplit".split()
)
"""Commands that delete, move or write files whatever their options (`sed`, `tee` and
`dd` are judged by their options in `_changes_files`)."""
_GIT_FILE_CHANGERS = frozenset("clean rm mv checkout restore reset stash apply".split())
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
"""git's global options that take a value, skipped to find its subcommand."""

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

_DISK_TOOLS = frozenset(
    "mke2fs mkswap wipefs blkdiscard fdisk sfdisk cfdisk parted sgdisk gdisk".split()
)
"""Besides `mkfs*`: programs that format, partition or discard a disk (`-l` lists)."""
_INTERPRETERS: dict[str, tuple[str, ...]] = {
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval"),
    "php": ("-r",),
}
"""Interpreters (besides python, `-c`) -> their options that take a program text."""
_CODE_RUNS = re.compile(
    r"\b(system|popen|subprocess|spawn|exec[lv]?p?e?|check_call|check_output|call|run)\s*\("
)
_CODE_DELETES = re.compile(
    r"\b(rmtree|rm_rf|rm_r|rmSync|rmdirSync|remove_dir_all|removedirs|rmdir|unlink|remove)\s*\("
)
_CODE_WRITES = re.compile(
    r"\b(write|write_text|write_bytes|truncate|rename|replace|unlink|remove|rmtree|appendFile"
    r"|writeFile|rmSync)\b|open\([^)]*['\"][wax+]"
)
_LITERAL = re.compile(r"""(['"])(.*?)\1""")
_DECODERS = frozenset("base64 base32 xxd uudecode openssl rev gunzip zcat bzcat xzcat".split())
_FIND_TESTS = frozenset(
    "-name -iname -path -ipath -regex -iregex -type -newer -mtime -mmin -size -empty "
    "-user -group -perm -wholename -links -inum".split()
)
"""find predicates that narrow what `-delete` deletes (without one, `find .` is all)."""
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")
_BARE_EXPANSION = re.compile(r"^(\$\w+|\$\{[^}]*\}|\$\(.*\)|`.*`)(/[*.]*)*$")
_SAFE_VALUE = "/tmp/mktemp.XXXXXXXX"
"""What `$(mktemp ...)` stands for when a later `rm -rf "$tmp"` is checked."""
_HORDE_PID_VARS = ("PPID", "HORDE_PARENT_PID")
_SUBST_MARK = "__horde_subst_{}__"

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
    "taskset": frozenset(),
    "chrt": frozenset(),
    "flock": frozenset("-w -E --timeout --wait --conflict-exit-code".split()),
    "setpriv": frozenset(
        "--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps --ambient-caps "
        "--bounding-set --securebits --pdeathsig".split()
    ),
    "unshare": frozenset("-S -G -R -w --setuid --setgid --root --wd --propagation".split()),
    "nsenter": frozenset("-t -S -G -r -w --target --setuid --setgid --root --wd".split()),
    "watch": frozenset("-n -q --interval --equexit".split()),
    "busybox": frozenset(),
}
"""Prefixes that run the command after them -> their options that take a value."""
_WRAPPER_OPERANDS = {"timeout": 1, "taskset": 1, "chrt": 1, "flock": 1}
"""Wrappers that take operands before the command: a duration, a CPU mask, a priority,
a lock file."""
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
    return _refusal(command, 0, keep_files=False)


def cleanup_refusal(command: str) -> str | None:
    """Why a resource's `cleanup` command is refused, or None: everything the refusal
    list refuses, plus any simple command that deletes, moves or overwrites a file."""
    return _refusal(command, 0, keep_files=True)


@dataclass
class _Segment:
    """One simple command: its words, the files its redirects write, its here-strings
    (`<<< text`), and whether a pipe feeds it."""

    words: list[str] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)
    herestrings: list[str] = field(default_factory=list)
    piped: bool = False


@dataclass
class _Context:
    """What earlier commands of the same line set up: variables (`X=/`; None when
    computed) and the directory a `cd` moved to (None: the working directory)."""

    variables: dict[str, str | None] = field(default_factory=dict)
    cwd: str | None = None


def _refusal(command: str, depth: int, *, keep_files: bool) -> str | None:
    if _FORK_BOMB.search(re.sub(r"\s+", "", command)):
        return _message("fork-bomb", command.strip())
    if depth > _MAX_DEPTH:
        return _message("too-deep", command.strip())
    masked, substitutions = _mask_substitutions(command)
    context = _Context()
    previous: _Segment | None = None
    for segment in _segments(_tokens(masked)):
        segment.words = [_unmask(w, substitutions) for w in segment.words]
        segment.redirects = [_unmask(w, substitutions) for w in segment.redirects]
        reason = _line_refusal(segment, previous, context, depth, keep_files)
        if reason:
            return reason
        previous = segment
    return None


def _mask_substitutions(command: str) -> tuple[str, list[str]]:
    """`command` with each `$(...)` and backquote substitution (innermost first) as one
    placeholder word, so the shell-like split keeps it whole as an operand."""
    found: list[str] = []

    def mark(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return _SUBST_MARK.format(len(found) - 1)

    while True:
        masked = _SUBSTITUTION.sub(mark, command)
        if masked == command:
            return masked, found
        command = masked


def _unmask(word: str, substitutions: list[str]) -> str:
    for i in range(len(substitutions) - 1, -1, -1):
        mark = _SUBST_MARK.format(i)
        if mark in word:
            word = word.replace(mark, substitutions[i])
    return word


def _line_refusal(
    segment: _Segment, previous: _Segment | None, context: _Context, depth: int, keep_files: bool
) -> str | None:
    """Check one segment with what the line set up before it, then record what it sets."""
    for word in [*segment.words, *segment.redirects]:
        for match in _SUBSTITUTION.finditer(word):
            reason = _refusal(
                match.group(1) or match.group(2) or "", depth + 1, keep_files=keep_files
            )
            if reason:
                return reason
    words = [_expand(w, context) for w in segment.words]
    redirects = [_in_cwd(_expand(t, context), context) for t in segment.redirects]
    command = _strip_prefixes(words)
    if _record(command, words, context):
        return None
    name = command[0].rsplit("/", 1)[-1] if command else ""
    if segment.piped and previous is not None:
        reason = _piped_refusal(name, command, words, previous, depth, keep_files)
        if reason:
            return reason
        if "xargs" in {w.rsplit("/", 1)[-1] for w in words[: len(words) - len(command)]}:
            words = words + _fed_operands(previous.words)
    if name in _SHELLS and not _shell_script(command[1:]):
        for text in segment.herestrings:
            reason = _refusal(text, depth + 1, keep_files=keep_files)
            if reason:
                return reason
    if context.cwd is not None:
        words = words[:1] + [_in_cwd(w, context) for w in words[1:]]
    return _segment_refusal(words, redirects, depth, keep_files)


def _record(command: list[str], words: list[str], context: _Context) -> bool:
    """Note assignments (`X=/`, `export T=...`) and `cd`/`pushd`; True when that is all
    the segment does."""
    plain = words[1:] if words and words[0] in ("export", "local", "declare", "readonly") else words
    if plain and all(_ASSIGNMENT.match(w) for w in plain):
        for word in plain:
            name, value = word.split("=", 1)
            context.variables[name] = _value_of(value, context)
        return True
    if command and command[0] in ("cd", "pushd"):
        operands = [a for a in command[1:] if not a.startswith("-")]
        target = operands[0] if operands else "~"
        context.cwd = _in_cwd(target, context) if target != "-" else None
        return True
    return False


def _value_of(value: str, context: _Context) -> str | None:
    if "mktemp" in value and ("$(" in value or "`" in value):
        return _SAFE_VALUE
    expanded = _expand(value, context)
    return None if "$" in expanded or "`" in expanded else expanded


def _expand(word: str, context: _Context) -> str:
    """`word` with the variables the line set to known values put in."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        known = context.variables.get(name)
        return known if known is not None else match.group(0)

    return _VARIABLE.sub(value, word) if "$" in word else word


def _in_cwd(path: str, context: _Context) -> str:
    """`path` as seen from the working directory after the line's `cd`."""
    if context.cwd is None or not path or path.startswith(("-", "/", "~", "$")):
        return path
    if "=" in path or "://" in path:
        return path
    return posixpath.normpath(posixpath.join(context.cwd, path))


def _piped_refusal(
    name: str,
    command: list[str],
    words: list[str],
    previous: _Segment,
    depth: int,
    keep_files: bool,
) -> str | None:
    """Text piped into a shell (`echo 'rm -rf /' | sh`) is checked as a script; decoded
    text piped into one is refused, since it hides the command."""
    source = _strip_prefixes(previous.words)
    source_name = source[0].rsplit("/", 1)[-1] if source else ""
    if name in _SHELLS and not _shell_script(command[1:]):
        if source_name in _DECODERS:
            return _message("hidden-script", " ".join([*previous.words, "|", *words]))
        if source_name in ("echo", "printf"):
            script = " ".join(a for a in source[1:] if not _SHORT_OPTS.match(a))
            return _refusal(script.replace("\\n", "\n"), depth + 1, keep_files=keep_files)
    if name == "kill" and source_name in ("pgrep", "pidof"):
        if any(_matches_horde(a) for a in _operands(source[1:])):
            return _message("kill-horde", " ".join([*previous.words, "|", *words]))
    return None


def _fed_operands(words: list[str]) -> list[str]:
    """What a pipe into `xargs` hands on: echo's words, or the paths find starts from."""
    source = _strip_prefixes(words)
    name = source[0].rsplit("/", 1)[-1] if source else ""
    if name in ("echo", "printf"):
        return [a for a in source[1:] if not _SHORT_OPTS.match(a)]
    if name == "find":
        return _find_starts(source[1:])
    return []


def _message(rule: str, fragment: str) -> str:
    what, instead = _RULES[rule]
    shown = fragment if len(fragment) <= 80 else fragment[:77] + "..."
    return f"refused: '{shown}' {what} ({_RULE_OWNER.get(rule, 'shell refusal list')}); {instead}"


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


def _segments(tokens: list[str]) -> list[_Segment]:
    """Simple commands between separators, with the files their redirects write."""
    segments = [_Segment()]
    pending_redirect: str | None = None
    for token in tokens:
        segment = segments[-1]
        if pending_redirect is not None:
            if pending_redirect.endswith("&") and (token.isdigit() or token == "-"):
                pass  # `2>&1`, `>&2`, `1>&-`: a descriptor, not a file
            elif ">" in pending_redirect:
                segment.redirects.append(token)
            elif pending_redirect == "<<<":
                segment.herestrings.append(token)
            pending_redirect = None
        elif token and all(ch in "();<>|&`" for ch in token):
            if any(ch in token for ch in "()`") or not any(ch in token for ch in "<>"):
                segments.append(_Segment(piped=token == "|"))
            else:
                pending_redirect = token
        else:
            segment.words.append(token)
    return segments


def _segment_refusal(
    words: list[str], redirects: list[str], depth: int, keep_files: bool
) -> str | None:
    for target in redirects:
        keep = keep_files and not _SAFE_DEVICES.match(target)
        rule = "keep-files" if keep else _written([target])
        if rule:
            return _message(rule, f"> {target}")
    command = _strip_prefixes(words)
    if not command:
        return None
    name, args = command[0].rsplit("/", 1)[-1], command[1:]
    if name in _SHELLS:
        script = _shell_script(args)
        return _refusal(script, depth + 1, keep_files=keep_files) if script else None
    if name == "eval":
        return _refusal(" ".join(args), depth + 1, keep_files=keep_files)
    if name == "su":
        script = _option_value(args, "-c", "--command")
        return _refusal(script, depth + 1, keep_files=keep_files) if script else None
    if (
        _PYTHON.match(name)
        and len(args) >= 2
        and args[0] == "-m"
        and args[1].startswith("horde_tui")
    ):
        name, args = "horde-tui", args[2:]
    code = _program_text(name, args)
    if code is not None:
        return _code_refusal(code, " ".join(words), depth, keep_files)
    keep = keep_files and _changes_files(name, args)
    rule = "keep-files" if keep else _command_rule(name, args)
    return _message(rule, " ".join(words)) if rule else None


def _changes_files(name: str, args: list[str]) -> bool:
    """Whether a simple command (wrappers stripped) deletes, moves or writes a file."""
    if name == "sed":
        return _in_place(args)
    if name == "tee":
        return any(not _SAFE_DEVICES.match(a) for a in _operands(args))
    if name == "dd":
        return any(not _SAFE_DEVICES.match(a) for a in _dd_outputs(args))
    if name in _FILE_CHANGERS:
        return True
    if name == "find":
        return "-delete" in args or any(
            a in ("-exec", "-execdir", "-ok", "-okdir")
            and i + 1 < len(args)
            and _changes_files(args[i + 1].rsplit("/", 1)[-1], args[i + 2 :])
            for i, a in enumerate(args)
        )
    if name == "git":
        rest = _skip_options(args, _GIT_VALUE_OPTIONS)
        return bool(rest) and rest[0] in _GIT_FILE_CHANGERS
    return False


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop assignments, keywords and wrappers (`sudo -u x`, `env A=1`, `timeout 5`, ...)."""
    rest = list(words)
    while rest:
        head = rest[0].rsplit("/", 1)[-1]
        if rest[0] in _KEYWORDS or _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
        elif head in _WRAPPERS:
            rest = _skip_options(rest[1:], _WRAPPERS[head])
            rest = rest[_WRAPPER_OPERANDS.get(head, 0) :]
            if head == "flock" and rest[:1] in (["-c"], ["--command"]):
                rest = ["sh", *rest]  # flock FILE -c 'script'
            elif head == "watch" and len(rest) > 1:
                rest = ["sh", "-c", " ".join(rest)]  # watch joins its words into a script
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


def _program_text(name: str, args: list[str]) -> str | None:
    """The program of `python -c CODE`, `perl -e CODE`, `node -e CODE`, ..., or None."""
    flags = ("-c",) if _PYTHON.match(name) else _INTERPRETERS.get(name)
    if not flags:
        return None
    for i, arg in enumerate(args[:-1]):
        if arg in flags:
            return args[i + 1]
    return None


def _code_refusal(code: str, shown: str, depth: int, keep_files: bool) -> str | None:
    """A one-line program that deletes a broad path or a ledger, writes a ledger, or runs
    a refused shell command (`os.system('rm -rf /')`); for a cleanup, any program that
    deletes or writes files."""
    literals = [m.group(2) for m in _LITERAL.finditer(code)]
    if _CODE_RUNS.search(code):
        for script in [*literals, " ".join(literals)]:
            reason = _refusal(script, depth + 1, keep_files=keep_files)
            if reason:
                return reason
    if keep_files and (_CODE_DELETES.search(code) or _CODE_WRITES.search(code)):
        return _message("keep-files", shown)
    if _CODE_DELETES.search(code) and any(_broad_target(x) for x in literals):
        return _message("rm-root", shown)
    if _CODE_WRITES.search(code) and any(_in_ledgers(x) for x in literals):
        return _message("ledger", shown)
    return None


def _command_rule(name: str, args: list[str]) -> str | None:
    """The rule a simple command (wrappers already stripped) breaks, if any."""
    if name.startswith("mkfs") or name in _DISK_TOOLS:
        listing = args and all(a in ("-l", "--list", "-s", "--version", "-h") for a in args)
        return None if listing else "mkfs"
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
    recursive = any(
        a == "--recursive" or (_SHORT_OPTS.match(a) and a[1:].lower().count("r")) for a in args
    )
    if recursive and any(_whole_cwd(a) for a in operands):
        return "rm-cwd"
    if recursive and any(_BARE_EXPANSION.match(a) for a in operands):
        return "computed"
    return "ledger" if any(_in_ledgers(a) for a in operands) else None


def _whole_cwd(arg: str) -> bool:
    """`.`, `*`, `./*`, `..`, `../*`: the working directory (or its parent) entire."""
    path = _GLOB_TAIL.sub("", posixpath.normpath(arg)) if arg else arg
    return path in (".", "..", "") or bool(re.fullmatch(r"[*?.]+", path))


def _find_starts(args: list[str]) -> list[str]:
    starts: list[str] = []
    for arg in args:
        if arg.startswith("-") or arg in ("(", "!", ")"):
            break
        starts.append(arg)
    return starts or ["."]


def _find(args: list[str]) -> str | None:
    """`find ... -delete` or `-exec CMD {}` on a broad start, the ledgers, or (with
    nothing to narrow it) the whole working directory."""
    starts = _find_starts(args)
    if "-delete" in args:
        if any(_broad_target(s) for s in starts):
            return "rm-root"
        if any(_in_ledgers(s) for s in starts):
            return "ledger"
        if not _FIND_TESTS & set(args) and any(_whole_cwd(s) for s in starts):
            return "rm-cwd"
    for i, arg in enumerate(args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
            inner = args[i + 1 :]
            end = next((j for j, w in enumerate(inner) if w in (";", "+")), len(inner))
            name, rest = inner[0].rsplit("/", 1)[-1], inner[1:end]
            for start in starts:
                rule = _command_rule(name, [start if w == "{}" else w for w in rest])
                if rule:
                    return rule
    return None


def _recursive_perm(args: list[str]) -> str | None:
    recursive = any(a == "--recursive" or (_SHORT_OPTS.match(a) and "R" in a) for a in args)
    return "perm-root" if recursive and any(_broad_target(a) for a in _operands(args)) else None


def _dd_outputs(args: list[str]) -> list[str]:
    return [a[3:] for a in args if a.startswith("of=")]


def _dd(args: list[str]) -> str | None:
    return _written(_dd_outputs(args))


def _writes_operands(args: list[str]) -> str | None:
    return _written(_operands(args))


def _copy(args: list[str]) -> str | None:
    return _written(_operands(args)[-1:])


def _move(args: list[str]) -> str | None:
    operands = _operands(args)
    if any(_broad_target(a) for a in operands[:-1]):
        return "rm-root"
    return "ledger" if any(_in_ledgers(a) for a in operands) else _written(operands[-1:])


def _in_place(args: list[str]) -> bool:
    return any(a.startswith(("-i", "--in-place")) for a in args)


def _sed(args: list[str]) -> str | None:
    return _written(_operands(args)) if _in_place(args) else None


def _init(args: list[str]) -> str | None:
    return "power" if args and re.fullmatch(r"[0-6sS]", args[0]) else None


def _systemctl(args: list[str]) -> str | None:
    return "power" if any(a in _SYSTEMCTL_POWER for a in _operands(args)) else None


def _git(args: list[str]) -> str | None:
    rest = _skip_options(args, _GIT_VALUE_OPTIONS)
    if not rest or rest[0] != "push":
        return None
    for arg in rest[1:]:
        if arg.startswith("--force") or arg.startswith("+"):
            return "force-push"
        if _SHORT_OPTS.match(arg) and "f" in arg:
            return "force-push"
    for arg in rest[1:]:
        if arg in ("--mirror", "--delete", "--prune") or arg.startswith(":"):
            return "push-delete"
        if _SHORT_OPTS.match(arg) and "d" in arg:
            return "push-delete"
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
    if "-1" in rest:
        return "kill-all"
    return "kill-horde" if any(_horde_pid(a) for a in rest) else None


def _horde_pid(arg: str) -> bool:
    """`$PPID` (the member itself), `$HORDE_PARENT_PID`, or `$(pgrep horde...)`."""
    if any(f"${v}" in arg or f"${{{v}}}" in arg for v in _HORDE_PID_VARS):
        return True
    for match in _SUBSTITUTION.finditer(arg):
        words = _strip_prefixes(_tokens(match.group(1) or match.group(2) or ""))
        if words and words[0].rsplit("/", 1)[-1] in ("pgrep", "pidof"):
            return any(_matches_horde(a) for a in _operands(words[1:]))
    return False


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
    "find": _find,
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
    if path.startswith(("/proc/sys", "/sys/")):
        return True
    return path.startswith("/dev/") and not _SAFE_DEVICES.match(path)


def _in_ledgers(path: str) -> bool:
    return bool(_HORDE_PATH.search(path))
