"""`E` on the run screen exports the shown run (as `horde-tui export <run>` does, into
the current directory) from a worker, and says where, with the secrets warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.app import RUN_ID, FakeSupervisor, deterministic_app, play_six, wait_for


async def test_e_exports_the_shown_run_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "here"
    out.mkdir()
    monkeypatch.chdir(out)
    fake = FakeSupervisor(tmp_path)
    app = deterministic_app(fake)
    async with app.run_test(size=(100, 30)) as pilot:
        play_six(fake)
        await pilot.press("E")
        await wait_for(
            pilot, lambda: any("exported" in n.message for n in app._notifications), timeout=60
        )
        said = next(n.message for n in app._notifications if "exported" in n.message)
    folder = out / f"horde-export-{RUN_ID}"
    assert said.startswith(f"exported run {RUN_ID} to {folder / 'index.html'}")
    assert "may carry secrets" in said
    assert (folder / "index.html").is_file()
    assert (folder / "runs" / RUN_ID / "index.html").is_file()
