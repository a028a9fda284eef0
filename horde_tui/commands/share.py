"""`horde-tui share RUN|last [--out FILE]`: the thin entry; the document is `store/share.py`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from horde_tui.store.paths import atomic_write_text, default_horde_dir
from horde_tui.store.runs import ENDED, resolve_run


def _run_dir(horde_dir: Path, run: str) -> Path:
    """The run `run` names; `last`: the newest run that has ended, finished or interrupted."""
    return resolve_run(horde_dir, run, last=ENDED)


def cmd_share(args: argparse.Namespace) -> int:
    from horde_tui.store.share import share_document

    out = Path(args.out) if args.out else None
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        where = "is a directory" if out.is_dir() else "is in no existing directory"
        print(
            f"horde-tui share: refused: --out {out} {where}; name a file in an existing folder",
            file=sys.stderr,
        )
        return 2
    text = share_document(_run_dir(default_horde_dir(), args.run))
    if out is None:
        sys.stdout.write(text)
        return 0
    atomic_write_text(out, text)
    print(f"shared post-mortem: {out}")
    return 0


def add_share_command(sub: Any) -> None:
    p = sub.add_parser(
        "share",
        help="write a run's post-mortem as markdown for an issue, secrets and paths masked",
        description="One markdown file to paste into an issue: the task, the members' ideas, "
        "POSTMORTEM.md and REPORT.md, with absolute paths, user and host names, key-like "
        "values and the run's tokens masked, and a list of what was masked.",
    )
    p.add_argument("run", help="a run id, or `last` (the newest run that has ended)")
    p.add_argument("--out", metavar="FILE", help="write it there (default: standard output)")
    p.set_defaults(func=cmd_share)
