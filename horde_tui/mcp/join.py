"""`horde-tui join RUN --agent ...`: what an agent needs to join a run through MCP.

For each agent, the exact configuration that mounts `horde-tui mcp` for the run (as that
agent's own files spell it), plus the brief to paste into its first message. `--write`
puts the configuration where the agent reads a project's configuration (Claude Code
`.mcp.json`, OpenCode `opencode.json`, Codex `.codex/config.toml`), merged with what is
there; Goose has no project file, so its extension goes next to the run's files and the
printed `goose session --with-extension` line uses it. With `--url`, the snippet mounts a
remote `horde-tui mcp --http` server instead, its token read from `HORDE_MCP_TOKEN`.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from horde_tui.store.paths import atomic_write_text

AGENTS = ("claude", "codex", "opencode", "goose")
SERVER = "horde"
TOKEN_ENV = "HORDE_MCP_TOKEN"

BRIEF = """\
You are joining horde run {run} as an external member, next to other agents working
the same task in this directory. You coordinate with them ONLY through the `horde` MCP
tool (server `{server}`): one action per call, {{"action": "...", ...fields}}.
1. Get the MCP prompt `horde-member` (the protocol and the task), or read
   .horde/runs/{run}/TASK.md and .horde/runs/{run}/SYSTEM.md.
2. `list` the ideas and read `findings`; claim ONE open idea (`claim id=#N`) or add one.
3. Investigate with your own tools; file a `finding` with exact evidence (paths:lines,
   command output), `review` other members' findings, close ideas with `done` or
   `rule-out`.
4. Never edit .horde/ by hand. A refusal says which rule and what to do: follow it.
   Retry a write with the same `requestId` when unsure it landed.
5. When you hold no idea and have nothing to add, `post` a one-line summary and stop.
"""


@dataclass(frozen=True)
class Mount:
    """How to start (or reach) the server for one run."""

    run: str
    horde_dir: Path
    member: str
    url: str | None = None

    @property
    def command(self) -> list[str]:
        """`horde-tui mcp ...` by absolute path, so the agent's PATH does not matter."""
        exe = Path(sys.executable).parent / "horde-tui"
        head = [str(exe)] if exe.exists() else [sys.executable, "-m", "horde_tui"]
        return [*head, "mcp", "--run", self.run, "--member", self.member]

    @property
    def env(self) -> dict[str, str]:
        return {"HORDE_DIR": str(self.horde_dir)}


def claude(m: Mount) -> dict[str, object]:
    if m.url:
        entry: dict[str, object] = {
            "type": "http",
            "url": m.url,
            "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
        }
    else:
        entry = {"type": "stdio", "command": m.command[0], "args": m.command[1:], "env": m.env}
    return {"mcpServers": {SERVER: entry}}


def opencode(m: Mount) -> dict[str, object]:
    if m.url:
        entry: dict[str, object] = {
            "type": "remote",
            "url": m.url,
            "enabled": True,
            "headers": {"Authorization": f"Bearer {{env:{TOKEN_ENV}}}"},
        }
    else:
        entry = {"type": "local", "command": m.command, "enabled": True, "environment": m.env}
    return {"$schema": "https://opencode.ai/config.json", "mcp": {SERVER: entry}}


def codex(m: Mount) -> str:
    q = json.dumps  # a JSON string is a valid TOML basic string
    lines = [f"[mcp_servers.{SERVER}]"]
    if m.url:
        lines += [f"url = {q(m.url)}", f"bearer_token_env_var = {q(TOKEN_ENV)}"]
    else:
        lines += [
            f"command = {q(m.command[0])}",
            f"args = [{', '.join(q(a) for a in m.command[1:])}]",
            f"env = {{ {', '.join(f'{k} = {q(v)}' for k, v in m.env.items())} }}",
        ]
    return "\n".join(lines) + "\n"


