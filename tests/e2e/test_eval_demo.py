"""The demo model through `horde-tui eval` on the demo sample scores what its script finds:
the four planted defects (each accepted in review) and one false lead (refuted)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.cli import cli_argv

from horde_tui.demo.policy import DEFECTS, FALSE_LEAD

pytestmark = [pytest.mark.slow, pytest.mark.e2e]  # one real four-member run: about a minute
EVAL = cli_argv("eval")


def test_demo_model_on_the_demo_sample_scores_its_script(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    env.update(HORDE_GATEWAY_BACKOFF_MS="20")
    out = tmp_path / "out"
    done = subprocess.run(
        [*EVAL, "demo", "--model", "demo", "--configs", "horde:4", "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = json.loads((out / "EVAL.json").read_text())["runs"]
    assert run["task"] == "demo-userdir" and run["outcome"] == "solved"
    assert (run["found"], run["planted"]) == (len(DEFECTS), len(DEFECTS))
    assert run["findings"] == len(DEFECTS) + 1  # the false lead
    assert run["precision"] == len(DEFECTS) / (len(DEFECTS) + 1)
    assert run["accepted_recall"] == 1.0 and run["duplicates"] == 0
    false = [m for m in run["matches"] if m["defect"] is None]
    assert len(false) == 1 and not false[0]["accepted"]
    assert false[0]["concern"] == FALSE_LEAD.slug  # the scripted XSS lead, refuted
    assert sorted(m["defect"] for m in run["matches"] if m["defect"]) == sorted(DEFECTS)
