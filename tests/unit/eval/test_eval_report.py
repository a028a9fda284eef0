"""EVAL.json, EVAL.md and eval.svg from hand-made run results: spreads over repeats, and
the three outputs printing the same numbers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from horde_tui.eval.report import aggregate, eval_json, write_outputs

SVG = "{http://www.w3.org/2000/svg}"


def run(config: str, repeat: int, recall: float, cost: float | None, found: int) -> dict[str, Any]:
    return {
        "task": "t1",
        "config": config,
        "repeat": repeat,
        "recall": recall,
        "precision": 1.0,
        "accepted_recall": 0.0,
        "duplicates": 0,
        "refusals": 0,
        "tokens": 1000,
        "cost_usd": cost,
        "wall_s": 10.0,
        "usd_per_true": None if cost is None or not found else cost / found,
        "run_id": f"r-{config}-{repeat}",
    }


RUNS = [
    run("single", 1, 0.5, 0.10, 1),
    run("single", 2, 1.0, 0.30, 2),
    run("horde:4", 1, 1.0, 0.80, 2),
    run("horde:4", 2, 1.0, None, 2),  # a price the provider did not give
]


def test_spread_over_repeats_leaves_unknown_values_out_and_counts_the_rest() -> None:
    summary = aggregate(RUNS, ["single", "horde:4"])["summary"]
    recall = summary["single"]["recall"]
    assert (recall["mean"], recall["low"], recall["high"], recall["n"]) == (0.75, 0.5, 1.0, 2)
    assert recall["sd"] == pytest.approx(0.353553, rel=1e-4)
    per_true = summary["single"]["usd_per_true"]
    assert per_true["mean"] == pytest.approx((0.10 + 0.15) / 2)
    assert summary["horde:4"]["cost_usd"]["n"] == 1  # the unpriced run is not a $0 run
    assert summary["horde:4"]["usd_per_true"]["mean"] == pytest.approx(0.40)


def test_the_three_outputs_print_the_same_numbers(tmp_path: Path) -> None:
    meta = {
        "model": "m",
        "configs": ["single", "horde:4"],
        "repeat": 2,
        "budget": {"max_cost_usd": 1.0, "max_minutes": None},
        "taskset": {"root": "/x", "sha256": "ab" * 32, "tasks": ["t1"]},
    }
    write_outputs(tmp_path, eval_json(meta, RUNS, meta["configs"]))
    data = json.loads((tmp_path / "EVAL.json").read_text())
    assert len(data["runs"]) == 4 and data["taskset"]["sha256"] == "ab" * 32
    md = (tmp_path / "EVAL.md").read_text()
    assert "| single | 2 | 0.75 ±0.35 |" in md and "| horde:4 | 2 | 1.00 |" in md
    assert "$1.0, no deadline" in md
    root = ET.parse(tmp_path / "eval.svg").getroot()  # well-formed: a browser opens it
    assert root.tag == f"{SVG}svg"
    bars = {
        (b.get("data-figure"), b.get("data-config")): b
        for b in root.iter(f"{SVG}rect")
        if b.get("class") == "bar"
    }
    assert set(bars) == {(f, c) for f in ("recall", "usd_per_true") for c in ("single", "horde:4")}
    titles = {k: b.find(f"{SVG}title").text for k, b in bars.items()}  # type: ignore[union-attr]
    assert titles["recall", "single"] == "single: 0.75"
    assert titles["usd_per_true", "horde:4"] == "horde:4: 0.4000"
    height = {k: float(b.get("height") or 0) for k, b in bars.items()}
    assert height["recall", "single"] == pytest.approx(0.75 * height["recall", "horde:4"])
    # $ per true finding bars share one scale: the dearest is the tallest.
    assert height["usd_per_true", "horde:4"] > height["usd_per_true", "single"] > 0
