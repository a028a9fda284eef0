"""`horde-tui mcp` and `horde-tui join`: the `horde` tool as an MCP server.

Any agent that takes MCP tools (Claude Code, Codex, OpenCode, Goose, ...) joins a run as
a member through it. The server calls the one dispatcher (`protocol.run_action`) that
the member's tool and `horde-tui tool` call, so schema, rules, texts and `requestId`
replays are theirs. Only `server.py` and `http.py` import the `mcp` SDK, and only the
`mcp` subcommand imports them: `horde-tui tool` and the members never pay for it.
"""
