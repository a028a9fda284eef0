"""Pages show files of the horde directory only: a file whose real path leaves it (a
symlink planted by a member's command, `REPORT.md -> /etc/passwd`) is refused, and its
page says so in one line instead of showing it, served or exported alike."""

from __future__ import annotations

from pathlib import Path


class Outside(Exception):
    """A file that resolves outside the horde directory; the message is the page's line."""


def confined(root: Path, path: Path) -> Path:
    """`path`'s real path, to open instead of `path` (a link swapped after this check is
    not followed again), or `Outside` when that real path leaves `root`."""
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        try:
            shown = path.relative_to(root)
        except ValueError:
            shown = Path(path.name)
        raise Outside(
            f"refused: {shown} leads outside the horde directory (a symlink), so it is "
            "not shown; replace the link with the file itself to see it here"
        )
    return real
