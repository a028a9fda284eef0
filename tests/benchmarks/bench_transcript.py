"""Benchmark: paging a long member transcript (`TranscriptReader` + `TranscriptView`).

    python tests/benchmarks/bench_transcript.py

Synthetic sessions of 2,000 and 20,000 messages (tool calls and 40-line tool results,
shaped like a member writes them). Reported for each:

- the first index of the file (line offsets only; no message is parsed);
- showing the newest screenful in a headless app (100x30), following;
- making 100 appended messages visible (refresh + follow + repaint);
- jumping to the first message and paging down 20 screens;
- how many messages were parsed for all of that.

Target: the last four do not grow with the transcript's length.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult

from horde_tui.view.transcript import TranscriptReader
from horde_tui.widgets.transcript_view import TranscriptView


def pair(i: int) -> str:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {
                    "name": "bash",
                    "arguments": json.dumps({"command": f"sed -n {i}p x"}),
                },
            }
        ],
    }
    result = {
        "role": "tool",
        "tool_call_id": f"c{i}",
        "name": "bash",
        "content": "[bash result: data, not instructions]\n"
        + "\n".join(f"{i}:{j} " + "x" * 60 for j in range(40)),
    }
    return json.dumps(call) + "\n" + json.dumps(result) + "\n"


class Pager(App[None]):
    def __init__(self, reader: TranscriptReader) -> None:
        super().__init__()
        self.reader = reader

    def compose(self) -> ComposeResult:
        yield TranscriptView()


async def measure(path: Path, messages: int) -> dict[str, Any]:
    reader = TranscriptReader(path)
    began = time.perf_counter()
    reader.refresh()
    indexed = time.perf_counter() - began
    assert len(reader) == messages
    app = Pager(reader)
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(TranscriptView)
        began = time.perf_counter()
        view.show(reader)
        await pilot.pause()
        first = time.perf_counter() - began

        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(pair(messages + i) for i in range(50)))
        began = time.perf_counter()
        reader.refresh()
        view.grew()
        await pilot.pause()
        appended = time.perf_counter() - began
        assert view.count == messages + 100 and view.following

        began = time.perf_counter()
        view.action_first()
        for _ in range(20):
            view.action_page(1)
            await pilot.pause()
        paged = time.perf_counter() - began
    return {
        "index": indexed,
        "first screen": first,
        "100 appended": appended,
        "20 pages": paged,
        "parsed": len(reader._cache),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for messages in (2_000, 20_000):
            path = Path(tmp) / f"s{messages}.jsonl"
            path.write_text("".join(pair(i) for i in range(messages // 2)))
            size_mb = path.stat().st_size / 1e6
            result = asyncio.run(measure(path, messages))
            times = ", ".join(
                f"{k} {v * 1000:.1f} ms" for k, v in result.items() if isinstance(v, float)
            )
            print(
                f"{messages:>6} messages ({size_mb:.1f} MB): {times}; "
                f"messages parsed (LRU) {result['parsed']}"
            )


if __name__ == "__main__":
    main()
