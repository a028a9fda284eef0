"""The MCP server: one `horde` tool, the ledgers as resources, the protocol as a prompt.

Every call goes to `protocol.run_action`, the dispatcher the member's own tool and
`horde-tui tool` call, as the seat's member in the seat's run: the same schema, rules,
texts and `requestId` replays. A refusal or a malformed call is a tool error carrying
the dispatcher's one line, which the agent reads and recovers from. Calls run one at a
time in a worker thread (the store is one writer per process), so a lock wait never
stalls the transport.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from horde_tui import __version__
from horde_tui.common import prompts
from horde_tui.mcp.seat import Seat, finished_refusal
from horde_tui.protocol import run_action
from horde_tui.protocol.params import ACTION_MODELS, ReadParams
from horde_tui.protocol.schema import tool_schema
from horde_tui.store.paths import LEDGER_FILES
from horde_tui.store.store import HordeStore

PROMPT_NAME = "horde-member"
LEDGER_URI = "horde://ledger/"
RUN_URI = "horde://run/"
RUN_FILES = ("TASK.md", "ANSWER.md", "SYSTEM.md")
MCP_NOTE = """\
## Through MCP
You reach the horde through the `horde` MCP tool of the server you were given; use your
own tools to read files and run commands. Every `horde` call is one action:
{{"action": "...", ...fields}}. The ledgers are also MCP resources ({ledgers}).
Retry a write with the same `requestId` when you are unsure it landed: it is written once.
"""


class HordeServer:
    """The handlers of one seat's server; `server()` wires them into the SDK."""

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.store = HordeStore(seat.horde_dir, seat.name)
        self.limiter = anyio.CapacityLimiter(1)
        definition = tool_schema()["function"]
        self.tool = types.Tool(
            name=definition["name"],
            description=(f"{definition['description']}\nYou act as {seat.name} in run {seat.run}."),
            input_schema=definition["parameters"],
        )

    # -- the horde tool ---------------------------------------------------------------------

    def call(self, arguments: dict[str, Any]) -> tuple[bool, str]:
        """One `horde` call through the one dispatcher: (ok, its text). A write in a run
        that finished while the server ran is refused in one line; reads still answer."""
        model = ACTION_MODELS.get(str(arguments.get("action")))
        if model is not None and not issubclass(model, ReadParams):
            finished = finished_refusal(self.seat.horde_dir, self.seat.run)
            if finished:
                return False, finished
        result = run_action(self.store, arguments, run=self.seat.run, role="member")
        return result.ok, result.text

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self.tool])

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != "horde":
            ok, text = False, f"usage: unknown tool {params.name!r}; the one tool is 'horde'"
        else:
            arguments = dict(params.arguments or {})
            ok, text = await anyio.to_thread.run_sync(
                functools.partial(self.call, arguments), limiter=self.limiter
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=not ok
        )

    # -- resources: the ledgers and the run's files -------------------------------------------

    def _resource_paths(self) -> dict[str, Path]:
        paths = self.store.paths
        found = {f"{LEDGER_URI}{name}": paths.root / name for name in LEDGER_FILES.values()}
        run_dir = paths.run_dir(self.seat.run)
        for name in RUN_FILES:
            found[f"{RUN_URI}{self.seat.run}/{name}"] = run_dir / name
        return found

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        root = self.store.paths.root
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=uri,
                    name=path.name,
                    mime_type="text/markdown",
                    # Relative to the horde directory: remote members read the listing,
                    # and the serving machine's paths are none of their business.
                    description=f"{path.relative_to(root)} in the horde directory",
                )
                for uri, path in self._resource_paths().items()
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        path = self._resource_paths().get(uri)
        if path is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown resource {uri!r}; list the resources for the ledgers and run files",
            )
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            text = f"({path.name} is not written yet)\n"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    # -- the member protocol as a prompt ----------------------------------------------------

    def prompt_text(self) -> str:
        """The run's SYSTEM.md (else the protocol), how MCP reaches it, then the first
        message a member of the run gets: who it is, the task, the directory's brief."""
        run_dir = self.store.paths.run_dir(self.seat.run)
        try:
            system = (run_dir / "SYSTEM.md").read_text(encoding="utf-8")
        except OSError:
            system = prompts.system_prompt()
        try:
            task = (run_dir / "TASK.md").read_text(encoding="utf-8")
        except OSError:
            task = f"Work the ledgers of run {self.seat.run}: `horde list` shows the ideas."
        ledgers = ", ".join(f"{LEDGER_URI}{n}" for n in ("IDEAS.md", "FINDINGS.md", "BOARD.md"))
        first = prompts.first_message(task, self.seat.name, "member", self.seat.workdir)
        return "\n".join(
            [
                system.rstrip(),
                "",
                MCP_NOTE.format(ledgers=ledgers).rstrip(),
                "",
                f"You are {self.seat.name}, an external member of run {self.seat.run}.",
                "",
                first,
            ]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PROMPT_NAME,
                    description=f"The horde member protocol and task, as {self.seat.name}",
                )
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown prompt {params.name!r}; the one is {PROMPT_NAME}"
            )
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=self.prompt_text())
        )
        return types.GetPromptResult(description="The horde member protocol", messages=[message])

    def server(self) -> Server[Any]:
        return Server(
            "horde",
            version=__version__,
            instructions=(
                f"The horde's shared ledgers. You act as {self.seat.name} in run "
                f"{self.seat.run}; get the prompt {PROMPT_NAME!r} for the protocol and task."
            ),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )


async def serve_stdio(seat: Seat) -> None:
    """Serve the seat over this process's stdin and stdout until the client closes."""
    from mcp.server.stdio import stdio_server

    server = HordeServer(seat).server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
