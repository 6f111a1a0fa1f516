"""The composition root: indexer -> storage -> MemoryBank -> HTTP app and MCP rail. The only place the parts are wired.

Every function takes what it needs as arguments; nothing here runs at import time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request

from adapters_http import Authenticate, bearer_resolver, create_app
from adapters_http.panel import PanelSignIn, bearer_or_session, panel_routes, session_cookie_resolver
from adapters_mysql import DatabaseMissingError, SqlStorage, create_database, open_storage
from adapters_oidc import IssuerTokenVerifier
from memorybank.settings import DatabaseChoice, prepare_embedded_directory
from memorybank_core import Clock, EventSink, MemoryBank, PanelSessions, Principal, TokenService
from memorybank_core.tokens import SECRET_PREFIX
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


def open_storage_for_migration(choice: DatabaseChoice) -> tuple[SqlStorage, bool]:
    """Open the chosen database without any schema check, for `memorybank migrate`; True if it was created.

    A MySQL database the server lacks is created (utf8mb4), as migrate is the install step.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL.
        CreateDatabaseRefusedError: the database is missing and the account may not create it;
            the message holds the statement to run.
        UnavailableError: the database cannot be reached.
        OSError: the embedded database's directory cannot be created.
    """
    try:
        return _open_storage(choice), False
    except DatabaseMissingError:
        create_database(choice.url)
        return _open_storage(choice), True


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


def credential_check(tokens: TokenService, issuers: IssuerTokenVerifier | None) -> Authenticate:
    """The bearer check of the standalone server: exactly one kind of credential decides each request.

    A secret with the built-in prefix (`mbk_`) is looked up in the token store and nowhere else;
    anything else goes to the configured issuers (a JWT, or an opaque token for introspection), and
    without issuers it is unknown. No credential is ever tried against both.
    """
    if issuers is None:
        return tokens.authenticate

    def authenticate(secret: str) -> Principal | None:
        if secret.startswith(SECRET_PREFIX):
            return tokens.authenticate(secret)
        return issuers.authenticate(secret)

    return authenticate


def build_app(
    services: Services,
    *,
    bind_host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    issuers: IssuerTokenVerifier | None = None,
) -> Starlette:
    """The standalone app: the REST API, the management panel at `/` and the MCP rail at `/mcp/agent`.

    Bearer tokens from the same database authenticate every request, and with `issuers`
    access tokens from the configured OAuth issuers too (see `credential_check`); the
    protected-resource metadata then lists those issuers, and every bearer challenge names it.
    `bind_host` sets the rail's DNS-rebinding protection (a loopback bind serves loopback
    host names only); `allowed_hosts` adds the names a reverse proxy forwards
    (`adapters_mcp.transport_security`). The panel's session cookie authenticates the REST API too, on the
    panel's own same-origin calls only (`build_rest_app`). Without the `mcp` extra the REST
    API and the panel (without its copy-prompt button) are served alone, with a warning
    naming the install.
    """
    authenticate = credential_check(services.tokens, issuers)
    try:
        require_mcp()
    except McpUnavailableError as error:
        logger.warning("the MCP rail at /mcp/agent is off: %s", error)
        return build_rest_app(services, authenticate=authenticate, prompt="")
    from adapters_mcp import (  # see require_mcp
        MEMORY_BANK_PROMPT,
        METADATA_PATH,
        RAIL_PATH,
        RAIL_SCOPES,
        create_host_app,
        create_mcp_mount,
        default_catalog,
    )

    # The OAuth resource identifier is the rail's URL; the server's public base is what precedes its path.
    public_url = issuers.settings.resource.removesuffix(RAIL_PATH) if issuers else None
    rest = build_rest_app(
        services,
        authenticate=authenticate,
        prompt=MEMORY_BANK_PROMPT,
        resource_metadata_url=f"{public_url}{METADATA_PATH}" if public_url else None,
    )
    mount = create_mcp_mount(
        rest,
        authenticate,
        catalog=default_catalog(),
        bind_host=bind_host,
        allowed_hosts=allowed_hosts,
        public_url=public_url,
        authorization_servers=issuers.settings.issuers if issuers else (),
        scopes_supported=issuers.settings.scopes_supported if issuers else RAIL_SCOPES,
    )
    return create_host_app(rest, mount)


def build_rest_app(
    services: Services,
    *,
    authenticate: Authenticate,
    prompt: str,
    resource_metadata_url: str | None = None,
) -> Starlette:
    """The REST API and the management panel: a bearer credential, or the panel's session cookie on panel calls.

    `authenticate` checks bearer credentials (see `credential_check`); a credential pasted into
    the panel's sign-in page is checked by it too. `prompt` is the text of the panel's
    copy-prompt button (empty hides it).
    """
    resolver = bearer_or_session(bearer_resolver(authenticate), session_cookie_resolver(services.panel_sessions))
    sign_in = PanelSignIn(sessions=services.panel_sessions, authenticate_token=authenticate)
    return create_app(
        services.bank,
        resolver,
        resource_metadata_url=resource_metadata_url,
        panel=panel_routes(sign_in=sign_in, prompt=prompt),
    )


async def _no_network_caller(_request: Request) -> Principal | None:
    return None


def build_local_rail(services: Services, *, user_id: str, org_id: str) -> Server[Any]:
    """The MCP rail for one local user with both scopes (local trust), for `memorybank mcp` on stdio.

    Its REST app accepts no network caller: capabilities run in-process as that user only.

    Raises:
        McpUnavailableError: the `mcp` extra is not installed.
    """
    require_mcp()
    from adapters_mcp import LocalPrincipal, build_local_server, default_catalog  # see require_mcp

    rest = create_app(services.bank, _no_network_caller)
    principal = LocalPrincipal(user_id=user_id, organization_id=org_id)
    return build_local_server(rest, principal, catalog=default_catalog())


def require_mcp() -> None:
    """Import the MCP facade now, or say that its extra is missing.

    The facade is imported where it is used, not at the top of this module: the MCP SDK
    takes about a second to import, and the token and migrate commands never need it.

    Raises:
        McpUnavailableError: the `mcp` extra is not installed.
    """
    try:
        # The package itself imports lazily; its transports are what need the SDK.
        import adapters_mcp.http_transport
        import adapters_mcp.stdio_transport  # noqa: F401 - imported for the check; callers import names from it
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in MCP_EXTRA_MODULES:
            raise McpUnavailableError(f"the MCP SDK is not installed: {MCP_INSTALL_HINT}") from error
        raise
