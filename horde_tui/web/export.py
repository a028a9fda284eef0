"""`horde-tui export [RUN|SWARM|all] [--zip] [--out PATH]`: the pages as a static folder.

`horde-export-<id>/index.html` opens from disk: plain HTML and CSS, every link relative,
no script, no network. Pages are rendered and written one at a time (a zip entry
each with `--zip`), so a 200,000-event run never sits in memory whole. The folder is
built under a temporary name and renamed when complete, so an interrupted export
leaves no half folder under the real name; nothing under `.horde/` is written.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from horde_tui.store.runs import UnknownRun, existing_swarm, resolve_run, run_ids, swarm_ids
from horde_tui.web.pages import Site

WARNING = (
    "warning: an export holds transcripts, logs and tool output, which may carry secrets "
    "from this machine; values that look like provider keys and the gateway tokens are "
    "masked, but read it before you share it"
)

Progress = Callable[[int, int, str], None]


class ExportError(ValueError):
    """What cannot be exported, in one line."""


@dataclass(frozen=True)
class Scope:
    """What one export covers: a label for the folder name, and the runs and swarms."""

    label: str
    runs: tuple[str, ...] | None
    swarms: tuple[str, ...] | None


def resolve_scope(horde_dir: Path, target: str | None) -> Scope:
    """`all` (or nothing: every run and swarm), a run id, a swarm's horde run id, or a
    swarm id; `ExportError` naming what exists otherwise."""
    if not target or target == "all":
        if not run_ids(horde_dir) and not swarm_ids(horde_dir):
            raise ExportError(f"refused: {horde_dir} has no runs to export; start one first")
        return Scope("all", None, None)
    if existing_swarm(horde_dir, target) is not None:
        return Scope(target, (), (target,))
    resolve_run(horde_dir, target, swarms=True)  # UnknownRun: bad usage
    return Scope(target, (target,), ())


def export(
    horde_dir: Path,
    target: str | None = None,
    out: Path | None = None,
    *,
    as_zip: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Write the export; return its folder (or zip). `out` is the folder to put it in
    (default: the current directory)."""
    horde_dir = Path(horde_dir)
    scope = resolve_scope(horde_dir, target)
    parent = Path(out) if out is not None else Path.cwd()
    parent.mkdir(parents=True, exist_ok=True)
    name = f"horde-export-{scope.label}"
    final = parent / (name + ".zip" if as_zip else name)
    temp = parent / f".{final.name}.{os.getpid()}.tmp"
    site = Site(horde_dir, scope.runs, scope.swarms)
    try:
        paths = list(site.paths())  # names only: the pages are rendered one at a time
        if as_zip:
            with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
                for n, path in enumerate(paths, 1):
                    archive.writestr(f"{name}/{path}", _page_bytes(site, path))
                    if progress:
                        progress(n, len(paths), path)
        else:
            for n, path in enumerate(paths, 1):
                dest = temp / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(_page_bytes(site, path))
                if progress:
                    progress(n, len(paths), path)
        if final.is_dir():
            shutil.rmtree(final)
        elif final.exists():
            final.unlink()
        os.replace(temp, final)
    finally:
        site.close()
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)
        elif temp.exists():
            temp.unlink()
    return final


def _page_bytes(site: Site, path: str) -> bytes:
    page = site.render(path)
    text = site.mask(page.text) if page.text is not None else site.html(page)
    return text.encode("utf-8")


class Bar:
    """A one-line progress bar on a terminal; a line every few seconds otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int, path: str) -> None:
        now = time.monotonic()
        if done < total and now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        filled = int(30 * done / max(1, total))
        line = f"[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} pages"
        write = self.stream.write
        if self.tty:
            write(f"\r{line}\x1b[K" + ("\n" if done >= total else ""))
        else:
            write(line + "\n")


def cmd_export(horde_dir: Path, target: str | None, out: Path | None, as_zip: bool) -> int:
    """The command: warn once, export with a progress bar, say where."""
    try:
        resolve_scope(horde_dir, target)
    except ExportError as exc:
        print(f"horde-tui export: {exc}", file=sys.stderr)
        return 1
    print(WARNING, file=sys.stderr)
    try:
        where = export(horde_dir, target, out, as_zip=as_zip, progress=Bar())
    except ExportError as exc:
        print(f"horde-tui export: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nhorde-tui export: interrupted; the partial export was removed", file=sys.stderr)
        return 130
    except OSError as exc:
        print(
            f"horde-tui export: cannot write {exc.filename or out}: {exc.strerror or exc}; "
            "pick a writable folder with --out",
            file=sys.stderr,
        )
        return 1
    shown = where / "index.html" if where.is_dir() else where
    print(f"exported to {shown}")
    return 0


def export_run(run_dir: Path, out: Path | None = None) -> str:
    """Export one run (the app's `E`), blocking: what to tell the person, one line."""
    run_dir = Path(run_dir)
    try:
        where = export(_project_horde(run_dir), run_dir.name, out)
    except (ExportError, UnknownRun, OSError) as exc:
        return f"export of run {run_dir.name} failed: {exc}"
    return f"exported run {run_dir.name} to {where / 'index.html'} · {WARNING.removeprefix('warning: ')}"


def _project_horde(run_dir: Path) -> Path:
    """The project's `.horde/` of a run: `<horde>/runs/<id>`, or for a swarm's horde
    run `<horde>/swarms/<sid>/hN/runs/<id>`."""
    horde = run_dir.parent.parent
    if horde.parent.parent.name == "swarms":
        return horde.parent.parent.parent
    return horde
