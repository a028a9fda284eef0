"""`horde-tui lessons`: every run's POSTMORTEM.md in, `.horde/LESSONS.md` out.

One model call through a standalone gateway, started and stopped here the way every
gateway is (`processes.spawn_gateway` with the run's `gateway_env`, `stop_gateway`), in
`.horde/lessons/` (its log, `gateway.json` and `usage.jsonl`), with `run`'s model flags.
The answer is checked and ranked by code (`supervisor.lessons`): the model proposes, the
post-mortems decide. `--dry-run` prints the inputs and calls no model. Bad input is one
line and exit 2, and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from horde_tui.common.settings import FLAGS, Settings, SettingsError, load_settings
from horde_tui.store.paths import atomic_write_text, default_horde_dir
from horde_tui.supervisor import lessons
from horde_tui.supervisor.summary import DEMO_MODEL

GATEWAY_FOLDER = "lessons"
"""Under the horde directory: the lessons gateway's log, `gateway.json` and usage."""
ANSWER_FILE = "answer.txt"
"""Under the gateway's folder: a model answer that was not the lessons asked for."""
MEMBER = "lessons"
"""Who the gateway is told is calling (its usage lines and the stub model's scripts)."""


def add_lessons_command(sub: Any) -> None:
    p = sub.add_parser(
        "lessons",
        help="distil the recurring critiques of every run's POSTMORTEM.md into .horde/LESSONS.md",
        description="Reads every run's POSTMORTEM.md here, asks the model for the critiques "
        "of how members coordinated that recur, checks every quote against the post-mortem "
        "it is attributed to, and writes .horde/LESSONS.md ranked by how many runs raise "
        "each. `run --lessons` gives members the top ones.",
    )
    p.add_argument("--dry-run", action="store_true", help="print the inputs; call no model")
    p.add_argument("--model", help="litellm model string (default: $HORDE_MODEL / config)")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for the model")
    p.add_argument("--api-key", help="provider key (prefer the provider's own env variable)")
    p.set_defaults(func=cmd_lessons)


def _err(message: str, code: int = 2) -> int:
    print(f"horde-tui lessons: {message}", file=sys.stderr)
    return code


def cmd_lessons(args: argparse.Namespace) -> int:
    horde_dir = default_horde_dir()
    postmortems, skipped = lessons.read_postmortems(horde_dir)
    if not postmortems:
        runs = f"{len(skipped)} run(s), none with a written POSTMORTEM.md" if skipped else "no run"
        return _err(
            f"refused: no post-mortem to learn from in {horde_dir} ({runs}); a run writes "
            "POSTMORTEM.md when it ends (or on `horde-tui stop-clean postmortem`); "
            "nothing written"
        )
    overrides = {"model": args.model, "api_base": args.api_base, "api_key": args.api_key}
    try:
        settings = load_settings(horde_dir / "config.toml", None, overrides)
    except SettingsError as exc:
        return _err(f"refused: {exc}")
    if args.dry_run:
        print(dry_run_text(horde_dir, postmortems, skipped, settings))
        return 0
    demo = None
    if not settings.gateway.model and all(map(_played_by_demo, postmortems)):
        from horde_tui.stubmodel import DEMO_KEY  # the stub's server (aiohttp): only here

        demo = _demo_model()  # the demo's runs: the demo model reads its own post-mortems
        settings = load_settings(
            horde_dir / "config.toml",
            None,
            {"model": demo.model, "api_base": demo.api_base, "api_key": DEMO_KEY},
        )
    if not settings.gateway.model:
        return _err(
            f"refused: no model; give {FLAGS['model']}, HORDE_MODEL or `model` in "
            ".horde/config.toml (--dry-run needs none)"
        )
    try:
        answer, cost = asyncio.run(ask_model(horde_dir, settings, lessons.messages(postmortems)))
    except LessonsCallError as exc:
        return _err(f"{exc}; nothing written", 1)
    finally:
        if demo is not None:
            demo.close()
    try:
        kept, dropped = lessons.rank(lessons.parse_answer(answer, postmortems))
    except lessons.LessonsError as exc:
        kept_answer = horde_dir / GATEWAY_FOLDER / ANSWER_FILE
        atomic_write_text(kept_answer, answer)
        return _err(f"{exc}; LESSONS.md not written (the answer is in {kept_answer})", 1)

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out = lessons.lessons_path(horde_dir)
    model = DEMO_MODEL if demo is not None else settings.gateway.model
    text = lessons.render(kept, dropped, postmortems, model, when)
    atomic_write_text(out, text)
    marked = sum(bool(q.problem) for lesson in kept + dropped for q in lesson.quotes)
    spent = "cost unknown" if cost is None else f"${cost:.4f}"
    print(
        f"lessons: wrote {out}: {len(kept)} lesson(s) from {len(postmortems)} post-mortem(s), "
        f"{marked} quote(s) failing the check (marked, not counted), {len(dropped)} lesson(s) "
        f"without a found quote (not kept); {spent}"
    )
    return 0


