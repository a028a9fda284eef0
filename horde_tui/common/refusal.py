"""The refusal list for members' shell commands: a courtesy against the obvious.

A prompt-injected model may try `rm -rf /` and its spellings, `mkfs`, a write to a disk,
`shutdown`, `git push -f`, `kill -1`, a write to `.horde/` or a nested horde: each is
refused in one line naming the rule and what to do instead. Commands are split as a shell
splits them (separators, quotes, `sudo`/`env` prefixes, `bash -c`, `eval`, `$(...)`, a `cd`
first), so `grep -r shutdown` or `echo "rm -rf /"` still run. A variable, a pipe into a
shell, a script or a one-line program hides anything from it: the kernel is the boundary
(`sandbox/policy.py`; cleanup runs with the project read-only, `supervisor/cleanup.py`).
`cleanup_refusal` also refuses any simple command that deletes, moves or overwrites a file.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex

_MAX_DEPTH = 4  # nested `bash -c`, `eval` and `$(...)` levels the list looks into

_RULES: dict[str, tuple[str, str]] = {
    name: (what, instead)
    for name, what, instead in (
        row.split(" | ")
        for row in f"""\
rm-root | deletes the filesystem root, a top-level directory or a home directory | delete only specific paths inside the working directory
rm-cwd | deletes the whole working directory or its parent | delete only specific paths inside it, e.g. rm -rf ./build
push-delete | deletes or mirrors remote branches | push branches by name, without --mirror, --delete, --prune or :branch
no-preserve-root | switches off rm's protection of / | delete only specific paths inside the working directory
mkfs | formats or wipes a filesystem | work on files inside the working directory; never format disks
device | writes to a device or to the kernel's settings (/proc/sys, /sys) | write to a file inside the working directory (or discard output to /dev/null)
power | shuts down or reboots the machine | other members share this machine; to finish, stop calling tools
perm-root | changes ownership or permissions recursively across / or a home directory | change only specific paths inside the working directory
force-push | force-pushes and rewrites remote history | push without force; if the remote moved, fetch and rebase first
crontab | deletes every cron job of the user | list jobs with crontab -l and change specific entries
kill-all | signals every process of the user | kill only the pids you started: kill PID
kill-horde | could kill the horde's own processes | kill only the pids you started: kill PID
ledger | changes .horde/, whose ledgers are written only through the horde tool | record it with the horde tool (horde-tui tool from bash); reading .horde/ is fine
fork-bomb | is a fork bomb | run bounded commands
too-deep | nests shells more than {_MAX_DEPTH} levels deep, past what the refusal list checks | run the inner command directly
nested-horde | starts a nested horde, which members may not do | coordinate through the horde tool (or horde-tui tool) in the current run
run-control | controls the running horde, which only the user and the supervisor do | post your concern on the board through the horde tool
keep-files | changes files: cleanup commands may not delete, move or overwrite files | cleanup is for external runtime objects such as `docker rm -f NAME` (it runs in a PID namespace of its own, so `kill PID` reaches nothing)
""".splitlines()
    )
}
"""Rule name -> (what the command does, what to do instead)."""

_FILE_CHANGERS = frozenset("rm rmdir unlink shred truncate mv cp install ln rsync patch".split())
_GIT_FILE_CHANGERS = frozenset("clean rm mv checkout restore reset stash apply".split())
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_DISK_TOOLS = frozenset("mke2fs mkswap wipefs blkdiscard fdisk sfdisk parted sgdisk gdisk".split())
_FORK_BOMB = re.compile(r"([A-Za-z_:][\w:]*)\(\)\{[^}]*\1\|\1")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_SHORT_OPTS = re.compile(r"^-[A-Za-z0-9]+$")
_HOME_TARGET = re.compile(r"^(~[\w.-]*|\$HOME|\$\{HOME\})(/[*.]*)*$")
_GLOB_TAIL = re.compile(r"(/[*?.\[\]]*)+$")
_HORDE_PATH = re.compile(r"(^|/)\.horde(/|$)")
_SAFE_DEVICES = re.compile(r"^/dev/(null|zero|full|random|urandom|stdout|stderr|tty|fd/|pts/|shm/)")
_HORDE_PROCESSES = ("python3 -m horde_tui.member", "/usr/bin/python3 .venv/bin/horde-tui run 4 t")
"""Command lines of a horde's own processes, to test pkill/killall patterns on."""
_OWN_PIDS = ("$PPID", "${PPID}", "$HORDE_PARENT_PID", "${HORDE_PARENT_PID}")  # member, supervisor

