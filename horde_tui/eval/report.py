"""EVAL.json, EVAL.md, eval.svg and the terminal table, all from the same run results.

Every figure is computed once (`aggregate`) and the three outputs format those numbers,
so they cannot disagree. Spread over `--repeat` is mean, standard deviation, min and max
of the per-run values; a figure with no value (precision of a run with no findings, cost
a provider did not price) is left out of its mean and counted in `n`.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from horde_tui.eval.score import Spread
from horde_tui.store.paths import atomic_write_text

FIGURES: tuple[tuple[str, str], ...] = (
    ("recall", "recall"),
    ("precision", "precision"),
    ("accepted_recall", "accepted recall"),
    ("answer_accuracy", "answers right"),
    ("duplicates", "duplicates"),
    ("refusals", "refusals"),
    ("tokens", "tokens"),
    ("cost_usd", "cost $"),
    ("wall_s", "wall s"),
    ("usd_per_true", "$ / true finding"),
)
"""(key in a run's result, column heading), in table order."""
FRACTIONS = frozenset({"recall", "precision", "accepted_recall", "answer_accuracy"})


def spreads(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each figure's spread over `runs` (only figures some run has)."""
    out = {}
    for key, _ in FIGURES:
        if any(key in r for r in runs):
            out[key] = Spread.of(r.get(key) for r in runs if key in r).as_json()
    return out


def aggregate(runs: Sequence[dict[str, Any]], configs: Sequence[str]) -> dict[str, Any]:
    """Per task and configuration, and per configuration over every task."""
    tasks: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r["task"] for r in runs):
        tasks[name] = {
            c: spreads([r for r in runs if r["task"] == name and r["config"] == c]) for c in configs
        }
    summary = {c: spreads([r for r in runs if r["config"] == c]) for c in configs}
    return {"tasks": tasks, "summary": summary}


def fmt(key: str, value: float | None) -> str:
    """One figure as the tables and the chart print it."""
    if value is None:
        return "-"
    if key in FRACTIONS:
        return f"{value:.2f}"
    if key in ("cost_usd", "usd_per_true"):
        return f"{value:.4f}"
    if key == "wall_s":
        return f"{value:.1f}"
    return f"{value:.1f}" if value != int(value) else str(int(value))


def cell(key: str, spread: dict[str, Any] | None) -> str:
    """`mean` or `mean ±sd` when repeats differ."""
    if not spread or spread["mean"] is None:
        return "-"
    text = fmt(key, spread["mean"])
    if spread["n"] > 1 and spread["sd"]:
        text += f" ±{fmt(key, spread['sd'])}"
    return text


def table(rows: dict[str, dict[str, Any]], first: str) -> list[list[str]]:
    """Header and rows of a figures table whose rows are `rows` (name -> spreads)."""
    keys = [k for k, _ in FIGURES if any(k in s for s in rows.values())]
    head = [first, "runs", *[dict(FIGURES)[k] for k in keys]]
    body = []
    for name, figures in rows.items():
        runs = max((s["n"] for s in figures.values()), default=0)
        body.append([name, str(runs), *[cell(k, figures.get(k)) for k in keys]])
    return [head, *body]


def markdown(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def plain(rows: list[list[str]]) -> str:
    """A terminal table: columns padded to their widest cell."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def eval_json(
    meta: dict[str, Any], runs: list[dict[str, Any]], configs: Sequence[str]
) -> dict[str, Any]:
    return {**meta, **aggregate(runs, configs), "runs": runs}


def eval_md(data: dict[str, Any]) -> str:
    lines = [
        "# Eval",
        "",
        f"Model `{data['model']}`; task set `{data['taskset']['root']}` "
        f"(sha256 `{data['taskset']['sha256']}`); configurations "
        f"{', '.join(data['configs'])}; {data['repeat']} repeat(s); budget per run "
        f"{_budget(data)}. Scores are computed by code from each run's files; they hold for "
        "this model and this task set only.",
        "",
        "## Summary by configuration",
        "",
        markdown(table(data["summary"], "configuration")),
    ]
    for task, by_config in data["tasks"].items():
        lines += ["", f"## {task}", "", markdown(table(by_config, "configuration"))]
    lines += [
        "",
        "## Runs",
        "",
        "| task | configuration | # | run | outcome | MANIFEST.json sha256 | ACCEPTANCE.json sha256 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["runs"]:
        lines.append(
            f"| {r['task']} | {r['config']} | {r['repeat']} | {r.get('run_id') or '-'} | "
            f"{r.get('outcome') or '-'} | {(r.get('manifest_sha256') or '-')[:16]} | "
            f"{(r.get('acceptance_sha256') or '-')[:16]} |"
        )
    return "\n".join(lines) + "\n"


def _budget(data: dict[str, Any]) -> str:
    cost, minutes = data["budget"].get("max_cost_usd"), data["budget"].get("max_minutes")
    parts = [f"${cost}" if cost is not None else "no cost cap"]
    parts.append(f"{minutes} min" if minutes is not None else "no deadline")
    return ", ".join(parts)


def eval_svg(data: dict[str, Any]) -> str:
    """Two bar charts side by side: mean recall and mean $ per true finding by
    configuration, each bar labelled with the same text EVAL.md prints."""
    configs = list(data["configs"])
    panels = [("recall", "Recall (mean)"), ("usd_per_true", "$ per true finding (mean)")]
    bar_w, gap, height, top, left = 48, 24, 200, 40, 20
    panel_w = max(240, left + len(configs) * (bar_w + gap) + gap)
    width = panel_w * len(panels)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 60}" '
        f'viewBox="0 0 {width} {top + height + 60}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{top + height + 60}" fill="white"/>',
    ]
    for p, (key, title) in enumerate(panels):
        x0 = p * panel_w + left
        means = [(data["summary"].get(c, {}).get(key) or {}).get("mean") for c in configs]
        scale = 1.0 if key in FRACTIONS else max([m for m in means if m is not None] or [0]) or 1.0
        parts.append(
            f'<text x="{x0}" y="20" font-size="13" font-weight="bold">{escape(title)}</text>'
        )
        parts.append(
            f'<line x1="{x0}" y1="{top + height}" x2="{x0 + panel_w - left}" '
            f'y2="{top + height}" stroke="#444"/>'
        )
        if all(m is None for m in means):
            note = "no figure: cost unknown or nothing found"
            parts.append(f'<text x="{x0}" y="{top + height / 2}" fill="#666">{note}</text>')
        for i, (config, mean) in enumerate(zip(configs, means, strict=True)):
            x = x0 + gap + i * (bar_w + gap)
            h = 0 if mean is None else round(height * mean / scale, 1)
            label = fmt(key, mean)
            parts.append(
                f'<rect class="bar" data-figure="{key}" data-config="{escape(config)}" '
                f'x="{x}" y="{top + height - h}" width="{bar_w}" height="{h}" fill="#4477aa">'
                f"<title>{escape(config)}: {label}</title></rect>"
            )
            parts.append(
                f'<text x="{x + bar_w / 2}" y="{top + height - h - 4}" text-anchor="middle">'
                f"{label}</text>"
            )
            parts.append(
                f'<text x="{x + bar_w / 2}" y="{top + height + 16}" text-anchor="middle">'
                f"{escape(config)}</text>"
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_outputs(out: Path, data: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "EVAL.json", json.dumps(data, indent=2) + "\n")
    atomic_write_text(out / "EVAL.md", eval_md(data))
    atomic_write_text(out / "eval.svg", eval_svg(data))


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
