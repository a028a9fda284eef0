"""The member's workspace tools (`read`, `bash`, `edit`, `write`) and their definitions.

Every result is text a model reads: refusals are one line saying what was refused, the
rule, and what to do instead, so strong and small models alike can recover on the next
turn. Paths stay inside the working directory (symlinks resolved), and `.horde/` is
readable but written only through the `horde` tool, whose rules keep the ledgers sound.
Containment is a guard rail for the file tools: they open paths relative to the
working directory one directory at a time without following symlinks, so a directory
swapped for a symlink after the check cannot send a write outside. `bash` runs behind
the refusal list and, where it can run, the bubblewrap sandbox (`sandbox/policy.py`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from horde_tui.common.inputs import loads
from horde_tui.common.refusal import refusal_reason
from horde_tui.member.confirm import ConfirmGate
from horde_tui.sandbox.policy import SandboxPolicy
from horde_tui.sandbox.shell import run_command
from horde_tui.store import identity
from horde_tui.store.secretfiles import is_secret

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": (
                "Read a text file in the working directory. Lines come numbered "
                "('   12<TAB>text'); the numbers are not part of the file. Long files come "
                "in pages: the result ends with the offset to read on from. Paths are "
                "relative to the working directory. The .horde/*.md ledgers are readable."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, e.g. src/app.py"},
                    "offset": {
                        "type": "integer",
                        "description": "First line to show, 1-based (default 1)",
                    },
                    "limit": {
                        "type": "integer",
                        "description": "How many lines to show (default and max 2000)",
                    },
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": (
                "Run a shell command with bash in the working directory and get its "
                "combined stdout and stderr and its exit code. No input and no terminal: "
                "never start editors, pagers or prompts. Long output is cut in the "
                "middle, so filter it (grep, head, tail, wc). Destructive commands are "
                "refused. Commands may run in a sandbox: only the working directory is "
                "writable, .horde/ is read-only, and background processes end when the "
                "command returns (start a server and its client in one command). Use "
                "read to view files and edit or write to change them."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line"},
                    "timeout": {
                        "type": "number",
                        "description": "Seconds before the command is killed (default 120, max 600)",
                    },
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit",
            "description": (
                "Replace text in an existing file: oldText must match the file exactly "
                "(spaces, tabs and line breaks included, without read's line numbers) "
                "and exactly once; add neighbouring lines to make it unique. Read the "
                "file first. Use write to create a file."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path"},
                    "oldText": {"type": "string", "description": "Exact text to replace"},
                    "newText": {"type": "string", "description": "Text to put in its place"},
                },
                "required": ["path", "oldText", "newText"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": (
                "Create a file, or replace a whole file, with content; missing parent "
                "directories are created. For small changes to an existing file use edit. "
                "Files under .horde/ are written only through the horde tool."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path"},
                    "content": {"type": "string", "description": "The complete file content"},
                },
                "required": ["path", "content"],
            },
        },
    },
    *(
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "description": "An http or https URL"}
                    },
                    "required": ["url"],
                },
            },
        }
        for name, description in (
            (
                "links",
                "List the unique links (href and src) of a web page as absolute URLs, at "
                "most 250, instead of fetching its HTML with bash. A URL that fails gives a "
                "one-line error.",
            ),
            (
                "sitemap",
                "List the page URLs (<loc>) of a sitemap (e.g. https://site/sitemap.xml), "
                "following sub-sitemaps, at most 250. A URL that fails gives a one-line error.",
            ),
        )
    ),
]
"""OpenAI function-format definitions; `dispatch` checks arguments against these schemas."""

GREP_DEFINITION: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": (
            "Search the text files under a path of the working directory for a regular "
            "expression (Python syntax; (?i) at its start ignores case). Each match "
            "comes as 'path:line: text', at most 200; .git/ and binary and secret files "
            "are skipped. Read a match's file with read."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression"},
                "path": {
                    "type": "string",
                    "description": "A directory or file to search (default: the whole "
                    "working directory)",
                },
            },
            "required": ["pattern"],
        },
    },
}
"""The read-only sessions' search (helpers, the ask analyst: they have no shell);
members search with bash."""

_SCHEMAS: dict[str, dict[str, Any]] = {
    d["function"]["name"]: d["function"]["parameters"]
    for d in [*TOOL_DEFINITIONS, GREP_DEFINITION]
}
_SHORTHAND = re.compile(r"(links|sitemap)\s+(https?://\S+)")
"""A bash command that is one of horde.py's shorthands: run as the tool of that name."""
_TYPE_NAMES = {"string": "a string", "integer": "an integer", "number": "a number"}
_LISTING_CAP = 200
_GREP_CAP = 200
"""Matches a grep shows at most."""
_GREP_FILE_BYTES = 4 * 1024 * 1024
"""A file larger than this is searched in its first bytes only."""
_BINARY_SAMPLE = 8192
_COUNT_LINES_UP_TO = 64 * 1024 * 1024
"""Past this size a read does not scan the rest of the file to tell its line count."""


