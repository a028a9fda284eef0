"""`horde-tui share`: one run's post-mortem as a markdown file to paste into an issue.

It describes the target by the task and the members' ideas, never by the material: no
file is read from the working directory, and the code a citation quotes (`app.py:13:
SECRET_KEY = ...`, the grammar of `store/pathcite.py`) is left out wherever it appears.
Then POSTMORTEM.md and REPORT.md. The whole text goes through the one masker
(`store/mask.py`, `public=True`), and the file ends with what it masked, by kind and count.
"""

from __future__ import annotations

from pathlib import Path

from horde_tui.store.ledgers.ideas import render_idea
from horde_tui.store.mask import Masker
from horde_tui.store.pathcite import path_citations
from horde_tui.store.paths import HordePaths
from horde_tui.store.store import HordeStore

QUOTE_OMITTED = "[code quote omitted]"
SHARED_DOCUMENTS = (("POSTMORTEM.md", "Post-mortem"), ("REPORT.md", "Report"))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def omit_quotes(text: str) -> tuple[str, int]:
    """`text` with the code each `path:line` citation quotes replaced, and how many: the
    target's own code stays on this machine."""
    count = 0
    for cite in path_citations(text):
        if not cite.quote:
            continue
        at = text.find(cite.token)
        found = text.find(cite.quote, at + len(cite.token)) if at >= 0 else -1
        if found < 0:
            continue
        text = text[:found] + QUOTE_OMITTED + text[found + len(cite.quote) :]
        count += 1
    return text, count


def _demoted(markdown: str) -> str:
    """Every heading of a document one level down (outside code fences), so it sits under
    its section of the shared file."""
    lines, fenced = [], False
    for line in markdown.strip().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        lines.append("##" + line if not fenced and line.startswith("#") else line)
    return "\n".join(lines)


def _ideas(run_dir: Path) -> list[str]:
    """The ideas raised in this run, as IDEAS.md renders them (read-only fold)."""
    store = HordeStore(run_dir.parent.parent, "viewer")
    store.refresh()
    return [render_idea(i) for i in store.state.ideas.values() if i.run == run_dir.name]


def share_document(run_dir: Path) -> str:
    """The shareable markdown of the run at `run_dir`: task, ideas, POSTMORTEM.md and
    REPORT.md, quotes of the target's code left out, then masked, then the masked list."""
    run_dir = Path(run_dir)
    top = HordePaths(run_dir.parent.parent).top
    task = _read(run_dir / "TASK.md")
    ideas = _ideas(run_dir)
    parts = [
        f"# horde-tui post-mortem of run {run_dir.name}",
        "Written by `horde-tui share`: the target is described by the task and the members' "
        "ideas only (no file of it, no code it quotes); paths, user and host names and "
        "key-like values are masked, listed at the end.",
        "## Task",
        _demoted(task) if task else "_No TASK.md._",
        f"## Ideas ({len(ideas)})",
        "\n".join(ideas) if ideas else "_No ideas in this run._",
    ]
    for name, title in SHARED_DOCUMENTS:
        text = _read(run_dir / name)
        parts += [
            f"## {title}",
            _demoted(text) if text else f"_No {name}: the run has not finalized._",
        ]
    body, quotes = omit_quotes("\n\n".join(parts))
    masker = Masker(top, public=True)
    body = masker(body)
    counts = {kind: n for kind, n in sorted(masker.counts.items()) if n}
    if quotes:
        counts["quote of the target's code"] = quotes
    listed = [f"- {kind}: {n}" for kind, n in counts.items()]
    return f"{body}\n\n## Masked\n\n" + ("\n".join(listed) if listed else "_Nothing._") + "\n"
