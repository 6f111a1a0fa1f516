"""The rail over stdio, for one local user: what `memorybank mcp` runs for Claude Desktop, Claude Code and the like.

Local trust: whoever can start the process acts as the user it was started for, with
both scopes, exactly as they could by opening the database file themselves. stdout
carries the protocol, so nothing else may ever be printed there.
"""

from __future__ import annotations

from typing import Any

import attrs
from mcp.server import Server
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp

from adapters_mcp.catalog import Catalog
from adapters_mcp.server import build_server
from adapters_mcp.tools import CAPABILITY_TIMEOUT_SECONDS, CapabilityRail
from memorybank_core import READ_SCOPE, WRITE_SCOPE, Principal


@attrs.frozen(kw_only=True)
class LocalPrincipal:
    """The one user a local (stdio) rail acts for."""

    user_id: str
    organization_id: str
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})


def build_local_server(
    bank_app: ASGIApp,
    principal: Principal,
    *,
    catalog: Catalog,
    timeout: float = CAPABILITY_TIMEOUT_SECONDS,
) -> Server[Any]:
    """The rail for `principal` alone, over `bank_app` (the REST app, called in-process).

    Raises:
        CatalogError: the REST app's routes give an unsound catalog.
    """
    rail = CapabilityRail(catalog, bank_app, timeout=timeout)
    return build_server(rail, lambda _ctx: principal)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` on this process's stdin and stdout until the client closes stdin."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
