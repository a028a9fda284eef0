"""A `.horde/` for the browser pages: the ledger scene's finished run with a task, a
manifest, transcripts (one holding a planted provider key and the gateway token),
a log, run documents and GRAPH.md, beside the fixture swarm (`swarm_scene`)."""

from __future__ import annotations

import json
from pathlib import Path

from support.app import RUN_ID, T0
from support.ledger_scene import fill_run, lifecycle
from support.swarm_scene import SWARM_ID, swarm_scene

FAKE_KEY = "sk-" + "A1b2C3d4E5" * 4
"""A provider-key-looking value planted in a transcript: no export may carry it."""
GATEWAY_TOKEN = "gwtok-" + "9f8e7d6c5b4a" * 3
TRANSCRIPT_MESSAGES = 120
"""Three transcript pages of fifty."""


def web_scene(workdir: Path) -> Path:
    """Write the scene under `workdir/.horde`; return the horde directory."""
    horde = fill_run(workdir)
    long_fact = "**The lab** is seeded from `db/seed.sql`: " + "one row per test user; " * 40
    assert horde("member-1", "fact", run=RUN_ID, text=long_fact).ok  # folded on its page
    run = horde.root / "runs" / RUN_ID
    (run / "TASK.md").write_text("# Task\n\nFind the injections in src/\n\n## Configuration\n")
    manifest = {
        "run": RUN_ID,
        "created": T0,
        "model": "openai/stub",
        "members": [{"name": f"member-{i}", "role": "member", "layers": []} for i in (1, 2, 3)],
        "request": {"count": 3, "layers": ["db", "web"], "until_stop": False},
    }
    (run / "MANIFEST.json").write_text(json.dumps(manifest))
    (run / "gateway.token").write_text(GATEWAY_TOKEN + "\n")
    folder = run / "sessions" / "member-1"
    folder.mkdir(parents=True)
    with open(folder / "20250101T120001-aaaaaa.jsonl", "w") as fh:
        fh.write(json.dumps({"role": "system", "content": "You are member-1.\n" * 40}) + "\n")
        for i in range(1, TRANSCRIPT_MESSAGES):
            if i % 2:
                call = {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"path": f"src/f{i}.py"})},
                }
                msg = {
                    "role": "assistant",
                    "content": f"step {i}",
                    "tool_calls": [call],
                    "usage": {"prompt_tokens": 900 + i, "completion_tokens": 40, "cost_usd": 0.001},
                }
            else:
                text = f"line {i} of src/f{i}.py"
                if i == 10:
                    text = f"OPENAI_API_KEY={FAKE_KEY}\nAuthorization: Bearer {GATEWAY_TOKEN}"
                if i == 12:
                    text = f"cwd is {workdir}/src and home is {Path.home()}"
                msg = {"role": "tool", "tool_call_id": f"c{i - 1}", "name": "read", "content": text}
            fh.write(json.dumps(msg) + "\n")
    (run / "member-1.log").write_text("spawned member-1\nexit completed after 60 turns\n")
    (run / "REPORT.md").write_text(
        "# Report\n\nOutcome **completed**. See [the query](src/db/query.py) and "
        "[the web](https://example.org).\n\n| member | turns |\n|---|---|\n| member-1 | 60 |\n"
    )
    (run / "GRAPH.md").write_text("# Graph\n\n```mermaid\nflowchart LR\n  a --> b\n```\n")
    lifecycle(horde, "phase-end", phase="verify")
    for n in (1, 2, 3):
        lifecycle(horde, "member-exit", member=f"member-{n}", cause="completed")
    lifecycle(horde, "run-end", outcome="completed", diagnosis="every member finished")
    swarm_scene(horde.root)
    return horde.root


OUTSIDE = "root:x:0:0:a line of a file outside the horde"
"""What `plant_symlinks`' target holds: no page may show it."""


def plant_symlinks(horde: Path, elsewhere: Path) -> list[str]:
    """Make the run's REPORT.md, TASK.md (whose prompt the index and the overview show), a
    member log, GRAPH.md and a second transcript symlinks to a file outside the horde
    directory (as `REPORT.md -> /etc/passwd`); return the site paths of the pages that
    would show it whole."""
    target = elsewhere / "passwd"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(OUTSIDE + "\n")
    run = horde / "runs" / RUN_ID
    session = run / "sessions" / "member-1" / "20250101T130000-bbbbbb.jsonl"
    links = (run / "REPORT.md", run / "TASK.md", run / "member-1.log", run / "GRAPH.md", session)
    for link in links:
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    base = f"runs/{RUN_ID}/"
    return [
        f"{base}files/REPORT.md.html",
        f"{base}files/TASK.md.html",
        f"{base}members/member-1/log.html",
        f"{base}files/GRAPH.md.html",
        f"{base}members/member-1/transcript-2-1.html",
    ]


__all__ = [
    "FAKE_KEY",
    "GATEWAY_TOKEN",
    "OUTSIDE",
    "RUN_ID",
    "SWARM_ID",
    "plant_symlinks",
    "web_scene",
]
