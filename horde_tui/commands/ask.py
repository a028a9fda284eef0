"""`horde-tui ask RUN|last "question" [--json]`: ask a read-only analyst about a run.

The answer is printed as it arrives; once it is complete its citations are checked, and
when one does not hold the answer is printed again with its `[check: ...]` marks (what
`asks.jsonl` keeps). `--json` prints only the record. The engine is `launch.ask`, which
the app's ask pane shares.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from horde_tui.store.paths import default_horde_dir
from horde_tui.store.runs import RUN_STATES, resolve_run


def add_ask_command(sub: Any) -> None:
    ask = sub.add_parser(
        "ask",
        help="ask a read-only analyst about a run, live or finished; the answer is "
        "streamed, its citations checked, and it is kept in runs/<id>/asks.jsonl",
        description="Ask a question about a run. The analyst reads the run's files, "
        "ledgers and transcripts (no writes, no shell). A live run is asked through its "
        "own gateway, against its budget; a finished one through a gateway started for "
        "the ask, with the run's model unless --model says otherwise.",
    )
    ask.add_argument("run", metavar="RUN|last", help="the run id, or last (the newest run)")
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument("--json", action="store_true", help="print the record as one JSON object")
    ask.add_argument("--model", help="a finished run: the analyst's model (default: the run's)")
    ask.add_argument("--api-base", help="a finished run: the model's endpoint (default: the run's)")
    ask.add_argument("--api-key", help="provider key (prefer the provider's own env variable)")
    ask.set_defaults(func=cmd_ask)


def ask_run_dir(horde_dir: Path, run: str) -> Path:
    """The run `run` names (`last`: the newest run, live or not); `UnknownRun` when
    there is none."""
    return resolve_run(horde_dir, run, last=RUN_STATES)


def cmd_ask(args: argparse.Namespace) -> int:
    run_dir = ask_run_dir(default_horde_dir(), args.run)
    return asyncio.run(_ask(run_dir, args))


async def _ask(run_dir: Path, args: argparse.Namespace) -> int:
    from horde_tui.launch.ask import AskDone, AskRefused, AskStep, AskText, ask

    shown = ""  # the text of the analyst's turn being printed
    events = ask(
        run_dir, args.question, model=args.model, api_base=args.api_base, api_key=args.api_key
    )
    async for event in events:
        if isinstance(event, AskRefused):
            _end_line(shown)
            print(f"horde-tui ask: {event.line}", file=sys.stderr)
            return 2 if event.bad_input else 1
        if isinstance(event, AskDone):
            record = event.record
            if args.json:
                print(json.dumps(record.to_json(), ensure_ascii=False, indent=2))
                return 0
            _end_line(shown)
            problems = record.problems
            if problems or record.answer.strip() != shown.strip():
                what = f"{len(problems)} of {len(record.citations)} citations do not hold"
                print(f"\n--- checked: {what}; the answer as kept ---\n{record.answer}")
            cost = "unknown cost" if record.cost_usd is None else f"${record.cost_usd:.4f}"
            tokens = record.prompt_tokens + record.completion_tokens
            print(
                f"ask: {len(record.citations)} citations checked, {len(problems)} marked; "
                f"{tokens:,} tokens, {cost}, {record.model or 'model unknown'}; kept in "
                f"{run_dir / 'asks.jsonl'}",
                file=sys.stderr,
            )
            return 0
        if args.json:
            continue
        if isinstance(event, AskStep):
            _end_line(shown)
            shown = ""
            print(f"  · {event.summary}", file=sys.stderr, flush=True)
        elif isinstance(event, AskText):
            shown += event.text
            print(event.text, end="", flush=True)
    return 1  # not reached: `ask` always ends with AskDone or AskRefused


def _end_line(shown: str) -> None:
    """End the streamed text's line before anything else is printed."""
    if shown and not shown.endswith("\n"):
        print(flush=True)
