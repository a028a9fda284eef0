"""`.horde/.projected`: the ledger seq each markdown projection was last rendered at.

Writers render projections after releasing the write lock, one at a time under
`.projecting.lock`, each from its own fold. A fold at seq N renders the same text in any
process, so a projection marked N or later already shows every record up to N: a writer
renders only the projections whose mark is older than the last change its fold knows of
(`LedgerState.last_change`). A writer that lost the race to a later one has nothing left
to do, and one that died before rendering is covered by the next writer, which finds the
marks behind.

The file is read and written only under `.projecting.lock`. It is overwritten in place,
padded to a fixed width (truncating it would make ext4 flush it on close). A missing or
unreadable file counts as "never rendered": the next writer renders everything, once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from horde_tui.store.paths import open_or_create

WIDTH = 1024
"""Bytes of the file: every version is padded to this, so a shorter one overwrites a
longer one whole (a few dozen kinds of short names and numbers fit many times over)."""


def read_marks(path: Path) -> dict[str, int]:
    """Kind -> seq; empty when the file is missing or unreadable."""
    try:
        raw = json.loads(path.read_bytes().strip() or b"{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int)}


def write_marks(path: Path, marks: dict[str, int]) -> None:
    """Overwrite the marks in place (raises `OSError`; the caller reports it)."""
    data = json.dumps(marks, sort_keys=True, separators=(",", ":")).encode()
    if len(data) >= WIDTH:
        raise OSError(f"{path.name}: {len(data)} bytes of marks exceed {WIDTH}")
    fd = open_or_create(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data.ljust(WIDTH - 1) + b"\n", 0)
    finally:
        os.close(fd)
