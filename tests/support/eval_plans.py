"""Scripted findings for the eval tests: evidence quoted at a bundled task's planted
defect, so the expected scores are exact."""

from __future__ import annotations

from typing import Any

from horde_tui.eval.taskset import Task
from support.plans import horde


def cite(task: Task, defect_id: str, offset: int = 0) -> str:
    """Evidence at a planted defect's first line (+ offset), as a grep line."""
    defect = next(d for d in task.defects if d.id == defect_id)
    line = (task.material / defect.file).read_text().splitlines()[defect.first - 1 + offset]
    return f"{defect.file}:{defect.first + offset}: {line.strip()}"


def finding(concern: str, text: str, evidence: str) -> dict[str, Any]:
    return horde(
        "finding",
        idea="$I",
        concern=concern,
        concernDef=f"{concern}: scripted by the eval test",
        concernNew=True,  # distinct concerns: the tool dedups within one concern
        text=text,
        evidence=evidence,
        support="derived",
        importance="medium",  # a verifier leaving high findings unreviewed is reset
        confidence="high",
    )