@dataclass(frozen=True)
class ToolOutput:
    """One tool result: `text` for the model, `summary` for status lines."""

    ok: bool
    text: str
    summary: str


class _Refused(Exception):
    """A refusal raised from deep in a tool; `dispatch` and the tools turn it into output."""


class WorkspaceTools:
    """The file and shell tools of one member, bound to the directory under study."""

    def __init__(
        self,
        workdir: Path,
        horde_dir: Path | None = None,
        *,
        read_max_bytes: int = 50_000,
        read_max_lines: int = 2_000,
        read_max_line_bytes: int = 2_000,
        write_max_bytes: int = 1024 * 1024,
        bash_max_timeout_s: float = 600,
        output_limit: int = 30_000,
        env: Mapping[str, str] | None = None,
        sandbox: SandboxPolicy | None = None,
        confirm: ConfirmGate | None = None,
    ) -> None:
        self.workdir = Path(os.path.realpath(workdir))
        self.horde_dir = Path(os.path.realpath(horde_dir or self.workdir / ".horde"))
        self.read_max_bytes = read_max_bytes
        self.read_max_lines = read_max_lines
        self.read_max_line_bytes = read_max_line_bytes
        self.write_max_bytes = write_max_bytes
        self.bash_max_timeout_s = bash_max_timeout_s
        self.output_limit = output_limit
        self.env = env
        """Environment for commands (scrubbed by `run_command`); None means os.environ."""
        self.sandbox = replace(
            sandbox or SandboxPolicy(), readonly=(self.horde_dir, self.workdir / ".horde")
        )
        """How commands are confined; `.horde/` is read-only inside the sandbox."""
        self.confirm = confirm
        """Confirm mode: a person decides on each command before it runs."""

    # --- dispatch ---------------------------------------------------------------------

    def dispatch(self, name: str, args: Mapping[str, Any] | str) -> ToolOutput:
        """Run tool `name` with the model's arguments (a mapping or its JSON text).

        Bad calls come back as `ok=False` with one line naming the argument and the type
        expected, never as an exception, so the loop can hand them to the model as is.
        """
        tools: dict[str, Callable[..., ToolOutput]] = {
            "read": self.read,
            "grep": self.grep,
            "bash": self.bash,
            "edit": self.edit,
            "write": self.write,
            "links": self.links,
            "sitemap": self.sitemap,
        }
        if name not in tools:
            known = ", ".join(tools)
            return ToolOutput(False, f"refused: unknown tool {name!r}; use one of {known}", name)
        kwargs: dict[str, Any] = {}
        try:
            kwargs = _checked_args(name, args)
            return tools[name](**kwargs)
        except _Refused as exc:
            return ToolOutput(False, str(exc), name)
        except OSError as exc:
            text = f"{name} failed: {exc}; check the path and its permissions with bash: ls -la"
            return ToolOutput(False, text, f"{name} {kwargs.get('path', '')}".rstrip())

    # --- read -------------------------------------------------------------------------

    def read(self, path: str, offset: int = 1, limit: int | None = None) -> ToolOutput:
        """Numbered lines of a text file, one page at a time, capped in lines and bytes."""
        summary = f"read {path}"
        try:
            target = self._resolve(path, "read")
            if offset < 1 or (limit is not None and limit < 1):
                raise _Refused(
                    f"refused: read of {path!r} with offset={offset}, limit={limit} "
                    "(offset is a 1-based line number, limit a line count); use values of 1 or more"
                )
            if self._secret(target):
                raise _Refused(
                    f"refused: read of {path!r}, a secret file of the run: a token, key or the config (the run's "
                    "secrets are never shown to members); read the ledgers and run files instead"
                )
            if target.is_dir():
                return self._listing(path, target)
            if not target.exists():
                raise _Refused(
                    f"refused: read of {path!r}: no such file (paths are relative to the working "
                    "directory); find it with bash: ls, or find . -name NAME"
                )
            if not target.is_file():
                raise _Refused(
                    f"refused: read of {path!r}, which is not a regular file (read opens files "
                    "only); inspect it with bash: ls -la"
                )
            with target.open("rb") as fh:
                sample = fh.read(_BINARY_SAMPLE)
                if b"\0" in sample:
                    size = target.stat().st_size
                    raise _Refused(
                        f"refused: {path!r} is a binary file of {size} bytes (read shows text "
                        f"only); inspect it with bash, e.g. file {path}; xxd {path} | head"
                    )
                fh.seek(0)
                return self._page(fh, path, offset, limit)
        except _Refused as exc:
            return ToolOutput(False, str(exc), summary)

    def _page(self, fh: BinaryIO, path: str, offset: int, limit: int | None) -> ToolOutput:
        max_lines = min(limit or self.read_max_lines, self.read_max_lines)
        shown: list[str] = []
        used = 0
        lineno = 0
        next_offset = None
        for lineno, (raw, length) in enumerate(_bounded_lines(fh, self.read_max_line_bytes), 1):
            if lineno < offset:
                continue
            entry = f"{lineno:>5}\t{self._line_text(raw, length)}"
            size = len(entry.encode()) + 1
            if len(shown) == max_lines or (shown and used + size > self.read_max_bytes):
                next_offset = lineno
                break
            shown.append(entry)
            used += size
        if not shown:
            if lineno == 0:
                return ToolOutput(True, "[empty file]", f"read {path} (empty)")
            raise _Refused(
                f"refused: read of {path!r} at offset={offset} is past the end of the file "
                f"({lineno} lines); use an offset from 1 to {lineno}"
            )
        last = offset + len(shown) - 1
        text = "\n".join(shown)
        if next_offset is not None:
            total = self._total_lines(fh, next_offset)
            text += f"\n[... file continues: use offset={next_offset} to read on{total}]"
        return ToolOutput(True, text, f"read {path}:{offset}-{last}")

    def _line_text(self, raw: bytes, length: int) -> str:
        text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
        if length > len(raw):
            text += (
                f" [... line cut: {self.read_max_line_bytes} of {length} bytes shown; "
                "see it whole with bash, e.g. cut -c or fold]"
            )
        return text

    @staticmethod
    def _total_lines(fh: BinaryIO, next_offset: int) -> str:
        """'; N lines in all', when the rest of the file is small enough to count."""
        if os.fstat(fh.fileno()).st_size > _COUNT_LINES_UP_TO:
            return ""
        newlines, last = 0, b"\n"
        while chunk := fh.read(1024 * 1024):
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
        unterminated = 0 if last == b"\n" else 1
        return f"; {next_offset + newlines + unterminated} lines in all"

    def _listing(self, path: str, target: Path) -> ToolOutput:
        entries = sorted(target.iterdir(), key=lambda p: p.name)
        names = [p.name + ("/" if p.is_dir() else "") for p in entries[:_LISTING_CAP]]
        if len(entries) > _LISTING_CAP:
            names.append(f"[... {len(entries) - _LISTING_CAP} more entries]")
        head = (
            f"refused: {path!r} is a directory (read opens files); its entries are below, "
            "read one of them"
        )
        return ToolOutput(False, "\n".join([head, *names]), f"read {path} (directory)")

    def _secret(self, target: Path) -> bool:
        """A secret or lock file of the run (`store.secretfiles`): never shown to a model."""
        return any(is_secret(target, Path(os.path.realpath(d))) for d in self.sandbox.readonly)

    # --- grep -------------------------------------------------------------------------

    def grep(self, pattern: str, path: str = ".") -> ToolOutput:
        """Matching lines under `path`, without a shell: what a read-only session (a
        helper, the ask analyst) has instead of `bash: grep -rn`."""
        summary = f"grep {pattern[:60]} {path}".rstrip()
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            return ToolOutput(
                False,
                f"refused: grep pattern {pattern[:80]!r} is not a regular expression ({exc}); "
                "escape special characters with a backslash",
                summary,
            )
        try:
            root = self._resolve(path, "grep")
            if not root.exists():
                raise _Refused(
                    f"refused: grep of {path!r}: no such file or directory (paths are "
                    "relative to the working directory); give a directory such as ."
                )
        except _Refused as exc:
            return ToolOutput(False, str(exc), summary)
        found: list[str] = []
        for file in self._grep_files(root):
            found += self._grep_file(file, regex, _GREP_CAP + 1 - len(found))
            if len(found) > _GREP_CAP:
                break
        if not found:
            return ToolOutput(True, f"no line matches {pattern!r} under {path}", summary)
        text = "\n".join(found[:_GREP_CAP])
        if len(text) > self.output_limit:
            text = text[: self.output_limit] + "\n[... output cut: narrow the pattern or the path]"
        elif len(found) > _GREP_CAP:
            text += f"\n[... more than {_GREP_CAP} matches: narrow the pattern or the path]"
        return ToolOutput(True, text, f"{summary} ({min(len(found), _GREP_CAP)} matches)")

    def _grep_files(self, root: Path) -> Iterator[Path]:
        """The files under `root` in name order: no .git/, no link leaving the working
        directory, no secret file."""
        for file in [root] if root.is_file() else _walk(root):
            real = Path(os.path.realpath(file))
            if _inside(real, self.workdir) and real.is_file() and not self._secret(real):
                yield file

    def _grep_file(self, file: Path, regex: re.Pattern[str], cap: int) -> list[str]:
        try:
            with file.open("rb") as fh:
                data = fh.read(_GREP_FILE_BYTES)
        except OSError:
            return []
        if b"\0" in data[:_BINARY_SAMPLE]:
            return []
        rel = file.relative_to(self.workdir).as_posix()
        out: list[str] = []
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                out.append(f"{rel}:{n}: {line[: self.read_max_line_bytes]}")
                if len(out) >= cap:
                    break
        return out

    # --- bash -------------------------------------------------------------------------

    def bash(self, command: str, timeout: float = 120) -> ToolOutput:
        """Run `command` in the working directory; ok only for exit 0 within the timeout."""
        first_line = command.strip().splitlines()[0] if command.strip() else ""
        summary = "bash: " + (first_line if len(first_line) <= 80 else first_line[:77] + "...")
        if not first_line:
            return ToolOutput(False, "refused: empty command (bash); send a command line", summary)
        shorthand = _SHORTHAND.fullmatch(command.strip())
        if shorthand:  # horde.py's `links URL` / `sitemap URL`, as a model taught by it sends them
            return self._fetch_tool(shorthand[1], shorthand[2])
        if self.confirm is not None:
            # The destructive list refuses before a person is asked: confirm or not.
            reason = refusal_reason(command)
            if reason:
                return ToolOutput(False, reason, summary)
            if not self.confirm.ask(command, self.workdir).allowed:
                text = (
                    f"refused by the user: {first_line[:200]} was not run (confirm mode: a "
                    "person decides on each command); do without it, or try another way"
                )
                return ToolOutput(False, text, summary)
        capped = min(max(timeout, 1), self.bash_max_timeout_s)
        result = run_command(
            command, self.workdir, capped, self.output_limit, self.env, self.sandbox
        )
        identity.reap_adopted()  # orphans of earlier commands that have exited since
        text = result.output
        if capped != timeout:
            text = (
                f"[timeout set to {capped:g}s: allowed range 1-{self.bash_max_timeout_s:g}]\n{text}"
            )
        return ToolOutput(result.exit_code == 0, text, summary)

    # --- links and sitemap ------------------------------------------------------------

    def links(self, url: str) -> ToolOutput:
        """The unique href/src of a web page (`member/web.py`)."""
        return self._fetch_tool("links", url)

    def sitemap(self, url: str) -> ToolOutput:
        """The <loc> pages of a sitemap, following sub-sitemaps (`member/web.py`)."""
        return self._fetch_tool("sitemap", url)

    def _fetch_tool(self, name: str, url: str) -> ToolOutput:
        """Under the run's network policy, and in confirm mode asked like a command:
        a GET carries data out as surely as curl does."""
        from horde_tui.member import web

        summary = f"{name} {url}"[:120]
        problem = web.url_problem(url.strip(), self.sandbox.network)
        if problem:
            return ToolOutput(False, f"refused: {name} of {url!r}: {problem}", summary)
        if self.confirm is not None and not self.confirm.ask(f"{name} {url}", self.workdir).allowed:
            return ToolOutput(False, f"refused by the user: {name} {url} was not fetched", summary)
        tool = web.links if name == "links" else web.sitemap
        result = tool(url.strip(), web.fetcher(self.sandbox.network))
        return ToolOutput(result.ok, result.text, summary)

    # --- edit and write ---------------------------------------------------------------

    def edit(self, path: str, oldText: str, newText: str) -> ToolOutput:
        """Replace the one exact occurrence of `oldText`; argument names follow the schema."""
        summary = f"edit {path}"
        try:
            target = self._writable(path, "edit")
            if not target.is_file():
                raise _Refused(
                    f"refused: edit of {path!r}: no such file (edit changes existing files); "
                    "create it with write"
                )
            parent = self._open_parent(target, path, "edit", create=False)
        except _Refused as exc:
            return ToolOutput(False, str(exc), summary)
        try:
            return self._edit_at(parent, target, path, oldText, newText)
        finally:
            os.close(parent)

    def _edit_at(
        self, parent: int, target: Path, path: str, oldText: str, newText: str
    ) -> ToolOutput:
        """`edit` once the file's directory is open: read and replace it through `parent`."""
        summary = f"edit {path}"
        try:
            content = self._text_of(_read_at(parent, target.name, path), path)
            old, new = oldText, newText
            if not old:
                raise _Refused(
                    "refused: edit with an empty oldText (edit replaces existing text); "
                    "to replace the whole file use write"
                )
            count = content.count(old)
            if count == 0 and "\r\n" in content and "\n" in old and "\r\n" not in old:
                old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
                count = content.count(old)
            if count != 1:
                raise _Refused(_match_problem(path, count))
            if old == new:
                raise _Refused(
                    "refused: oldText and newText are identical (edit needs a change); "
                    "send the text you want in newText"
                )
            self._check_size(new, "newText")
            at = content.index(old)
            data = (content[:at] + new + content[at + len(old) :]).encode()
            _atomic_write_at(parent, target.name, data)
        except _Refused as exc:
            return ToolOutput(False, str(exc), summary)
        line = content.count("\n", 0, at) + 1
        text = (
            f"edited {path} at line {line}: {_line_count(old)} lines replaced by {_line_count(new)}"
        )
        return ToolOutput(True, text, f"edit {path}:{line}")

    def write(self, path: str, content: str) -> ToolOutput:
        """Create or replace a whole file, atomically, creating parent directories."""
        summary = f"write {path}"
        try:
            target = self._writable(path, "write")
            if target.is_dir():
                raise _Refused(
                    f"refused: write to {path!r}, which is a directory (write replaces files); "
                    "give a file path inside it"
                )
            data = self._check_size(content, "content")
            parent = self._open_parent(target, path, "write", create=True)
        except _Refused as exc:
            return ToolOutput(False, str(exc), summary)
        try:
            existed = _atomic_write_at(parent, target.name, data)
        finally:
            os.close(parent)
        lines = _line_count(content)
        verb = "replaced" if existed else "created"
        text = f"wrote {path}: {verb}, {lines} lines, {len(data)} bytes"
        return ToolOutput(True, text, f"write {path} ({lines} lines)")

    # --- paths ------------------------------------------------------------------------

    def _resolve(self, path: str, tool: str) -> Path:
        """The real path of `path` (relative to the working directory), contained in it."""
        if not path.strip() or "\0" in path:
            raise _Refused(
                f"refused: {tool} with path {path!r} (a path is a non-empty name without NUL); "
                "give a file path such as src/app.py"
            )
        target = Path(os.path.realpath(self.workdir / path))
        if not _inside(target, self.workdir):
            plain = os.path.normpath(self.workdir / path)
            via = f" (a link to {str(target)!r})" if str(target) != plain else ""
            raise _Refused(
                f"refused: {tool} of {path!r}{via} outside the working directory (file tools "
                f"stay inside it); use a path under {self.workdir}"
            )
        return target

    def _writable(self, path: str, tool: str) -> Path:
        target = self._resolve(path, tool)
        if _inside(target, self.horde_dir):
            raise _Refused(
                f"refused: {tool} of {path!r} inside .horde/ (the ledgers are written only through "
                "the horde tool); record it with the horde tool instead"
            )
        if ".git" in target.relative_to(self.workdir).parts:
            raise _Refused(
                f"refused: {tool} of {path!r} inside .git/ (git's internals are changed only by "
                "git); use git commands through bash"
            )
        return target

    def _open_parent(self, target: Path, path: str, tool: str, *, create: bool) -> int:
        """A descriptor of `target`'s directory, opened from the working directory one
        component at a time with O_NOFOLLOW (created when missing and `create`).

        `target` is already resolved and checked, so a symlink met on the way means a
        directory was swapped for one since the check: refused, never followed.
        """
        parts = target.parent.relative_to(self.workdir).parts
        fd = os.open(self.workdir, _DIR_FLAGS)
        try:
            for part in parts:
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Refused(
                    f"refused: {tool} of {path!r}: a directory on its path became a symlink "
                    "while the tool worked (file tools never follow one out of the working "
                    "directory); check the path with bash: ls -la, then try again"
                ) from None
            raise
        return fd

    @staticmethod
    def _text_of(data: bytes, path: str) -> str:
        if b"\0" not in data[:_BINARY_SAMPLE]:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        raise _Refused(
            f"refused: edit of {path!r}, which is not UTF-8 text (edit changes text files); "
            "change it with bash instead"
        )

    def _check_size(self, text: str, argument: str) -> bytes:
        data = text.encode("utf-8", "replace")
        if len(data) > self.write_max_bytes:
            raise _Refused(
                f"refused: {argument} of {len(data)} bytes is over the {self.write_max_bytes}-byte "
                "cap per call; write the file in parts (write, then edit to append) or generate it with bash"
            )
        return data


