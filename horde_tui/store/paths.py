"""Where everything lives under `.horde/`.

One object names every path so no module builds `.horde/...` strings by hand, and a
swarm's horde directory (`swarms/<id>/hN/`) is just another `HordePaths`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

LEDGER_FILES: dict[str, str] = {
    "ideas": "IDEAS.md",
    "board": "BOARD.md",
    "findings": "FINDINGS.md",
    "facts": "FACTS.md",
    "claims": "CLAIMS.md",
    "resources": "RESOURCES.md",
    "concerns": "CONCERNS.md",
}
"""Ledger kind -> markdown projection file name."""

GITIGNORE_TEXT = "runs/\nswarms/\n"

MANUAL_RUN = "manual"
"""The run `horde-tui tool` writes in when `HORDE_RUN` is not set."""

_HORDE_NAME = re.compile(r"^h[1-4]$")
"""A swarm's horde directory name (`swarms/<id>/h2`)."""
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def valid_run_id(run_id: str) -> bool:
    """Run ids become directory names, so they must not contain separators or dots-only."""
    return bool(_RUN_ID.match(run_id)) and run_id not in {".", ".."}


ACTOR_NAME_CAP = 64
_ACTOR_NAME = re.compile(rf"[a-z][a-z0-9._-]{{0,{ACTOR_NAME_CAP - 1}}}")
ACTOR_NAME_RULE = (
    f"a lower-case letter, then up to {ACTOR_NAME_CAP - 1} lower-case letters, digits, "
    "'.', '_' or '-'"
)
"""The names rule as a refusal states it; `member-3`, `parent`, `user`, `ext-1` pass."""


def shown(value: str, cap: int = 80) -> str:
    """`value` quoted for a refusal, cut after `cap` characters with its length said: a
    name or run id from the environment can be any size (100 KB came back whole)."""
    if len(value) <= cap:
        return repr(value)
    return f"{value[:cap]!r}... ({len(value)} characters)"


def valid_actor_name(name: str) -> bool:
    """Actor names land in every record, in session directory names and in the ledgers'
    markdown, so they are one plain token: no separators, spaces, capitals or controls."""
    return _ACTOR_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class HordePaths:
    """Paths of one horde directory (normally `<workdir>/.horde`)."""

    root: Path
    # Every write asks for these paths a dozen times; pathlib builds each anew (the
    # fixed ones are `cached_property`).
    _run_dirs: dict[str, Path] = field(default_factory=dict, init=False, compare=False, repr=False)
    _events: dict[str, Path] = field(default_factory=dict, init=False, compare=False, repr=False)
    _tasks: dict[str, Path] = field(default_factory=dict, init=False, compare=False, repr=False)

    @functools.cached_property
    def workdir(self) -> Path:
        """The directory under study: the parent of `.horde/`, also for a swarm's horde
        (`<workdir>/.horde/swarms/<id>/hN`), whose members work in the same directory."""
        return self.top.parent

    @functools.cached_property
    def top(self) -> Path:
        """The `.horde/` this horde lives in: its own root, or for a swarm's horde the
        project's `.horde/` that holds `swarms/` (file tools must not write anywhere in it)."""
        swarms = self.root.parent.parent
        in_swarm = swarms.name == "swarms" and _HORDE_NAME.match(self.root.name) is not None
        return swarms.parent if in_swarm else self.root

    @functools.cached_property
    def ledger(self) -> Path:
        return self.root / "ledger.jsonl"

    @functools.cached_property
    def lock(self) -> Path:
        return self.root / ".lock"

    @functools.cached_property
    def lock_holder(self) -> Path:
        """Who holds the lock now (pid, actor, since), so a timeout can name the holder."""
        return self.root / ".lock.holder"

    @functools.cached_property
    def projection_lock(self) -> Path:
        """Held while a writer brings the markdown projections up to date (after it has
        released `.lock`): writers render one at a time, never under the write lock."""
        return self.root / ".projecting.lock"

    @functools.cached_property
    def projected(self) -> Path:
        """The ledger seq each projection was last rendered at (`store.ProjectedMarks`)."""
        return self.root / ".projected"

    @functools.cached_property
    def checkpoint(self) -> Path:
        """The folded ledger up to some line, so a fresh process need not fold it all."""
        return self.root / ".ledger.checkpoint"

    @functools.cached_property
    def runs(self) -> Path:
        return self.root / "runs"

    @functools.cached_property
    def swarms(self) -> Path:
        return self.root / "swarms"

    def projection(self, kind: str) -> Path:
        return self.root / LEDGER_FILES[kind]

    def run_dir(self, run_id: str) -> Path:
        known = self._run_dirs.get(run_id)
        if known is not None:
            return known
        if not valid_run_id(run_id):
            raise ValueError(
                f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-' (max 80)"
            )
        made = self._run_dirs[run_id] = self.runs / run_id
        return made

    def events(self, run_id: str) -> Path:
        known = self._events.get(run_id)
        if known is None:
            known = self._events[run_id] = self.run_dir(run_id) / "events.jsonl"
        return known

    def task(self, run_id: str) -> Path:
        """The run's TASK.md, whose presence says the run exists (asked on every write)."""
        known = self._tasks.get(run_id)
        if known is None:
            known = self._tasks[run_id] = self.run_dir(run_id) / "TASK.md"
        return known

    def artifacts(self, run_id: str) -> Path:
        """Published artifacts of a run, by name (`artifact` writes them)."""
        return self.run_dir(run_id) / "artifacts"

    def revisions(self, run_id: str) -> Path:
        """Content-addressed copies of every published artifact revision (`<sha256>`)."""
        return self.run_dir(run_id) / "revisions"

    def stop_clean_sentinel(self, run_id: str) -> Path:
        return self.run_dir(run_id) / ".stop-clean"

    def notices(self, run_id: str) -> Path:
        """The supervisor's notices to members (`store.notices`); only it writes there."""
        return self.run_dir(run_id) / "notices.jsonl"

    def ensure(self) -> None:
        """Create `.horde/`, `runs/` and the `.gitignore` if missing (idempotent).

        Every write calls this: a `stat` first, because `mkdir` of a directory that
        exists still takes its parent's inode lock for writing, and twelve writers
        queued on it behind each other's renames in `.horde/` (a wall-clock profile of
        `bench_store.py`'s 12-writer case).
        """
        if not self.runs.is_dir():
            self.runs.mkdir(parents=True, exist_ok=True)
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            atomic_write_text(gitignore, GITIGNORE_TEXT)


