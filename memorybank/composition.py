"""The composition root: indexer -> storage -> MemoryBank -> HTTP app and MCP rail. The only place the parts are wired.

Every function takes what it needs as arguments; nothing here runs at import time.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request

from adapters_http import bearer_token_resolver, create_app
from adapters_http.panel import PanelSignIn, bearer_or_session, panel_routes, session_cookie_resolver
from adapters_mysql import SqlStorage, open_storage
from memorybank.settings import DatabaseChoice, prepare_embedded_directory
from memorybank_core import Clock, EventSink, MemoryBank, PanelSessions, Principal, TokenService
from memorybank_search import OwnerIndexer

if TYPE_CHECKING:
    from mcp.server import Server

#: Third-party packages of the `mcp` extra (pip install 'memorybank[mcp]').
MCP_EXTRA_MODULES = frozenset({"mcp", "mcp_types", "jsonschema"})
MCP_INSTALL_HINT = "pip install 'memorybank[mcp]'"

logger = logging.getLogger("memorybank")


class McpUnavailableError(RuntimeError):
    """The MCP SDK (the `mcp` extra) is not installed."""


def open_ready_storage(choice: DatabaseChoice) -> SqlStorage:
    """Open the chosen database and make sure its schema is the one this version serves.

    SQLite is embedded, so it is initialized in place (created on first use). A MySQL
    schema is never changed here: a missing, behind or index-less schema is refused
    with a message naming `memorybank migrate`.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not ready; the message names the fix.
        OSError: the embedded database's directory cannot be created.
    """
    storage = _open_storage(choice)
    try:
        if storage.dialect_name == "sqlite":
            storage.initialize()
        storage.check_ready()
    except BaseException:
        storage.close()
        raise
    return storage


def open_storage_for_migration(choice: DatabaseChoice) -> SqlStorage:
    """Open the chosen database without any schema check, for `memorybank migrate`.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL.
        UnavailableError: the database cannot be reached.
        OSError: the embedded database's directory cannot be created.
    """
    return _open_storage(choice)


def _open_storage(choice: DatabaseChoice) -> SqlStorage:
    prepare_embedded_directory(choice)
    # The one indexer of the process: the store writes its documents and the engine reads them.
    return open_storage(choice.url, indexer=OwnerIndexer())


@attrs.frozen(kw_only=True)
class Services:
    """The wired use cases over one storage."""

    bank: MemoryBank
    tokens: TokenService
    panel_sessions: PanelSessions


def build_services(storage: SqlStorage, *, clock: Clock | None = None, events: EventSink | None = None) -> Services:
    """The bank, the token service and the panel's sessions over `storage`."""
    return Services(
        bank=MemoryBank(store=storage.store, search_engine=storage.search_engine, clock=clock, events=events),
        tokens=TokenService(store=storage.token_store, clock=clock),
        panel_sessions=PanelSessions(store=storage.panel_sessions, clock=clock),
    )


def build_app(services: Services, *, bind_host: str = "127.0.0.1") -> Starlette:
    """The standalone app: the REST API, the management panel at `/` and the MCP rail at `/mcp/agent`.

    Bearer tokens from the same database authenticate the API and the rail; the panel's
    session cookie authenticates the API too, on the panel's own same-origin calls only.
    `bind_host` sets the rail's DNS-rebinding protection (a loopback bind serves loopback
    host names only). Without the `mcp` extra the REST API and the panel (without its
    copy-prompt button) are served alone, with a warning naming the install.
    """
    try:
        require_mcp()
    except McpUnavailableError as error:
        logger.warning("the MCP rail at /mcp/agent is off: %s", error)
        return build_rest_app(services, prompt="")
    from adapters_mcp import MEMORY_BANK_PROMPT, create_host_app, create_mcp_mount  # see require_mcp

    rest = build_rest_app(services, prompt=MEMORY_BANK_PROMPT)
    return create_host_app(rest, create_mcp_mount(rest, services.tokens.authenticate, bind_host=bind_host))


def build_rest_app(services: Services, *, prompt: str) -> Starlette:
    """The REST API and the management panel: bearer tokens or the panel's session cookie (panel calls only).

    `prompt` is the text of the panel's copy-prompt button (empty hides it).
    """
    resolver = bearer_or_session(
        bearer_token_resolver(services.tokens), session_cookie_resolver(services.panel_sessions)
    )
    sign_in = PanelSignIn(sessions=services.panel_sessions, authenticate_token=services.tokens.authenticate)
    return create_app(services.bank, resolver, panel=panel_routes(sign_in=sign_in, prompt=prompt))


async def _no_network_caller(_request: Request) -> Principal | None:
    return None


def build_local_rail(services: Services, *, user_id: str, org_id: str) -> Server[Any]:
    """The MCP rail for one local user with both scopes (local trust), for `memorybank mcp` on stdio.

    Its REST app accepts no network caller: capabilities run in-process as that user only.

    Raises:
        McpUnavailableError: the `mcp` extra is not installed.
    """
    require_mcp()
    from adapters_mcp import LocalPrincipal, build_local_server  # see require_mcp

    rest = create_app(services.bank, _no_network_caller)
    return build_local_server(rest, LocalPrincipal(user_id=user_id, organization_id=org_id))


def require_mcp() -> None:
    """Import the MCP facade now, or say that its extra is missing.

    The facade is imported where it is used, not at the top of this module: the MCP SDK
    takes about a second to import, and the token and migrate commands never need it.

    Raises:
        McpUnavailableError: the `mcp` extra is not installed.
    """
    try:
        import adapters_mcp  # noqa: F401 - imported for the check; callers import names from it
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in MCP_EXTRA_MODULES:
            raise McpUnavailableError(f"the MCP SDK is not installed: {MCP_INSTALL_HINT}") from error
        raise