def _checked_args(tool: str, args: Mapping[str, Any] | str) -> dict[str, Any]:
    """The arguments as keyword arguments, checked against the tool's JSON schema.

    JSON numbers and numeric strings count as numbers (small models send "10"); a null
    optional argument counts as absent.
    """
    schema = _SCHEMAS[tool]
    props: dict[str, dict[str, Any]] = schema["properties"]
    expected = ", ".join(f"{k} ({p['type']})" for k, p in props.items())
    if isinstance(args, str):
        try:
            args = loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise _Refused(
                f"refused: {tool} arguments are not valid JSON ({exc.msg} at character {exc.pos}); "
                f"send a JSON object with {expected}"
            ) from None
    if not isinstance(args, Mapping):
        raise _Refused(f"refused: {tool} arguments must be a JSON object with {expected}")
    for key in args:
        if key not in props:
            raise _Refused(f"refused: {tool} has no argument {key!r}; its arguments are {expected}")
    checked: dict[str, Any] = {}
    for key, prop in props.items():
        value = args.get(key)
        if value is None:
            if key in schema["required"]:
                raise _Refused(
                    f"refused: {tool} is missing argument {key!r} ({prop['type']}); "
                    f"its arguments are {expected}"
                )
            continue
        checked[key] = _coerced(tool, key, value, prop["type"])
    return checked


