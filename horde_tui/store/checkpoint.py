"""A checkpoint of the folded ledger, so a fresh process need not fold it all again.

Every `horde-tui tool` call is a fresh process, and folding 10,000 entries takes about a
second. `.horde/.ledger.checkpoint` holds the whole pickled `LedgerState` (whatever fields
it has) with the position in `ledger.jsonl` it was folded up to; a fresh store loads it
and folds only the lines appended since.

It is a cache, never trusted over the ledger. It is used only if it was written by this
very code (a hash of the store package's source, and the Python version) in this format,
for this ledger file (device and inode), and the ledger still holds the bytes it was
folded from: the file reaches the offset, and a hash of its first 4 KB and of the 64 KB
before the offset matches. The payload carries a CRC. On any mismatch, or any error while
unpickling, it is ignored and the ledger folded from scratch. (The ledger is append-only;
a hand edit in its middle that keeps the file, and both hashed regions, is what goes
unseen.) It is a pickle: whoever can write `.horde/` can make the processes that load it
run code. `.horde/` is the horde's own directory, which the members' file tools refuse to
write into (`HordePaths.top`).

It is written atomically (a temp file renamed over it) by one process at a time (an
`flock` on the temp file; a second writer skips), outside `.horde/.lock`, after a write
whose fold has grown `EVERY_LINES` past the newest checkpoint.
"""

from __future__ import annotations

import copyreg
import fcntl
import functools
import gc
import hashlib
import io
import json
import os
import pickle
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horde_tui.store.jsonl import CorruptLine, JsonlTail
from horde_tui.store.paths import HordePaths, write_file
from horde_tui.store.projection import EntrySource
from horde_tui.store.state import ENTRIES, LedgerState

FORMAT = 1
MAGIC = b"horde-ledger-checkpoint"
EVERY_LINES = 500
"""Save a new checkpoint once the fold is this many ledger lines past the newest one: a
cold process folds at most about this many (tens of ms), and the save (a few hundred ms
at 10,000 entries, outside the lock) happens once per this many lines."""
_HEAD = 4096
_TAIL = 65536


@dataclass
class Checkpoint:
    """A loaded, validated checkpoint."""

    state: LedgerState
    offset: int
    line_count: int
    corrupt: list[CorruptLine]
    ledger_file: tuple[int, int]
    """(device, inode) of the ledger it was folded from."""
    projected: bool
    """The saver had checked the projections against its fold (see `HordeStore`), so
    every ledger line before `offset` is in them or left to render (`.projected` is
    behind it). Only believed in the same boot: a power loss can undo a projection's
    rename (it is not fsynced with its directory), never the fsynced ledger."""


def boot_id() -> str:
    """This boot of the machine (Linux), or '' where unknown."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@functools.cache
def code_fingerprint() -> str:
    """Hash of the store package's source and the Python version: a pickle of another
    version of `LedgerState`, or of a fold that another version computed, is not used."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]}".encode())
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _mark(fd: int, offset: int) -> str:
    """Hash of the ledger's first 4 KB and of the 64 KB before `offset`."""
    head = os.pread(fd, min(_HEAD, offset), 0)
    start = max(0, offset - _TAIL)
    tail = os.pread(fd, offset - start, start)
    return hashlib.sha256(head + b"\0" + tail).hexdigest()


def _entry_source(kind: str) -> EntrySource:
    return ENTRIES[kind]


def _reduce_entry_source(source: EntrySource) -> tuple[Any, tuple[str]]:
    """Entry sources hold render functions (lambdas): pickle them by their kind."""
    for kind, known in ENTRIES.items():
        if known is source:
            return _entry_source, (kind,)
    raise pickle.PicklingError("an entry source that is not in state.ENTRIES")


def _dumps(obj: object) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, EntrySource: _reduce_entry_source}
    pickler.dump(obj)
    return buf.getvalue()


