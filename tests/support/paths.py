"""Where things are, for tests in any folder under `tests/`: the suite's root, the
repository, the helper scripts and the benchmarks."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
HELPERS = TESTS / "helpers"
BENCHMARKS = TESTS / "benchmarks"
