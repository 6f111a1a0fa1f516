"""The rail over streamable HTTP at `/mcp/agent`, inside the host's Starlette app, behind its bearer tokens.

Stateless and JSON-answering, like the reference host: each POST is served on its
own, so a one-shot `tools/call` without `initialize` works as well as a full session,
and nothing is kept between requests. The caller is authenticated on every request
by the same token check as the REST API; the MCP SDK's own OAuth middleware is not
used because its error answers differ from the reference host's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import MAX_BODY_BYTES, Authenticate, ResponseHeadersMiddleware, bearer_secret, error_response
from adapters_http.refusals import RailTokenMissingError
from adapters_mcp.catalog import Catalog
from adapters_mcp.exchange import MCP_PRINCIPAL_KEY, RailEndpoint, quiet_stateless_teardown, rail_principal
from adapters_mcp.memory_switch import MemoryEnabled
from adapters_mcp.server import build_server
from adapters_mcp.tools import CAPABILITY_TIMEOUT_SECONDS, CapabilityRail
from memorybank_core import READ_SCOPE, WRITE_SCOPE, Principal, UnavailableError
from memorybank_core.ports import UnitOfWork

MOUNT_PATH = "/mcp"
AGENT_PATH = "/agent"
RAIL_PATH = MOUNT_PATH + AGENT_PATH
"""Where the rail answers: `/mcp/agent`, as on the reference host."""
METADATA_PATH = "/.well-known/oauth-protected-resource" + RAIL_PATH
"""The OAuth protected-resource metadata (RFC 9728) of the rail, served at the host's root."""

RAIL_SCOPES: tuple[str, ...] = (READ_SCOPE, WRITE_SCOPE)


logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_SAFE_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def transport_security(bind_host: str, allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection (Host and Origin checks) for the rail.

    With `allowed_hosts` (`name` or `name:port`, `name:*` for any port) only those Host
    headers are served. Without, a loopback bind accepts only loopback names, as the SDK
    would; any other bind turns the check off, because its host names cannot be guessed
    and the bearer token, which a rebinding page never has, already stops such requests.
    """
    hosts = list(allowed_hosts)
    if bind_host in _LOOPBACK_HOSTS:
        hosts += ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    if not hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class BearerGate:
    """ASGI middleware: a live bearer token, or no entry; for a host assembling its own rail app (the mount
    runs the same check inside `adapters_mcp.exchange.RailEndpoint`, in one hop with the gate).

    Answers like the reference host: 401 `missing_mcp_token` / `invalid_mcp_token` and 403
    `insufficient_mcp_scope`, each with a `WWW-Authenticate: Bearer` challenge naming the
    metadata document and the scopes. The 403 is about the rail as a
    protected resource (any rail scope at all); which scope a capability needs is the core's
    decision, made once when it runs. The 403 challenge carries RFC 6750's `insufficient_scope`
    (the body keeps the reference code), so an OAuth client knows to ask for more scope.
    """

    def __init__(self, app: ASGIApp, authenticate: Authenticate, *, public_url: str | None = None) -> None:
        self._app = app
        self._authenticate = authenticate
        self._public_url = public_url.rstrip("/") if public_url else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            principal = await self._principal(Request(scope))
        except Exception as error:
            # Every refusal is a row of the facades' one error table (adapters_http.errors).
            refused = error_response(error, resource_metadata=f"{self._base_url(scope)}{METADATA_PATH}")
            if refused is None:
                raise
            if isinstance(error, UnavailableError):
                logger.warning("mcp.auth token store unavailable")
            await refused(scope, receive, send)
            return
        await self._app({**scope, MCP_PRINCIPAL_KEY: principal}, receive, send)

    async def _principal(self, request: Request) -> Principal:
        """The caller, or the refusal to answer with.

        Raises:
            InvalidInputError: several Authorization headers (400, as on the REST API).
            RailTokenMissingError, RailTokenRefusedError, RailScopeMissingError: no entry (401, 401, 403).
            UnavailableError: the token store or issuer is down (503).
        """
        secret = bearer_secret(request)
        if secret is None:
            raise RailTokenMissingError(RAIL_SCOPES)
        return await run_in_threadpool(rail_principal, self._authenticate, secret, RAIL_SCOPES)

    def _base_url(self, scope: Scope) -> str:
        return self._public_url or base_url(scope)


def base_url(scope: Scope) -> str:
    """`scheme://host[:port]` the client used, from the Host header when it is a plain host name."""
    host = Request(scope).headers.get("host", "")
    if not _SAFE_HOST.match(host):
        # Never echo a malformed Host into a header; fall back to the address the server listens on.
        server = scope.get("server") or ("localhost", None)
        host = f"{server[0]}:{server[1]}" if server[1] else str(server[0])
    return f"{scope.get('scheme', 'http')}://{host}"


def resource_metadata(
    resource: str, authorization_servers: Sequence[str], scopes_supported: Sequence[str] = RAIL_SCOPES
) -> dict[str, Any]:
    """The RFC 9728 protected-resource metadata of the rail."""
    return {
        "resource": resource,
        "authorization_servers": list(authorization_servers),
        "scopes_supported": list(scopes_supported),
        "bearer_methods_supported": ["header"],
    }


@attrs.frozen(kw_only=True)
class McpMount:
    """The rail ready to go into a host's Starlette app: its routes, and the lifespan the host must run.

    `routes` holds `Mount("/mcp", ...)` (the rail at `/mcp/agent`) and the public metadata
    route at `/.well-known/oauth-protected-resource/mcp/agent`. A mounted app's own lifespan
    never runs, so the host's lifespan must enter `lifespan()` (see `create_host_app`).
    """

    routes: tuple[BaseRoute, ...]
    server: Server[Any]
    rail: CapabilityRail

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Runs the SDK's session manager (its task group) for as long as the host app serves."""
        return self.server.session_manager.run()


def _principal_from_request(ctx: ServerRequestContext[Any, Any]) -> Principal | None:
    request = ctx.request
    if not isinstance(request, Request):
        return None
    principal: Principal | None = request.scope.get(MCP_PRINCIPAL_KEY)
    return principal


def create_mcp_mount(
    bank_app: ASGIApp,
    authenticate: Authenticate,
    *,
    catalog: Catalog,
    public_url: str | None = None,
    authorization_servers: Sequence[str] = (),
    scopes_supported: Sequence[str] = RAIL_SCOPES,
    bind_host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    timeout: float = CAPABILITY_TIMEOUT_SECONDS,
    json_response: bool = False,
    memory_enabled: MemoryEnabled | None = None,
    unit_of_work: UnitOfWork | None = None,
) -> McpMount:
    """The rail at `/mcp/agent` over `bank_app` (the REST app its capabilities call in-process).

    `catalog` describes `bank_app`'s capabilities (`default_catalog()` for this package's routes).
    `authenticate` checks bearer secrets (the REST API's own tokens); `public_url`
    (`https://bank.example.com`) names the server in the metadata document and the
    `WWW-Authenticate` challenge when a proxy hides it, else the request's Host is used;
    `authorization_servers` lists OAuth issuers of those tokens, if any, and `scopes_supported` the
    scopes to ask them for (the rail's own unless an issuer names them differently). `bind_host` and
    `allowed_hosts` set the DNS-rebinding protection (see `transport_security`).
    By default each POST is answered as a one-event `text/event-stream`, as the reference
    host does (its own eval reads the SSE `data:` line); every MCP client reads that.
    `json_response=True` answers with plain JSON instead. With `memory_enabled` (the bank's
    `memory_enabled`), a caller whose memory an operator switched off finds no capability and gets
    no `## Memory Bank` instructions (adapters_mcp.memory_switch). `unit_of_work` (the bank's) runs the
    bearer check and that read on one connection.

    Raises:
        CatalogError: the REST app's routes give an unsound catalog.
    """
    rail = CapabilityRail(catalog, bank_app, timeout=timeout)
    server = build_server(rail, _principal_from_request)
    security = transport_security(bind_host, allowed_hosts)
    sdk_app = server.streamable_http_app(
        streamable_http_path=AGENT_PATH,
        stateless_http=True,
        json_response=json_response,
        transport_security=security,
        # The endpoint refuses larger bodies first, in the rail's own error shape; this is the SDK's own guard.
        max_request_body_size=MAX_BODY_BYTES,
    )
    quiet_stateless_teardown()
    fixed_base = public_url.rstrip("/") if public_url else None
    endpoint = RailEndpoint(
        server=server,
        sdk_app=sdk_app,
        rail=rail,
        authenticate=authenticate,
        scopes=RAIL_SCOPES,
        metadata_url=lambda scope: f"{fixed_base or base_url(scope)}{METADATA_PATH}",
        security=security,
        json_response=json_response,
        memory_enabled=memory_enabled,
        unit_of_work=unit_of_work,
        agent_path=AGENT_PATH,
    )
    gate = endpoint

    async def metadata(request: Request) -> Response:
        resource = f"{fixed_base or base_url(request.scope)}{RAIL_PATH}"
        return JSONResponse(resource_metadata(resource, authorization_servers, scopes_supported))

    routes: tuple[BaseRoute, ...] = (
        Route(METADATA_PATH, metadata, methods=["GET"], include_in_schema=False),
        Mount(MOUNT_PATH, app=gate),
    )
    return McpMount(routes=routes, server=server, rail=rail)


def create_host_app(
    bank_app: ASGIApp,
    mount: McpMount,
    *,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """One app serving the REST API and the rail: `/mcp/agent`, its metadata, and everything else to `bank_app`.

    `lifespan` is the composition root's own (e.g. closing storage); the rail's session
    manager runs inside it.
    """

    @asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        async with mount.lifespan():
            if lifespan is None:
                yield
                return
            async with lifespan(app):
                yield

    # The rail's answers carry the headers every answer of the bank does (a request id, nosniff).
    return Starlette(
        routes=[*mount.routes, Mount("/", app=bank_app)],
        middleware=[Middleware(ResponseHeadersMiddleware)],
        lifespan=run,
    )