def _played_by_demo(pm: lessons.PostMortem) -> bool:
    """Whether the demo model played the run of `pm` (its MANIFEST.json says so)."""
    try:
        manifest = json.loads((pm.path.parent / "MANIFEST.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("demo_model") is True


def _demo_model() -> Any:
    """The demo model (a `StubThread`) playing the lessons pass over the demo's own
    post-mortems: `horde-tui lessons` right after `horde-tui demo` works without a key."""
    from horde_tui.demo.policy import lessons_plan
    from horde_tui.stubmodel import demo_stub
    from horde_tui.stubmodel.agent import AgentPolicy

    return demo_stub(AgentPolicy({MEMBER: lessons_plan()}))


def dry_run_text(
    horde_dir: Path,
    postmortems: list[lessons.PostMortem],
    skipped: list[tuple[str, str]],
    settings: Settings,
) -> str:
    """What a real pass would read and send: each post-mortem and its size, the runs
    left out and why, the model; nothing is called."""
    total = sum(len(pm.text) for pm in postmortems)
    sent = sum(len(m["content"]) for m in lessons.messages(postmortems))
    lines = [f"lessons: {len(postmortems)} post-mortem(s) in {horde_dir}:"]
    for pm in postmortems:
        cap = lessons.POSTMORTEM_CAP
        cut = f" (the first {cap:,} go to the model)" if len(pm.text) > cap else ""
        lines.append(
            f"  {pm.run}  {os.path.relpath(pm.path, horde_dir)}  {len(pm.text):,} chars{cut}"
        )
    for run, why in skipped:
        lines.append(f"  {run}  left out: {why}")
    lines.append(
        f"total {total:,} chars read, {sent:,} chars to send (about {sent // 4:,} tokens) to "
        f"{settings.gateway.model or 'no model (none set)'}; would write "
        f"{lessons.lessons_path(horde_dir)}"
    )
    lines.append("dry run: no model called, nothing written")
    return "\n".join(lines)


class LessonsCallError(RuntimeError):
    """The gateway did not start or the model call failed; the line says which."""


async def ask_model(
    horde_dir: Path, settings: Settings, messages: list[dict[str, str]]
) -> tuple[str, float | None]:
    """The model's answer to `messages` and its cost (None: unpriced), through a gateway
    started for this one call and stopped after it, whatever happened."""
    from horde_tui.common.gatewayclient import GatewayClient, GatewayError
    from horde_tui.supervisor.processes import GatewayStartError, spawn_gateway, stop_gateway
    from horde_tui.supervisor.run import gateway_env

    env = dict(os.environ)
    env.update(gateway_env(settings))
    try:
        gateway = await spawn_gateway(
            horde_dir / GATEWAY_FOLDER, env, settings.gateway.max_cost_usd
        )
    except GatewayStartError as exc:
        raise LessonsCallError(str(exc)) from None
    client = GatewayClient(gateway.url, gateway.token, MEMBER)
    try:
        answer = await asyncio.to_thread(client.chat, messages, [])
    except GatewayError as exc:
        raise LessonsCallError(f"the model call failed: {exc}") from None
    finally:
        client.close()
        await stop_gateway(gateway)
    choices = answer.get("choices") or [{}]
    text = str(((choices[0] or {}).get("message") or {}).get("content") or "")
    cost = (answer.get("usage") or {}).get("horde_cost_usd")
    return text, cost if isinstance(cost, int | float) else None
