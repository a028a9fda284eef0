"""Cost that says what it bought: the forecast after the canary, and $ per finding.

The arithmetic runs in-process; the real-run test checks the forecast against what the
gateway really charged for the canary's calls (a model litellm prices, served by the
stub) and that REPORT.md sets the forecast beside the spend.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from horde_tui.store.members import MemberState
from horde_tui.supervisor.forecast import Forecast, canary_forecast, spend_lines


def member(name: str, prompt: int, completion: int, cost: float | None) -> MemberState:
    state = MemberState(name, "member")
    state.prompt_tokens, state.completion_tokens, state.cost_usd = prompt, completion, cost
    state.started = 1000.0
    return state


def test_the_canary_pace_times_the_members_gives_the_forecast() -> None:
    canary = member("member-1", 900, 100, 0.002)
    forecast = canary_forecast(canary, 4, now=1030.0, deadline_min=60, budget_usd=None)
    assert forecast.tokens_per_min == pytest.approx(2000)  # 1,000 tokens in half a minute
    assert forecast.per_10_min() == (pytest.approx(80_000), pytest.approx(0.16))
    assert forecast.text() == (
        "$0.1600 and 80,000 tokens per 10 min for 4 members at the canary's pace; "
        "$0.9600 by the 60-minute deadline"
    )
    budget = canary_forecast(canary, 4, now=1030.0, deadline_min=None, budget_usd=2.0)
    assert budget.horizon() == "the $2.00 budget lasts about 125 min"
    assert Forecast.from_event(forecast.as_event()) == forecast


def test_an_unpriced_model_forecasts_tokens_and_an_unknown_cost() -> None:
    forecast = canary_forecast(member("member-1", 600, 0, None), 2, 1060.0, 30, 5.0)
    assert forecast.text() == (
        "unknown and 12,000 tokens per 10 min for 2 members at the canary's pace; "
        "an unknown cost by the 30-minute deadline"
    )


def test_spend_is_divided_by_the_findings_and_the_accepted_ones() -> None:
    members = [member("member-1", 3000, 1000, 0.03), member("member-2", 2000, 0, 0.01)]
    lines = spend_lines(members, minutes=20, findings=4, accepted=1, forecast=None)
    assert lines == [
        "- Cost: $0.0400, 6,000 tokens · per finding (4): $0.0100 and 1,500 tokens each · "
        "per accepted finding (1): $0.0400 and 6,000 tokens each"
    ]
    none = spend_lines(members, minutes=20, findings=0, accepted=0, forecast=None)
    assert "per finding (0): none filed · per accepted finding (0): none accepted" in none[0]


@pytest.mark.slow  # a whole real run: `pytest -m slow`
@pytest.mark.e2e
def test_the_forecast_matches_what_the_gateway_charged_the_canary(tmp_path: Path) -> None:
    from support.plans import APP, HELPERS, horde, worker

    from horde_tui.common.settings import load_settings
    from horde_tui.stubmodel import StubThread
    from horde_tui.stubmodel.agent import AgentPolicy
    from horde_tui.supervisor.run import Supervisor
    from horde_tui.supervisor.setup import RunRequest

    (tmp_path / "app.py").write_text(APP)
    plans = {
        "member-1": [
            *worker("Check app.py for a hard-coded password", "app.py hard-codes it", "secrets"),
            {"say": "Done."},
        ],
        "member-2": [horde("list"), {"say": "Nothing else."}],
        **HELPERS,
    }
    with StubThread(policy=AgentPolicy(plans)) as stub:
        env = {  # a model litellm prices, so the canary's calls have a known cost
            "HORDE_MODEL": "openai/gpt-4o-mini",
            "HORDE_API_BASE": stub.api_base,
            "HORDE_API_KEY": "stub",
        }
        cfg = load_settings(
            environ=env,
            overrides={"max_minutes": 30, "allow_unverified": True, "postmortem": False},
        )
        sup = Supervisor(tmp_path, RunRequest("Review app.py", 2, verifier=False), cfg)
        summary = asyncio.run(asyncio.wait_for(sup.run(), 240))
    assert summary.exit_code == 0, summary.diagnosis
    events = [json.loads(x) for x in (sup.run_dir / "events.jsonl").read_text().splitlines()]
    (forecast,) = [e for e in events if e.get("kind") == "forecast"]
    steps = [(e.get("kind"), e.get("member")) for e in events if e.get("type") == "lifecycle"]
    # After the canary, before the fan-out.
    assert (
        steps.index(("canary", "member-1"))
        < steps.index(("forecast", None))
        < steps.index(("member-spawn", "member-2"))
    ), steps
    usage = [json.loads(x) for x in (sup.run_dir / "usage.jsonl").read_text().splitlines()]
    charged = [u for u in usage if u["member"] == "member-1"]
    assert charged and all(u["cost_usd"] for u in charged)
    first = charged[0]  # the canary passes at member-1's first model answer
    assert forecast["canary_tokens"] == first["prompt_tokens"] + first["completion_tokens"]
    assert forecast["canary_cost_usd"] == pytest.approx(first["cost_usd"])
    assert (forecast["members"], forecast["deadline_min"]) == (2, 30)
    expected = Forecast.from_event(forecast)
    assert forecast["text"] == expected.text()
    assert "by the 30-minute deadline" in forecast["text"]
    report = (sup.run_dir / "REPORT.md").read_text()
    assert f"- Forecast after the canary: {expected.text()}; spent $" in report
    assert "· per finding (1): $" in report and "per accepted finding (" in report


def test_headless_output_prints_the_forecast_as_its_sentence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from horde_tui.app.hosting import print_event
    from horde_tui.supervisor.observe import SupervisorEvent

    forecast = canary_forecast(member("member-1", 900, 100, 0.002), 4, 1030.0, 60, None)
    print_event(SupervisorEvent("forecast", None, forecast.as_event(), 1030.0))
    (line,) = capsys.readouterr().out.splitlines()
    assert line.split(" ", 1)[1] == f"[forecast] {forecast.text()}"
