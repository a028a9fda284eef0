"""`horde-tui models` and horde.py's environment (`HORDE_MODEL`, `HORDE_API_KEY`) on the
fake AI Horde: the live list as a person reads it, the warning for a model no worker
serves, and the one-line refusals where the two names would be misread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.aihorde import FakeHorde, FakeHordeThread, FakeModel, json_tool_answer

from horde_tui.common.settings import SettingsError
from horde_tui.gateway.__main__ import build_config, parse_args
from horde_tui.launch.launch import LaunchCheck, RunOptions, aihorde_warnings, check_launch

SKYFALL = "aphrodite/TheDrummer/Skyfall-31B-v4.2"
CYDONIA = "koboldcpp/Cydonia-24B"
IDLE = "koboldcpp/Nobody-7B"


@pytest.fixture
def swarm() -> Iterator[FakeHordeThread]:
    models = [
        FakeModel(CYDONIA, workers=1, eta=300, queued=9000),
        FakeModel(SKYFALL, workers=2, eta=40, queued=1200, threads=3),
        FakeModel(IDLE, workers=0),
    ]
    with FakeHordeThread(FakeHorde(models=models, answer=json_tool_answer)) as served:
        yield served


def models_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HORDE_")}
    code = (
        "import sys; from horde_tui.commands.cli import main; code = main(sys.argv[1:]); "
        "print('litellm loaded' if 'litellm' in sys.modules else '', file=sys.stderr); "
        "sys.exit(code)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "models", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_models_lists_the_live_models_most_available_first(swarm: FakeHordeThread) -> None:
    done = models_cli("--api-base", swarm.api_base)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # `/v2/status/models` counts threads (each worker's summed), not workers.
    assert lines[0].split()[:3] == ["model", "(--model)", "threads"]
    names = [line.split()[0] for line in lines[1:]]
    assert names == [f"aihorde/{SKYFALL}", f"aihorde/{CYDONIA}"]  # no worker: not listed
    assert lines[1].split()[1:] == ["6", "1200", "40", "s"]
    assert "litellm loaded" not in done.stderr  # the CLI stays light


def test_models_json(swarm: FakeHordeThread) -> None:
    done = models_cli("--api-base", swarm.api_base, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["name"] for r in rows] == [SKYFALL, CYDONIA]
    assert rows[0]["threads"] == 6 and rows[0]["eta"] == 40 and rows[0]["queued"] == 1200
    assert swarm.fake.model_lists == 1


def test_models_on_an_unreachable_horde_is_one_line() -> None:
    done = models_cli("--api-base", "http://127.0.0.1:9/api")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("horde-tui models: AI Horde unreachable")


def test_an_api_base_without_api_gets_a_hint(swarm: FakeHordeThread) -> None:
    done = models_cli("--api-base", swarm.server.url)  # the host, not its API root
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line]
    assert len(lines) == 1 and "--api-base" in lines[0] and f"{swarm.server.url}/api" in lines[0]


def launch(tmp_path: Path, **env: str) -> tuple[LaunchCheck, list[str]]:
    check = check_launch(RunOptions("2", "Review app.py"), tmp_path / ".horde", environ=env)
    return check, [r.message for r in check.refusals]


def test_a_model_no_worker_serves_is_warned_at_the_start(
    swarm: FakeHordeThread, tmp_path: Path
) -> None:
    check, refusals = launch(tmp_path, HORDE_MODEL=f"aihorde/{IDLE}", HORDE_API_BASE=swarm.api_base)
    assert refusals == [] and check.settings is not None
    warnings = aihorde_warnings(check.settings)
    assert len(warnings) == 1
    assert IDLE in warnings[0] and "horde-tui models" in warnings[0] and SKYFALL in warnings[0]
    check, _ = launch(tmp_path, HORDE_MODEL=f"aihorde/{SKYFALL}", HORDE_API_BASE=swarm.api_base)
    assert check.settings is not None and aihorde_warnings(check.settings) == []


def test_horde_py_environment_reaches_ai_horde(tmp_path: Path) -> None:
    """horde.py's HORDE_MODEL is a bare AI Horde id and its HORDE_API_KEY an AI Horde key:
    the run reads the id as aihorde/<id>, and the key goes to AI Horde with it."""
    check, refusals = launch(tmp_path, HORDE_MODEL=SKYFALL, HORDE_API_KEY="my-horde-key")
    assert refusals == []
    assert check.settings is not None
    assert check.settings.gateway.model == f"aihorde/{SKYFALL}"
    args = parse_args([])
    os_env = {"HORDE_MODEL": SKYFALL, "HORDE_API_KEY": "my-horde-key"}
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("HORDE_")]:
            mp.delenv(name)
        for name, value in os_env.items():
            mp.setenv(name, value)
        config = build_config(args, "token")
    assert config.model == f"aihorde/{SKYFALL}" and config.settings.api_key == "my-horde-key"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"HORDE_MODEL": "openai/gpt-4o", "HORDE_API_KEY": "0000000000"}, "anonymous key"),
        (
            {
                "HORDE_MODEL": f"aihorde/{SKYFALL}",
                "HORDE_MEMBER_MODELS": "member-2=openai/gpt-4o",
                "HORDE_API_KEY": "sk-secret",
            },
            "would reach both",
        ),
    ],
)
def test_a_key_that_would_reach_the_wrong_provider_is_one_line(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    _, refusals = launch(tmp_path, **env)
    assert len(refusals) == 1 and needle in refusals[0] and "\n" not in refusals[0]
    assert refusals[0].startswith("refused: ")
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("HORDE_")]:
            mp.delenv(name)
        for name, value in env.items():
            mp.setenv(name, value)
        with pytest.raises(SettingsError, match=needle):
            build_config(parse_args([]), "token")


def test_ai_horde_with_the_anonymous_key_and_no_key_both_start(tmp_path: Path) -> None:
    for env in ({"HORDE_API_KEY": "0000000000"}, {}):
        _, refusals = launch(tmp_path, HORDE_MODEL=f"aihorde/{SKYFALL}", **env)
        assert refusals == []
