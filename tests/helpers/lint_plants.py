"""Run import-linter once per planted import, in one process, on a scratch copy.

    cd COPY && python lint_plants.py < plants.json > results.json

COPY holds a copy of `horde_tui/` and pyproject.toml. `plants.json` is a list of
`[file, text]` (`file` relative to COPY, "" for no plant); each text is appended to its
file (made, with its folder, when there is none), `lint_imports` (what `lint-imports`
runs) checks every contract with no cache, and the copy is put back. Results, in order: `[exit status, printed report]`. One process for
all because starting `lint-imports` costs four times what checking the contracts does.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

from importlinter.cli import lint_imports


def lint_with(path: Path | None, text: str) -> tuple[int, str]:
    made = path is not None and not path.parent.exists()
    original = path.read_text() if path and path.exists() else None
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((original or "") + text)
    report = io.StringIO()
    try:
        with contextlib.redirect_stdout(report):
            status = lint_imports(no_cache=True, no_logo=True)
    finally:
        if path and original is not None:
            path.write_text(original)
        elif path:
            path.unlink()
            if made:
                shutil.rmtree(path.parent)
    return status, report.getvalue()


def main() -> None:
    plants = json.load(sys.stdin)
    results = [lint_with(Path(file) if file else None, text) for file, text in plants]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
