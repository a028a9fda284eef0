"""`--model demo` and the `demo` task set: the eval's own end-to-end check, no key needed.

The demo model is the stub server playing the demo's scripted review (`demo/policy.py`),
served from this process for the eval's runs. The `demo` task set is the demo's sample
project as one task, its truth built from the script's own `DEFECTS` (each defect at the
evidence line that holds its needle), so `horde-tui eval demo --model demo --configs
horde:4` scores exactly what the script finds: four defects and one refuted false lead.
"""

from __future__ import annotations

import json
from pathlib import Path

from horde_tui.demo.policy import DEFECTS, DEMO_PROMPT, demo_policy
from horde_tui.demo.run import copy_tree, sample_files
from horde_tui.stubmodel import StubThread, demo_stub

TASK_NAME = "demo-userdir"


def start_demo_model() -> StubThread:
    """Serve the demo model (no pauses) on 127.0.0.1; the caller closes it. Its key is
    `DEMO_KEY`."""
    return demo_stub(demo_policy(0.0))


def write_demo_taskset(dest: Path) -> Path:
    """The demo sample as a one-task set under `dest`; returns the task set's folder."""
    task = dest / TASK_NAME
    copy_tree(sample_files(), task / "material")
    (task / "prompt.md").write_text(DEMO_PROMPT + "\n", encoding="utf-8")
    lines = []
    for key, defect in DEFECTS.items():
        where = next(e for e in defect.evidence if defect.needle in e)
        file, line, _ = where.split(":", 2)
        lines += [
            "[[defect]]",
            f"id = {json.dumps(key)}",
            f"file = {json.dumps(file)}",
            f"lines = [{int(line)}, {int(line)}]",
            f"concern = {json.dumps(defect.slug)}",
            f"words = {json.dumps([*defect.slug.split('-'), defect.needle])}",
            f"marker = {json.dumps(defect.needle)}",
            "",
        ]
    (task / "truth.toml").write_text("\n".join(lines), encoding="utf-8")
    return dest
