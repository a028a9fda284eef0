"""`horde-tui share last` after `horde-tui demo --headless`, run as a person runs it: the
post-mortem and report of the real run, none of its tokens, paths or target code."""

from __future__ import annotations

from pathlib import Path

from support.cli import cli


def test_share_last_after_the_demo(demo_project: Path, tmp_path: Path) -> None:
    run_dir = next((demo_project / ".horde" / "runs").iterdir())
    token = (run_dir / "gateway.token").read_text().strip()
    out = tmp_path / "issue.md"

    done = cli(demo_project, "share", "last", "--out", str(out))

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"shared post-mortem: {out}\n"
    document = out.read_text()
    assert f"# horde-tui post-mortem of run {run_dir.name}\n" in document
    for section in ("## Task", "## Ideas (5)", "## Post-mortem", "## Report", "## Masked"):
        assert f"\n{section}\n" in document
    assert "Security review of the userdir web app" in document
    assert "TASK.md sha256 `[masked]`" in document and "- long hex value: 1\n" in document
    assert token not in document and str(demo_project.parent) not in document
    code = [
        line.strip()
        for name in ("app.py", "auth.py")
        for line in (demo_project / name).read_text().splitlines()
        if len(line.strip()) > 20
    ]
    assert [line for line in code if line in document] == []
