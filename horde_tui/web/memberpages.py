"""A member's pages: its facts and final words, its log, its transcripts page by page.

Each builder gathers the page's data (the `/api/` twin) and hands it to its template, as
`pages.Site`'s run pages do (`pages.RUN_ROUTES` maps `members/<name>/...` here).
"""

from __future__ import annotations

import re
from pathlib import Path

from horde_tui.store.transcript import sessions
from horde_tui.web.confine import confined
from horde_tui.web.render import Renderer
from horde_tui.web.scope import PAGE_ENTRIES, Page, RunReaders, pager, pick, tail

LOG_TAIL_BYTES = 64 * 1024
"""What a member page shows of its log: the end, where an exit is explained."""
LOG_WHOLE_BYTES = 1024 * 1024
"""The whole-log view's cap (`log-all.html`, `log.html?tail=0`): its last MiB."""
MEMBER_FIELDS = (
    "name role status exit_cause turns prompt_tokens completion_tokens cost_usd tool_summary "
    "detail final_message"
).split()
"""What the JSON of a member carries, in this order."""


def page(site: Renderer, run: RunReaders, run_id: str, name: str, page: str) -> Page | None:
    member = next((m for m in run.view.members() if m.name == name), None)
    if member is None:
        return None
    base = f"runs/{run_id}/members/{name}/"
    found = sessions(run.run_dir, name)
    if page in ("log.html", "log-all.html"):
        return log(site, run, run_id, name, page)
    if page != "index.html":
        match = re.fullmatch(r"transcript-(\d+)-(\d+)\.html", page)
        if match is None or not 1 <= int(match.group(1)) <= len(found):
            return None
        return transcript(site, run_id, name, found, int(match.group(1)), int(match.group(2)))
    data = pick(member, MEMBER_FIELDS)
    data["sessions"] = [p.name for p in found]
    keys = ("role", "status", "exit_cause", "turns", "prompt_tokens", "completion_tokens")
    body = site.tpl(
        "member.html",
        base=base,
        pairs=[(k, data[k]) for k in (*keys, "tool_summary", "detail")],
        final=member.final_message or "",
        sessions=[(p.name, site._entry_count(p)) for p in found],
    )
    return Page("", f"{name} · run {run_id}", body, data)


def log(site: Renderer, run: RunReaders, run_id: str, name: str, page: str) -> Page:
    """The end of a member's log (64 KiB; `?tail=N`: its last N lines), or the whole
    log up to its last MiB (`log-all.html`, `?tail=0`)."""
    lines = site._args.get("tail", "") if page == "log.html" else "0"
    whole = lines.strip() == "0"
    size = LOG_WHOLE_BYTES if whole or lines.strip().isdigit() else LOG_TAIL_BYTES
    text = tail(confined(site.horde_dir, run.run_dir / f"{name}.log"), size)
    if lines.strip().isdigit() and not whole:
        text = "".join(text.splitlines(keepends=True)[-int(lines) :])
    base = f"runs/{run_id}/members/{name}/"
    body = site.tpl("log.html", base=base, whole=whole, tail=text)
    return Page("", f"{name}.log · run {run_id}", body, {"tail": text, "whole": whole})


def transcript(
    site: Renderer, run_id: str, name: str, found: list[Path], s: int, p: int
) -> Page | None:
    reader = site._reader(found[s - 1])
    total = len(reader)
    pages = max(1, -(-total // PAGE_ENTRIES))
    if not 1 <= p <= pages:
        return None
    first = (p - 1) * PAGE_ENTRIES
    entries, raws, folds = [], [], []
    for i in range(first, min(total, first + PAGE_ENTRIES)):
        m = reader.message(i)
        raws.append(reader.index.raw_line(i).decode("utf-8", errors="replace"))
        folds.append(m.folds)
        entries.append({"line": i, "role": m.role, "kind": m.kind, "head": m.head, "body": m.body})
    data = {
        "session": found[s - 1].name,
        "page": p,
        "pages": pages,
        "total": total,
        "entries": entries,
    }
    base = f"runs/{run_id}/members/{name}/"
    body = site.tpl(
        "transcript.html",
        base=base,
        name=name,
        data=data,
        first=first,
        raws=raws,
        folds=folds,
        numbers=pager(p, pages),
        page_href=lambda q: f"{base}transcript-{s}-{q}.html",
    )
    return Page("", f"Transcript · {name} · run {run_id}", body, data)
