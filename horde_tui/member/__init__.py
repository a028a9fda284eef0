"""The member process: one LLM agent of a horde, a small child process.

It imports only the stdlib, the protocol and the store (never litellm, Textual or
pydantic-heavy code), because up to twelve of them run at once. `tools` holds the file
tools and their model-facing definitions; the model's untrusted shell commands run
through `horde_tui.sandbox` (a refusal list, a scrubbed environment, bubblewrap where it
can run, a timeout and truncated output), which the supervisor's cleanup shares.
"""
