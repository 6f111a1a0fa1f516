"""The memory bank's MCP facade: the two-tool capability rail over the REST routes.

A host imports from here: `create_mcp_mount` (+ `create_host_app`) to serve the rail at
`/mcp/agent` beside its REST API, `build_local_server` + `serve_stdio` for one local user
over stdio, and `MEMORY_BANK_PROMPT`, the `## Memory Bank` section to append to an
agent's prompt. The capability catalog (`build_catalog`) and the tools (`CapabilityRail`)
are public for hosts that assemble their own server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Names are imported on first use (PEP 562): the MCP SDK takes about a second to import, and
# `memorybank prompt` needs only the prompt's text.
if TYPE_CHECKING:
    from adapters_http import Authenticate
    from adapters_mcp.catalog import (
        BLOCKED_OPERATION_IDS,
        BLOCKED_TAGS,
        SAFE_INCLUDED_TAGS,
        Capability,
        Catalog,
        CatalogError,
        build_catalog,
        default_catalog,
        is_exposed,
    )
    from adapters_mcp.http_transport import (
        METADATA_PATH,
        RAIL_PATH,
        RAIL_SCOPES,
        BearerGate,
        McpMount,
        create_host_app,
        create_mcp_mount,
        transport_security,
    )
    from adapters_mcp.prompt import MEMORY_BANK_PROMPT, PROMPT_NAME
    from adapters_mcp.ranking import RankedCapability, rank
    from adapters_mcp.server import build_server
    from adapters_mcp.stdio_transport import LocalPrincipal, build_local_server, serve_stdio
    from adapters_mcp.tools import (
        CAPABILITY_TIMEOUT_SECONDS,
        EXECUTE_TOOL,
        SEARCH_TOOL,
        TOOL_NAMES,
        CapabilityRail,
        tool_definitions,
    )

#: The modules holding the public names, cheapest first.
_HOMES = (
    "adapters_mcp.prompt",
    "adapters_mcp.catalog",
    "adapters_mcp.ranking",
    "adapters_mcp.tools",
    "adapters_mcp.server",
    "adapters_mcp.http_transport",
    "adapters_mcp.stdio_transport",
)


def __getattr__(name: str) -> object:
    if name in __all__:
        for home in _HOMES:
            found = vars(importlib.import_module(home))
            if name in found:
                globals()[name] = found[name]
                return found[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BLOCKED_OPERATION_IDS",
    "BLOCKED_TAGS",
    "CAPABILITY_TIMEOUT_SECONDS",
    "EXECUTE_TOOL",
    "MEMORY_BANK_PROMPT",
    "METADATA_PATH",
    "PROMPT_NAME",
    "RAIL_PATH",
    "RAIL_SCOPES",
    "SAFE_INCLUDED_TAGS",
    "SEARCH_TOOL",
    "TOOL_NAMES",
    "Authenticate",
    "BearerGate",
    "Capability",
    "CapabilityRail",
    "Catalog",
    "CatalogError",
    "LocalPrincipal",
    "McpMount",
    "RankedCapability",
    "build_catalog",
    "build_local_server",
    "build_server",
    "create_host_app",
    "create_mcp_mount",
    "default_catalog",
    "is_exposed",
    "rank",
    "serve_stdio",
    "tool_definitions",
    "transport_security",
]
