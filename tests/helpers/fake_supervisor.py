"""A stand-in supervisor for the identity tests: a real process that starts one real member
process (`sh SCRIPT`, with the environment a supervisor gives a member) and records both
the way `Supervisor` does, then stays live until its stdin closes.

    python fake_supervisor.py HORDE_DIR RUN SCRIPT MEMBER [OTHER_MEMBER ...]

The member's script starts with `read go`: it runs only once the record names it. This
process prints `member-exit CODE` when the script ends, then waits on its stdin, so a test
can act from outside while the run is still live.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from horde_tui.store.identity import proc_of, record_processes


def main() -> int:
    horde_dir, run, script, member, *others = sys.argv[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_DIR=horde_dir, HORDE_RUN=run, HORDE_MEMBER=member, HORDE_NAME=member)
    proc = subprocess.Popen(["sh", script], env=env, stdin=subprocess.PIPE, text=True)
    record_processes(
        Path(horde_dir) / "runs" / run, {member: proc_of(proc.pid), **dict.fromkeys(others)}
    )
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.close()
    print(f"member-exit {proc.wait()}", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
