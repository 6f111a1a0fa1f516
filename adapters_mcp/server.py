"""The MCP server: the rail's two tools and the Memory Bank prompt on the SDK's low-level `Server`.

The low-level server sends our JSON Schemas exactly as written and lets every tool
failure be a tool result; the rail validates arguments itself (see `tools`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from adapters_mcp.memory_switch import memory_on
from adapters_mcp.prompt import MEMORY_BANK_PROMPT, PROMPT_DESCRIPTION, PROMPT_NAME, PROMPT_TITLE
from adapters_mcp.tools import CapabilityRail, UnknownToolError
from memorybank_core import Principal

SERVER_NAME = "memorybank"
SERVER_TITLE = "Memory Bank"
SERVER_VERSION = "0.1.0"

PrincipalOf = Callable[[ServerRequestContext[Any, Any]], Principal | None]
"""Who is calling, from a request context: the HTTP transport reads its auth, stdio has one local user."""

NOT_AUTHENTICATED = "not_authenticated"


class _SwitchableServer(Server[Any]):
    """The SDK's server, whose instructions (the `## Memory Bank` section) are left out while memory is off.

    The SDK reads `instructions` when it answers `initialize` (and `server/discover`), inside the
    request, so the caller's switch (adapters_mcp.memory_switch) decides per request.
    """

    _memory_instructions: str | None = None

    @property
    def instructions(self) -> str | None:
        return self._memory_instructions if memory_on() else None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._memory_instructions = value


def build_server(rail: CapabilityRail, principal_of: PrincipalOf, *, name: str = SERVER_NAME) -> Server[Any]:
    """A low-level MCP server exposing `rail`'s two tools and the Memory Bank prompt (also its instructions).

    While memory is switched off for the caller, the prompt and the instructions are left out.
    """

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=rail.tools())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        principal = principal_of(ctx)
        if principal is None:
            # The HTTP transport refuses unauthenticated requests before they get here; this is a wiring bug.
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f'{{"error": "{NOT_AUTHENTICATED}"}}')], is_error=True
            )
        try:
            return await rail.call(params.name, params.arguments, principal)
        except UnknownToolError:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}") from None

    async def list_prompts(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt_definition()] if memory_on() else [])

    async def get_prompt(
        _ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT_NAME or not memory_on():
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return prompt_result()

    return _SwitchableServer(
        name,
        version=SERVER_VERSION,
        title=SERVER_TITLE,
        description="A per-user memory bank: save, search, list and delete memories through two tools.",
        instructions=MEMORY_BANK_PROMPT,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def prompt_definition() -> types.Prompt:
    """The prompt as `prompts/list` shows it."""
    return types.Prompt(name=PROMPT_NAME, title=PROMPT_TITLE, description=PROMPT_DESCRIPTION, arguments=[])


def prompt_result() -> types.GetPromptResult:
    """The prompt as `prompts/get` returns it: one user message carrying the section."""
    return types.GetPromptResult(
        description=PROMPT_DESCRIPTION,
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=MEMORY_BANK_PROMPT))],
    )
