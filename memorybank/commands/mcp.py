"""`memorybank mcp`: the MCP rail on stdio for one local user; `memorybank prompt`: the agent prompt."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TextIO

from memorybank import semantic
from memorybank.commands.base import CommandError, Shared, Subcommands
from memorybank.settings import Settings, add_arguments
from memorybank_core import ids
from memorybank_core.distribution import install_command


def register(commands: Subcommands, shared: Shared) -> None:
    mcp = commands.add_parser(
        "mcp",
        parents=[shared.database],
        help="serve the MCP rail on stdio for one local user",
        description="Serve the capability rail (search_capabilities, execute_capability) on stdin/stdout for "
        "one local user with both scopes, for MCP clients such as Claude Desktop or Claude Code. stdout "
        "carries the protocol; messages go to stderr. The embedded SQLite database is created on first use.",
    )
    mcp.add_argument("--user", metavar="usr_…", required=True, help="the user whose memories the rail acts on")
    mcp.add_argument("--org", metavar="org_…", required=True, help="the user's organization (recorded on saves)")
    add_arguments(mcp, "mcp")
    mcp.set_defaults(run=run_mcp)

    prompt = commands.add_parser(
        "prompt",
        help="print the `## Memory Bank` agent prompt",
        description="Print the `## Memory Bank` section to append to an agent's prompt, for harnesses that do "
        "not read MCP server instructions.",
    )
    prompt.set_defaults(run=run_prompt, db=None)


def run_mcp(args: argparse.Namespace, settings: Settings, _out: TextIO) -> None:
    import anyio

    from memorybank import bootstrap

    _require_mcp()
    from adapters_mcp.stdio_transport import serve_stdio  # see composition.require_mcp

    # Validate before touching the database, so a typo in a client's config is reported at once.
    ids.parse_id(args.user, prefix=ids.USER_PREFIX, field="user")
    ids.parse_id(args.org, prefix=ids.ORGANIZATION_PREFIX, field="org")
    with bootstrap.build(semantic.serving_default(settings)) as runtime:
        server = runtime.local_rail(user_id=args.user, org_id=args.org)
        # stdout is the protocol: every message goes to stderr, which MCP clients keep as the server's log.
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
        runtime.fill_vectors()  # hybrid search: memories saved without a vector get one in the background
        anyio.run(serve_stdio, server)


def run_prompt(_args: argparse.Namespace, _settings: Settings, out: TextIO) -> None:
    # Plain text: needs neither the MCP SDK nor the database.
    from adapters_mcp.prompt import MEMORY_BANK_PROMPT

    out.write(MEMORY_BANK_PROMPT)


def _require_mcp() -> None:
    from memorybank import composition

    try:
        composition.require_mcp(stdio_only=True)
    except composition.McpUnavailableError as error:
        raise CommandError(f"this command needs the MCP SDK: {install_command(composition.MCP_EXTRA)}") from error
