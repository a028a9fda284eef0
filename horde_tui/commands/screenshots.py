"""`python -m horde_tui.commands.screenshots`: refresh `screenshots/` from the snapshot tests.

The README's screenshots are the snapshot tests' own scenes (`tests/app/test_app_snapshots*.py`:
the scripted run, frozen clock, no animation), so a screenshot can never show a screen
the tests do not check. This runs those tests (they must pass: an outdated snapshot is
reported, not copied) and copies each 120x36 SVG to `screenshots/<scene>.svg`: a scene
tested at several sizes is taken at `[120x36]`, one tested at one size (always 120x36
in these modules) as it is.

It needs a source checkout (the tests are not installed with the package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

SIZE = "120x36"
ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "test_app_snapshots",
    "test_app_snapshots_tabs",
    "test_app_snapshots_swarm",
    "test_app_snapshots_state",
)
SNAPSHOT_TESTS = [ROOT / "tests" / "app" / f"{module}.py" for module in MODULES]
SNAPSHOTS = [ROOT / "tests" / "app" / "snapshots" / module for module in MODULES]
OUT = ROOT / "screenshots"


def scene_name(svg: Path) -> str | None:
    """`test_live_run_with_six_members[120x36].svg` -> `live-run-with-six-members`;
    `test_board_tab.svg` -> `board-tab`; another size -> None."""
    match = re.fullmatch(rf"test_([^\[\]]+)(\[{SIZE}\])?\.svg", svg.name)
    return match.group(1).replace("_", "-") if match else None


def snapshot_svgs() -> list[Path]:
    """Every snapshot SVG of the app's snapshot modules."""
    return sorted(svg for folder in SNAPSHOTS for svg in folder.glob("*.svg"))


def main(argv: list[str] | None = None) -> int:
    missing = [str(path) for path in SNAPSHOT_TESTS if not path.is_file()]
    if missing:
        print(
            f"screenshots: {', '.join(missing)} not found; run this from a source checkout",
            file=sys.stderr,
        )
        return 2
    check = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "ignore", *map(str, SNAPSHOT_TESTS)],
        cwd=ROOT,
    )
    if check.returncode != 0:
        print(
            "screenshots: the snapshot tests failed; update them first "
            "(pytest tests/app/test_app_snapshots*.py --snapshot-update, then review)",
            file=sys.stderr,
        )
        return 1
    OUT.mkdir(exist_ok=True)
    written = []
    for svg in snapshot_svgs():
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