def _loads(payload: memoryview) -> Any:
    """Unpickle with the cyclic GC off: it would walk the growing heap again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(payload)
    finally:
        if enabled:
            gc.enable()


def _header(data: bytes) -> dict[str, Any] | None:
    """The header of a checkpoint of this code and format, or None."""
    magic, _, rest = data.partition(b"\n")
    if magic != MAGIC:
        return None
    header = json.loads(rest.partition(b"\n")[0])
    if not isinstance(header, dict):
        return None
    if header.get("format") != FORMAT or header.get("code") != code_fingerprint():
        return None
    return header


def _same_ledger(header: dict[str, Any], fd: int) -> bool:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (header["dev"], header["ino"]) and st.st_size >= int(
        header["offset"]
    )


def saved_lines(paths: HordePaths) -> int:
    """Ledger lines the checkpoint on disk covers (0 if none, or not for this ledger);
    reads only its header."""
    try:
        with open(paths.checkpoint, "rb") as fh:
            header = _header(fh.read(_HEAD))
        if header is None:
            return 0
        with open(paths.ledger, "rb") as fh:
            return int(header["lines"]) if _same_ledger(header, fh.fileno()) else 0
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def load(paths: HordePaths) -> Checkpoint | None:
    """The checkpoint of this ledger, validated (see the module docstring), or None."""
    try:
        data = paths.checkpoint.read_bytes()
    except OSError:
        return None
    try:
        header = _header(data)
        if header is None:
            return None
        payload = memoryview(data)[data.index(b"\n", len(MAGIC) + 1) + 1 :]  # not a copy
        if len(payload) != header["size"] or zlib.crc32(payload) != header["crc"]:
            return None
        offset = int(header["offset"])
        with open(paths.ledger, "rb") as fh:
            if (
                not _same_ledger(header, fh.fileno())
                or _mark(fh.fileno(), offset) != header["mark"]
            ):
                return None
        state, corrupt = _loads(payload)
        if not isinstance(state, LedgerState) or not isinstance(corrupt, list):
            return None
        if not all(isinstance(c, CorruptLine) for c in corrupt):
            return None
        vouched = header["projected"] is True and header.get("boot") == boot_id()
        ledger_file = (int(header["dev"]), int(header["ino"]))
        return Checkpoint(state, offset, int(header["lines"]), corrupt, ledger_file, vouched)
    except Exception:  # anything wrong with a cache means: fold the ledger instead
        return None


def ledger_file(paths: HordePaths) -> tuple[int, int] | None:
    """(device, inode) of the ledger now, or None if there is none."""
    try:
        st = os.stat(paths.ledger)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def save(
    paths: HordePaths,
    state: LedgerState,
    tail: JsonlTail,
    *,
    folded_from: tuple[int, int] | None,
    projected: bool,
) -> bool:
    """Save `state`, folded up to `tail` from the ledger file `folded_from` (device,
    inode), as the checkpoint; False if another process is saving one now, the ledger is
    no longer that file, or it could not be written (a checkpoint never fails a write)."""
    if tail.offset <= 0 or folded_from is None:
        return False
    tmp = paths.checkpoint.with_name(paths.checkpoint.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # another process is saving one
        if os.fstat(fd).st_ino != os.stat(tmp).st_ino:
            return False  # renamed into place by the saver before us: not ours to write
        try:
            with open(paths.ledger, "rb") as fh:
                st = os.fstat(fh.fileno())
                if (st.st_dev, st.st_ino) != folded_from or st.st_size < tail.offset:
                    return False
                mark = _mark(fh.fileno(), tail.offset)
            payload = _dumps((state, tail.corrupt))
            header = {
                "format": FORMAT,
                "code": code_fingerprint(),
                "dev": st.st_dev,
                "ino": st.st_ino,
                "offset": tail.offset,
                "lines": tail.line_count,
                "mark": mark,
                "size": len(payload),
                "crc": zlib.crc32(payload),
                "projected": projected,
                "boot": boot_id(),
            }
            head = MAGIC + b"\n" + json.dumps(header).encode() + b"\n"
            write_file(tmp, head + payload, os.O_TRUNC)
            os.replace(tmp, paths.checkpoint)
            return True
        except Exception:  # unpicklable state, full disk: no checkpoint this time
            tmp.unlink(missing_ok=True)
            return False
    except OSError:
        return False
    finally:
        os.close(fd)