def _coerced(tool: str, key: str, value: Any, kind: str) -> Any:
    if kind == "string" and isinstance(value, str):
        return value
    if kind in ("integer", "number") and not isinstance(value, bool):
        number: float | None = None
        if isinstance(value, int | float):
            number = value if math.isfinite(value) else None
        elif isinstance(value, str):
            try:
                number = float(value) if math.isfinite(float(value)) else None
            except ValueError:
                number = None
        if number is not None and kind == "number":
            return number
        if number is not None and float(number).is_integer():
            return int(number)
    raise _Refused(
        f"refused: {tool} argument {key!r} must be {_TYPE_NAMES[kind]}, got "
        f"{type(value).__name__} {json.dumps(value)[:40]}"
    )


def _bounded_lines(fh: BinaryIO, cap: int) -> Iterator[tuple[bytes, int]]:
    """(first `cap` bytes of a line, its full length) for each line, in bounded memory."""
    while chunk := fh.readline(cap):
        length = len(chunk)
        if not chunk.endswith(b"\n"):
            while rest := fh.readline(cap):
                length += len(rest)
                if rest.endswith(b"\n"):
                    break
        yield chunk, length


def _match_problem(path: str, count: int) -> str:
    if count == 0:
        return (
            f"refused: oldText not found in {path!r} (edit needs an exact match); read the "
            "file again and copy the text exactly, whitespace included, without line numbers"
        )
    return (
        f"refused: oldText matches {count} times in {path!r} (edit needs exactly one match); "
        "include more context so it matches once"
    )


def _walk(root: Path) -> Iterator[Path]:
    """The files under `root`, in name order, leaving out .git/ (links not followed)."""
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            yield Path(top) / name


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _read_at(parent: int, name: str, path: str) -> bytes:
    """The bytes of regular file `name` in directory `parent`, never through a symlink."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(
                f"refused: edit of {path!r}: it became a symlink while the tool worked (file "
                "tools never follow one out of the working directory); try again"
            ) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise _Refused(f"refused: edit of {path!r}, which is not a regular file")
        return fh.read()


def _atomic_write_at(parent: int, name: str, data: bytes) -> bool:
    """Write `name` in directory `parent` through a temp file and `os.replace`, so peers
    never read half a file and nothing is written through a symlink; True when it
    replaced an existing file.

    An existing file keeps its mode; a new one gets the umask's default (os.open applies it).
    """
    try:
        mode: int | None = stat.S_IMODE(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        mode = None
    temp = f".{name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=parent)
        raise
    return mode is not None
