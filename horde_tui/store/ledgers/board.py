"""BOARD.md: one-line progress posts, under a `## Run <id>` heading per run."""

from __future__ import annotations

from typing import Any

from horde_tui.store.ledgers.common import indented, one_line, stamp
from horde_tui.store.model import Post, RunHeading
from horde_tui.store.tables import Fold, LedgerTables

HEADER = (
    "# Board\n\n"
    "Progress posts from members and the parent, newest last. Written only through the\n"
    "`horde` tool (`post`); regenerated from ledger.jsonl.\n"
)


def _post(state: LedgerTables, rec: dict[str, Any]) -> None:
    post = Post(
        id=f"P{len(state.posts) + 1}",
        by=rec["actor"],
        run=rec["run"],
        seq=rec["seq"],
        ts=rec["ts"],
        text=rec["text"],
    )
    state.posts.append(post)
    state.touch("board", post)


def _run_start(state: LedgerTables, rec: dict[str, Any]) -> None:
    if rec["run"] not in state.runs:
        state.runs[rec["run"]] = RunHeading(
            rec["run"], rec.get("task_sha256", ""), rec["seq"], rec["ts"]
        )


OPS: dict[str, Fold] = {"board.post": _post, "run.start": _run_start}


def run_heading(info: RunHeading) -> str:
    """`## Run <id>` citing TASK.md by sha256, shared by BOARD.md and FINDINGS.md."""
    sha = info.task_sha256 or "unknown"
    return f"## Run {info.id}\n\nTASK.md sha256 `{sha}` · started {stamp(info.ts)}\n"


def render_post(post: Post) -> str:
    lines = post.text.strip().splitlines() or [""]
    out = f"- {stamp(post.ts)} **{post.by}**: {one_line(lines[0])}"
    if len(lines) > 1:
        out += "\n" + indented("\n".join(lines[1:]), "  ")
    return out


def render(state: LedgerTables) -> str:
    parts = [HEADER]
    for run_id, posts in state.entry_texts_by_run("board"):
        info = state.runs.get(run_id)
        parts.append("\n" + (run_heading(info) if info else f"## Run {run_id}\n"))
        if posts:
            parts.append("\n" + "\n".join(posts) + "\n")
    if not state.posts:
        parts.append("\n_No posts yet._\n")
    return "".join(parts)
