"""Hold `.horde/.lock` until stdin closes: a live process that another writer must wait for.

    python lock_holder.py HORDE_DIR ACTOR

Takes the lock through `HordeLock` (an `flock` plus the `.lock.holder` note), prints
`locked` on stdout, then blocks reading stdin; the test closes stdin to release.
"""

from __future__ import annotations

import sys
from pathlib import Path

from horde_tui.store.lock import HordeLock
from horde_tui.store.paths import HordePaths


def main() -> int:
    paths = HordePaths(Path(sys.argv[1]))
    paths.ensure()
    with HordeLock(paths, sys.argv[2]).held(timeout=30):
        print("locked", flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
