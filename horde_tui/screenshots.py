"""`python -m horde_tui.screenshots`: refresh `screenshots/` from the snapshot tests.

The README's screenshots are the snapshot tests' own scenes (`tests/test_app_snapshots.py`:
the scripted run, frozen clock, no animation), so a screenshot can never show a screen
the tests do not check. This runs those tests at 120x36 (they must pass: an outdated
snapshot is reported, not copied) and copies each SVG to `screenshots/<scene>.svg`.

It needs a source checkout (the tests are not installed with the package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

SIZE = "120x36"
ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT_TESTS = ROOT / "tests" / "test_app_snapshots.py"
SNAPSHOTS = ROOT / "tests" / "snapshots" / "test_app_snapshots"
OUT = ROOT / "screenshots"


def scene_name(svg: Path) -> str | None:
    """`test_live_run_with_six_members[120x36].svg` -> `live-run-with-six-members`."""
    match = re.fullmatch(rf"test_(.+)\[{SIZE}\]\.svg", svg.name)
    return match.group(1).replace("_", "-") if match else None


def main(argv: list[str] | None = None) -> int:
    if not SNAPSHOT_TESTS.is_file():
        print(
            f"screenshots: {SNAPSHOT_TESTS} not found; run this from a source checkout",
            file=sys.stderr,
        )
        return 2
    check = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "ignore", str(SNAPSHOT_TESTS), "-k", SIZE],
        cwd=ROOT,
    )
    if check.returncode != 0:
        print(
            "screenshots: the snapshot tests failed; update them first "
            f"(pytest {SNAPSHOT_TESTS.relative_to(ROOT)} --snapshot-update, then review)",
            file=sys.stderr,
        )
        return 1
    OUT.mkdir(exist_ok=True)
    written = []
    for svg in sorted(SNAPSHOTS.glob(f"*[[]{SIZE}[]].svg")):
        name = scene_name(svg)
        if name:
            shutil.copyfile(svg, OUT / f"{name}.svg")
            written.append(name)
    stale = {p.stem for p in OUT.glob("*.svg")} - set(written)
    for name in stale:  # a scene whose test was removed
        (OUT / f"{name}.svg").unlink()
    print(f"screenshots: {len(written)} written to {OUT.relative_to(ROOT)}/: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
