"""Run import-linter once per planted import, in one process, on a scratch copy.

    cd COPY && python lint_plants.py < plants.json > results.json

COPY holds a copy of `horde_tui/` and pyproject.toml. `plants.json` is a list of
`[file, text]` (`file` relative to COPY, "" for no plant); each text is appended to its
file, `lint_imports` (what `lint-imports` runs) checks every contract with no cache, and
the file is put back. Results, in order: `[exit status, printed report]`. One process for
all because starting `lint-imports` costs four times what checking the contracts does.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from importlinter.cli import lint_imports


def lint_with(path: Path | None, text: str) -> tuple[int, str]:
    original = path.read_text() if path else ""
    if path:
        path.write_text(original + text)
    report = io.StringIO()
    try:
        with contextlib.redirect_stdout(report):
            status = lint_imports(no_cache=True, no_logo=True)
    finally:
        if path:
            path.write_text(original)
    return status, report.getvalue()


def main() -> None:
    plants = json.load(sys.stdin)
    results = [lint_with(Path(file) if file else None, text) for file, text in plants]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
