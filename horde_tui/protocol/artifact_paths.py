"""Where an `artifact` file comes from and the name it is published under.

Decision (the reference leaves it open): `path` is resolved against the working
directory, symlinks included, and

- a file already inside this run's `.horde/runs/<run>/artifacts/` is published in place,
  under its path relative to that folder;
- any other file inside the working directory (outside `.horde/`) is copied into that
  folder under its path relative to the working directory, minus a leading
  `artifacts/` (members write files in the working directory; `.horde/` is written only
  through the tool);
- `artifacts/<name>` that is not a working-directory file names the run's published
  `<name>` (republishing what is already there);
- anything outside the working directory, or elsewhere under `.horde/`, is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from horde_tui.store.paths import HordePaths
from horde_tui.store.store import ActionRefused

MAX_ARTIFACT_BYTES = 50 * 1024 * 1024
"""Largest file `artifact` copies: artifacts are harnesses and documents, not datasets."""


@dataclass(frozen=True)
class ArtifactSource:
    source: Path
    """The resolved file whose bytes are published."""
    name: str
    """Its path under the run's `artifacts/` folder (the artifact's name)."""
    in_place: bool
    """Already inside the run's `artifacts/` folder: no copy is needed."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def artifact_source(paths: HordePaths, run: str, raw: str) -> ArtifactSource:
    """Resolve `raw` (see the module docstring) or refuse naming the rule."""
    workdir = Path(os.path.realpath(paths.workdir))
    horde = Path(os.path.realpath(paths.root))
    folder = HordePaths(horde).artifacts(run)
    candidate = Path(os.path.expanduser(raw.strip()))
    resolved = Path(os.path.realpath(candidate if candidate.is_absolute() else workdir / candidate))
    if not _inside(resolved, workdir):
        raise ActionRefused(
            f"refused: artifact path {raw!r} is outside the working directory {workdir} "
            "(artifact rule: path containment); publish a file inside it"
        )
    if _inside(resolved, folder):
        source = ArtifactSource(resolved, resolved.relative_to(folder).as_posix(), True)
    elif _inside(resolved, horde):
        raise ActionRefused(
            f"refused: artifact path {raw!r} is inside .horde/ but not under this run's "
            "artifacts/ (artifact rule: only working-directory files are published); publish "
            "the file from the working directory"
        )
    elif not resolved.exists() and Path(raw.strip()).parts[:1] == ("artifacts",):
        published = Path(os.path.realpath(folder / Path(*Path(raw.strip()).parts[1:])))
        if not _inside(published, folder):
            raise ActionRefused(
                f"refused: artifact path {raw!r} leaves the artifacts folder (artifact rule: "
                "path containment); name a file inside it"
            )
        source = ArtifactSource(published, published.relative_to(folder).as_posix(), True)
    else:
        rel = resolved.relative_to(workdir)
        if rel.parts[:1] == ("artifacts",) and len(rel.parts) > 1:
            rel = Path(*rel.parts[1:])
        source = ArtifactSource(resolved, rel.as_posix(), False)
    return _checked(source, raw)


def _checked(source: ArtifactSource, raw: str) -> ArtifactSource:
    if not source.source.is_file() or source.name in ("", "."):
        raise ActionRefused(
            f"refused: no file at {raw!r} (artifact rule: an artifact is one existing file); "
            "write the file first, then publish its path"
        )
    size = source.source.stat().st_size
    if size > MAX_ARTIFACT_BYTES:
        raise ActionRefused(
            f"refused: {raw!r} is {size} bytes, over the artifact cap of {MAX_ARTIFACT_BYTES} "
            "(size cap); publish the harness that produces it, and register large data as a "
            "`resource`"
        )
    return source