def sha256_file(path: Path) -> str | None:
    """The file's sha256 (hex), or None when it cannot be read: what MANIFEST.json pins
    and what an eval records of the files it scored."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def default_horde_dir() -> Path:
    """`$HORDE_DIR`, else `./.horde`."""
    env = os.environ.get("HORDE_DIR")
    return Path(env) if env else Path.cwd() / ".horde"


def unwritable(folder: Path) -> tuple[str, str] | None:
    """Why nothing can be written in `folder` (or, before it exists, in the folder it
    would be made in), and what to do: (what, fix); None when a new file can be made
    there. A probe file, not permission bits: root writes through those, but not
    through a read-only mount or an immutable folder. The one check of `run`, `plan`,
    the launch form, `init`, `mcp` and `doctor`, made before anything is printed or
    started."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder", "move it aside"
    where = folder if folder.is_dir() else folder.parent
    try:
        fd, probe = tempfile.mkstemp(dir=where, prefix=".horde-probe-")
    except OSError as exc:
        return (
            f"cannot write in {where} ({exc.strerror or exc})",
            "run from a folder you can write, or fix its permissions",
        )
    os.close(fd)
    os.unlink(probe)
    return None


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    """Write `text` to `path` so readers see the old or the new file, never a mix.

    See `atomic_write_bytes` for the temp file, the clean-up and what `fsync` covers.
    """
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write `data` through a temp file in the same directory and `os.replace` it.

    The temp name carries the pid and a random part, so two threads (or a reused pid)
    never share one; it matches `.NAME.*.tmp`, the pattern the store clears after a
    writer died. Any error removes the temp file. With `fsync`, the file is synced
    before the rename and the directory after it, so the new name survives a power
    loss; `fsync=False` (projections that can be rebuilt from the ledger) skips both.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        write_file(tmp, data, os.O_TRUNC, fsync=fsync)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Sync a directory's entries (a rename or a new file in it) to disk."""
    _fsync(directory, os.O_RDONLY | os.O_DIRECTORY)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_or_create(path: Path | str, flags: int, mode: int = 0o644) -> int:
    """`os.open(path, flags | O_CREAT)`, creating the file only when it is missing.

    `O_CREAT` takes the directory's lock for writing even when the file exists, and
    every write opens its lock files, marks and logs: twelve writers queued on
    `.horde/`'s lock behind each other's renames. An open of an existing file takes no
    such lock.
    """
    try:
        return os.open(path, flags & ~os.O_CREAT)
    except FileNotFoundError:
        return os.open(path, flags | os.O_CREAT, mode)


def write_file(path: Path, data: bytes, mode_flag: int, *, fsync: bool = True) -> None:
    """Write all of `data` (`os.O_TRUNC` or `os.O_APPEND`), then fsync if asked.

    One loop of `os.write` calls on one descriptor: a short write is continued, never
    mistaken for the whole.
    """
    if mode_flag & os.O_APPEND:  # a log that is there after its first write
        fd = open_or_create(path, os.O_WRONLY | mode_flag)
    else:  # a new temp file (`atomic_write_bytes`), or one being replaced whole
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode_flag, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
