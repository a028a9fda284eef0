"""`horde-tui eval`: one agent against hordes on a fixed task set, scored by code.

Layers, each importable without the ones after it: `taskset` reads a task folder and its
ground truth; `score` turns a finished run's files into figures (no model judges
anything); `harness` copies material, starts headless runs as subprocesses of the CLI
and collects scores; `report` writes EVAL.json, EVAL.md and eval.svg; `command` is the
`horde-tui eval` subcommand. Runs are read only through their files on disk (the
ledger via the store's read API, MANIFEST.json, ACCEPTANCE.json, events.jsonl), so the
harness does not depend on how the supervisor is built.
"""