def goose(m: Mount) -> str:
    q = json.dumps  # a JSON string is a valid YAML scalar
    lines = ["extensions:", f"  {SERVER}:", f"    name: {SERVER}", "    enabled: true"]
    if m.url:
        lines += [
            "    type: streamable_http",
            f"    uri: {q(m.url)}",
            f"    headers: {{Authorization: {q('Bearer $' + TOKEN_ENV)}}}",
        ]
    else:
        lines += [
            "    type: stdio",
            f"    cmd: {q(m.command[0])}",
            f"    args: [{', '.join(q(a) for a in m.command[1:])}]",
            f"    envs: {{{', '.join(f'{k}: {q(v)}' for k, v in m.env.items())}}}",
        ]
    lines.append("    timeout: 300")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Snippet:
    agent: str
    text: str
    target: Path
    """Where `--write` puts it."""
    how: str
    """One line: where the text goes and how the agent picks it up."""


def snippet(agent: str, m: Mount) -> Snippet:
    workdir = m.horde_dir.parent
    if agent == "claude":
        return Snippet(
            agent,
            json.dumps(claude(m), indent=2) + "\n",
            workdir / ".mcp.json",
            "Claude Code reads .mcp.json in the project directory (approve the server once).",
        )
    if agent == "opencode":
        return Snippet(
            agent,
            json.dumps(opencode(m), indent=2) + "\n",
            workdir / "opencode.json",
            "OpenCode reads opencode.json in the project directory.",
        )
    if agent == "codex":
        return Snippet(
            agent,
            codex(m),
            workdir / ".codex" / "config.toml",
            "Codex reads ~/.codex/config.toml ($CODEX_HOME/config.toml); trusted projects "
            "also .codex/config.toml.",
        )
    target = m.horde_dir / "runs" / m.run / "goose-extension.yaml"
    start = (
        "goose session --with-remote-extension " + shlex.quote(m.url)
        if m.url
        else "goose session --with-extension "
        + shlex.quote(" ".join([*(f"{k}={v}" for k, v in m.env.items()), *m.command]))
    )
    return Snippet(
        agent,
        goose(m),
        target,
        f"Goose: add this under extensions in ~/.config/goose/config.yaml, or start {start}",
    )


def render(agent: str, m: Mount) -> str:
    """Everything `join` prints: the snippet, where it goes, and the brief to paste."""
    s = snippet(agent, m)
    brief = BRIEF.format(run=m.run, server=SERVER)
    token = f"# Set {TOKEN_ENV} to the server's token (its mcp-token file) first.\n"
    return (
        f"# {agent}: mount the horde MCP server for run {m.run} ({s.target.name})\n"
        f"# {s.how}\n{token if m.url else ''}{s.text}\n"
        f"# Brief to paste as the agent's first message:\n\n{brief}"
    )


def write(agent: str, m: Mount) -> Path:
    """Merge the snippet into the agent's file (other servers kept); return its path."""
    s = snippet(agent, m)
    s.target.parent.mkdir(parents=True, exist_ok=True)
    if agent in ("claude", "opencode"):
        data = json.loads(s.text)
        try:
            existing = json.loads(s.target.read_text(encoding="utf-8"))
        except FileNotFoundError:
            existing = {}
        if not isinstance(existing, dict):
            raise ValueError(f"{s.target} is not a JSON object; fix or move it, then retry")
        section = "mcpServers" if agent == "claude" else "mcp"
        servers = existing.get(section)
        merged = {**existing, **{k: v for k, v in data.items() if k not in existing}}
        merged[section] = {**(servers if isinstance(servers, dict) else {}), **data[section]}
        atomic_write_text(s.target, json.dumps(merged, indent=2) + "\n")
    elif agent == "codex":
        try:
            text = s.target.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        if f"[mcp_servers.{SERVER}]" in text:
            raise ValueError(
                f"{s.target} already has [mcp_servers.{SERVER}]; remove that table, then retry"
            )
        atomic_write_text(
            s.target, text + ("\n" if text and not text.endswith("\n") else "") + s.text
        )
    else:
        atomic_write_text(s.target, s.text)
    return s.target