_KEYWORDS = frozenset("! { } ( then do else elif if while until time nohup setsid".split())
_WRAPPERS = frozenset("sudo doas env nice timeout xargs exec command".split())
_VALUE_OPTIONS = frozenset("-u -g -C -D -p -s -k -a -d -I -L -P --user --signal".split())
"""Prefixes that run the command after them, their options that take a word (`sudo -u
root`), and then maybe a number (`nice -n 5`, `timeout 5`)."""
_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv"})  # `uv run CMD` runs CMD
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "su"})
_POWER = frozenset("shutdown reboot halt poweroff kexec rescue emergency".split())
"""Commands, and `systemctl` verbs, that stop or restart the machine."""


def refusal_reason(command: str) -> str | None:
    """Why `command` must not run, as one line for the model, or None when it may run."""
    return _refusal(command, 0, keep_files=False)


def cleanup_refusal(command: str) -> str | None:
    """Why a resource's `cleanup` is refused, or None: the list, and any change to files."""
    return _refusal(command, 0, keep_files=True)


def _refusal(command: str, depth: int, *, keep_files: bool) -> str | None:
    """Each substitution, then each simple command, as seen after the line's `cd`."""
    if _FORK_BOMB.search(re.sub(r"\s+", "", command)):
        return _message("fork-bomb", command.strip())
    if depth > _MAX_DEPTH:
        return _message("too-deep", command.strip())
    for match in _SUBSTITUTION.finditer(command):
        reason = _refusal(match.group(1) or match.group(2) or "", depth + 1, keep_files=keep_files)
        if reason:
            return reason
    cwd = ""  # where the line's `cd` moved, relative to the working directory
    for words, redirects in _segments(_tokens(command)):
        stripped = _strip_prefixes(words)
        if stripped[:1] in (["cd"], ["pushd"]):
            target = next((a for a in stripped[1:] if not a.startswith("-")), "~")
            cwd = "" if target == "-" else _in_cwd(target, cwd)
            continue
        words = words[:1] + [_in_cwd(w, cwd) for w in words[1:]]
        reason = _simple(words, [_in_cwd(r, cwd) for r in redirects], depth, keep_files)
        if reason:
            return reason
    return None


