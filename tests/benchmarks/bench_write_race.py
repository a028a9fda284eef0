"""Benchmark: `write` while another process swaps a directory of its path for a symlink.

    python tests/benchmarks/bench_write_race.py [--seconds 10]

A racer process renames `work/sub` away, puts a symlink to `outside/` in its place and
back, in a loop, while this process calls the member's `write` tool on `sub/wN.txt` (a
new name each time) as fast as it can. Reported: writes made, writes refused or failed
(the race seen and stopped), and files that landed in `outside/` (must be 0). Issue 12:
with the check and the open as two steps, about 1 write in 3,000 escaped.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from horde_tui.member.tools import WorkspaceTools

RACER = """\
import os, sys
work, outside = sys.argv[1:]
sub, moved = os.path.join(work, "sub"), os.path.join(work, "sub.real")
while True:
    try:
        os.rename(sub, moved); os.symlink(outside, sub)
        os.unlink(sub); os.rename(moved, sub)
    except OSError:
        pass
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work, outside = Path(tmp, "work"), Path(tmp, "outside")
        (work / "sub").mkdir(parents=True)
        outside.mkdir()
        tools = WorkspaceTools(work)
        racer = subprocess.Popen([sys.executable, "-c", RACER, str(work), str(outside)])
        writes = failed = 0
        deadline = time.monotonic() + args.seconds
        try:
            while time.monotonic() < deadline:
                result = tools.dispatch("write", {"path": f"sub/w{writes}.txt", "content": "x\n"})
                writes += 1
                failed += not result.ok
        finally:
            racer.kill()
            racer.wait()
        escaped = len(os.listdir(outside))
    print(f"writes {writes}, refused or failed {failed}, landed outside {escaped}")
    return 1 if escaped else 0


if __name__ == "__main__":
    raise SystemExit(main())