def _in_cwd(path: str, cwd: str) -> str:
    """`path` as seen from the working directory after the line's `cd` to `cwd`."""
    if not cwd or not path or path.startswith(("-", "/", "~", "$")) or "=" in path:
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


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
    """Simple commands between separators: (their words, the files their redirects write)."""
    segments: list[tuple[list[str], list[str]]] = [([], [])]
    pending: str | None = None
    for token in tokens:
        if pending is not None:
            descriptor = pending[-1] == "&" and (token.isdigit() or token == "-")  # `2>&1`
            if ">" in pending and not descriptor:
                segments[-1][1].append(token)
            pending = None
        elif token and all(ch in "();<>|&`" for ch in token):
            if any(ch in token for ch in "()`") or not any(ch in token for ch in "<>"):
                segments.append(([], []))
            else:
                pending = token
        else:
            segments[-1][0].append(token)
    return segments


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop assignments, keywords and wrappers (`sudo -u x`, `env A=1`, `timeout 5`, ...)."""
    rest = list(words)
    while rest:
        head = rest[0].rsplit("/", 1)[-1]
        if rest[0] in _KEYWORDS or _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
        elif head in _WRAPPERS:
            rest = _skip_options(rest[1:], _VALUE_OPTIONS)
            rest = rest[1:] if re.fullmatch(r"[\d.]+[smhd]?", (rest or [""])[0]) else rest
        elif head in _RUNNERS and rest[1:2] == ["run"]:
            rest = _skip_options(rest[2:], frozenset())
        else:
            return rest
    return rest


def _skip_options(args: list[str], takes_value: frozenset[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--":
            return args[i + 1 :]
        i += 2 if args[i] in takes_value else 1
    return args[i:]


def _simple(words: list[str], redirects: list[str], depth: int, keep_files: bool) -> str | None:
    """Why one simple command (its words and the files it redirects to) may not run."""
    for target in redirects:
        keep = keep_files and not _SAFE_DEVICES.match(target)
        rule = "keep-files" if keep else _written([target])
        if rule:
            return _message(rule, f"> {target}")
    head, *args = _strip_prefixes(words) or [""]
    name = head.rsplit("/", 1)[-1]
    if name in _SHELLS or name == "eval":  # `bash -c SCRIPT`, `-lc`, `su -c`, `eval ...`
        flag = next((i for i, a in enumerate(args) if _SHORT_OPTS.match(a) and "c" in a), len(args))
        script = " ".join(args) if name == "eval" else " ".join(args[flag + 1 : flag + 2])
        return _refusal(script, depth + 1, keep_files=keep_files) if script else None
    if re.fullmatch(r"python[0-9.]*", name) and " ".join(args[:2]).startswith("-m horde_tui"):
        name, args = "horde-tui", args[2:]
    rule = "keep-files" if keep_files and _changes_files(name, args) else _rule(name, args)
    return _message(rule, " ".join(words)) if rule else None


def _writes(name: str, args: list[str]) -> list[str]:
    """The paths a simple command (wrappers stripped) writes, deletes or moves."""
    operands = _operands(args)
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    if name in ("cp", "install", "ln", "mv"):
        return operands[-1:]
    in_place = any(a.startswith(("-i", "--in-place")) for a in args)
    return operands if name in ("tee", "shred", "truncate") or (name == "sed" and in_place) else []


def _changes_files(name: str, args: list[str]) -> bool:
    """Whether a simple command deletes, moves or writes a file (a cleanup's rule)."""
    if name == "find":
        return _find_deletes(args)
    if name == "git":
        return bool(_GIT_FILE_CHANGERS & set(_skip_options(args, _GIT_VALUE_OPTIONS)[:1]))
    if name in ("tee", "dd", "sed"):
        return any(not _SAFE_DEVICES.match(path) for path in _writes(name, args))
    return name in _FILE_CHANGERS


def _rule(name: str, args: list[str]) -> str | None:
    """The rule a simple command (wrappers already stripped) breaks, if any."""
    operands = _operands(args)
    if name.startswith("mkfs") or name in _DISK_TOOLS:  # format, partition, discard; -l lists
        listing = args and all(a in ("-l", "--list", "-s", "--version", "-h") for a in args)
        return None if listing else "mkfs"
    init = name in ("init", "telinit") and re.fullmatch(r"[0-6sS]", args[0] if args else "")
    if name in _POWER or init or (name == "systemctl" and _POWER & set(operands)):
        return "power"
    if name == "crontab" and any(_SHORT_OPTS.match(a) and "r" in a for a in args):
        return "crontab"
    recursive = any(_SHORT_OPTS.match(a) and "R" in a for a in args) or "--recursive" in args
    if name in ("chmod", "chown", "chgrp") and recursive:
        return "perm-root" if any(_broad_target(a) for a in operands) else None
    if name == "git":
        return _git(args)
    if name in ("kill", "pkill", "killall", "killall5"):
        return _signal(name, args)
    if name == "horde-tui":
        return _horde_tui(operands, args)
    return _deletion(name, args) or _written(_writes(name, args))


def _deletion(name: str, args: list[str]) -> str | None:
    """`rm`, `mv` (its sources) or a deleting `find` on the filesystem root, a top-level or
    home directory, the whole working directory, or the ledgers."""
    operands, whole = _operands(args), False
    if name == "rm":
        short = "".join(a for a in args if _SHORT_OPTS.match(a)).lower()
        whole = "--recursive" in args or "r" in short
    elif name == "mv":
        operands = operands[:-1]
    elif name == "find" and _find_deletes(args):
        count = next((i for i, a in enumerate(args) if a.startswith("-") or a in "(!)"), len(args))
        operands, whole = args[:count] or ["."], args[count:] == ["-delete"]
    else:
        return None
    if "--no-preserve-root" in args:
        return "no-preserve-root"
    if any(_broad_target(a) for a in operands):
        return "rm-root"
    if whole and any(_whole_cwd(a) for a in operands):
        return "rm-cwd"
    return "ledger" if any(_HORDE_PATH.search(a) for a in operands) else None


def _whole_cwd(arg: str) -> bool:
    """`.`, `*`, `./*`, `..`, `../*`: the working directory (or its parent) entire."""
    path = _GLOB_TAIL.sub("", posixpath.normpath(arg)) if arg else arg
    return path in (".", "..", "") or bool(re.fullmatch(r"[*?.]+", path))


def _find_deletes(args: list[str]) -> bool:
    """`find ... -delete`, or `-exec` (`-execdir`, `-ok`) of a command that changes files."""
    return "-delete" in args or any(
        a in ("-exec", "-execdir", "-ok", "-okdir")
        and _changes_files(args[i + 1].rsplit("/", 1)[-1], args[i + 2 :])
        for i, a in enumerate(args[:-1])
    )


def _git(args: list[str]) -> str | None:
    rest = _skip_options(args, _GIT_VALUE_OPTIONS)
    if rest[:1] != ["push"]:
        return None
    if any(a.startswith(("--force", "+")) or (_SHORT_OPTS.match(a) and "f" in a) for a in rest):
        return "force-push"
    deletes = ("--mirror", "--delete", "--prune")
    if any(a in deletes or a.startswith(":") or (_SHORT_OPTS.match(a) and "d" in a) for a in rest):
        return "push-delete"
    return None


def _signal(name: str, args: list[str]) -> str | None:
    """Signalling every process of the user (`kill -1`, `pkill -u`, `killall5`), or the
    horde's own: the member or supervisor pid, a pattern the horde's processes match."""
    if name != "kill":
        if name == "killall5" or {"-u", "-U", "--euid", "--uid"} & set(args):
            return "kill-all"
        for pattern in _operands(args):
            with contextlib.suppress(re.error):
                if any(re.search(pattern, line) for line in _HORDE_PROCESSES):
                    return "kill-horde"
        return None
    if args[:1] in (["-s"], ["-n"], ["--signal"]):
        args = args[2:]
    elif args[:1] != ["--"] and args[:1] and args[0].startswith("-"):
        args = args[1:]  # the signal: -9, -KILL, -SIGTERM (`kill -1 PID` is SIGHUP)
    rest = args[1:] if args[:1] == ["--"] else args
    if "-1" in rest:
        return "kill-all"
    return "kill-horde" if any(v in a for a in rest for v in _OWN_PIDS) else None


def _horde_tui(operands: list[str], args: list[str]) -> str | None:
    """A nested horde (`run`, `demo`, the app: no words), or controlling the running one."""
    if not operands:
        return None if {"-h", "--help", "--version", "-V"} & set(args) else "nested-horde"
    if operands[0] in ("run", "plan", "demo", "app", "attach"):
        return "nested-horde"
    control = ("stop", "stop-hard", "stop-clean", "pause", "resume")
    return "run-control" if operands[0] in control else None


def _operands(args: list[str]) -> list[str]:
    """Non-option arguments; everything after `--` counts as an operand."""
    cut = args.index("--") if "--" in args else len(args)
    return [a for a in args[:cut] if not a.startswith("-")] + args[cut + 1 :]


def _broad_target(arg: str) -> bool:
    """`/`, `/*`, a top-level directory like `/usr`, or a home directory (`~`, `$HOME/*`)."""
    if not arg.startswith("/"):
        return bool(_HOME_TARGET.match(arg))
    path = _GLOB_TAIL.sub("", posixpath.normpath(arg)) or "/"
    return path.count("/") <= 1 or path == posixpath.normpath(os.path.expanduser("~"))


def _written(paths: list[str]) -> str | None:
    """The rule broken by writing to `paths`: a device or the kernel, or `.horde/`."""
    unsafe = [p for p in paths if p.startswith(("/proc/sys", "/sys/", "/dev/"))]
    if any(not _SAFE_DEVICES.match(p) for p in unsafe):
        return "device"
    return "ledger" if any(_HORDE_PATH.search(p) for p in paths) else None


def _message(rule: str, fragment: str) -> str:
    what, instead = _RULES[rule]
    shown = fragment if len(fragment) <= 80 else fragment[:77] + "..."
    owner = "resources rule" if rule == "keep-files" else "shell refusal list"
    return f"refused: '{shown}' {what} ({owner}); {instead}"
