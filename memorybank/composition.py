"""The composition root: indexer -> storage -> MemoryBank -> HTTP app and MCP rail. The only place the parts are wired.

Every function takes what it needs as arguments; nothing here runs at import time.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import BaseRoute

from adapters_http import RequestObserver, bearer_token_resolver, create_app, system_routes
from adapters_http.draining import ConnectionDraining
from adapters_mysql import SchemaNotReadyError, SqlStorage, open_storage
from memorybank.settings import DatabaseChoice, prepare_embedded_directory
from memorybank_core import Clock, EventSink, MemoryBank, Principal, TokenService, UnavailableError
from memorybank_core.events import LoggingEventSink
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


def build_services(storage: SqlStorage, *, clock: Clock | None = None, events: EventSink | None = None) -> Services:
    """The bank and the token service over `storage`."""
    return Services(
        bank=MemoryBank(
            store=storage.store,
            search_engine=storage.search_engine,
            clock=clock,
            events=events,
            unit_of_work=storage.unit_of_work,
        ),
        tokens=TokenService(store=storage.token_store, clock=clock),
    )


def build_app(
    services: Services,
    *,
    bind_host: str = "127.0.0.1",
    observer: RequestObserver | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    lifespan: Any = None,
) -> Starlette:
    """The standalone app: the REST API and the MCP rail at `/mcp/agent`, behind the same bearer tokens.

    Bearer tokens from the same database authenticate every request. `bind_host` sets the
    rail's DNS-rebinding protection (a loopback bind serves loopback host names only).
    Without the `mcp` extra the REST API is served alone, with a warning naming the install.
    `observer`, `extra_routes` and `lifespan` are for the server (see `build_server_app`).
    """
    rest = create_app(
        services.bank, bearer_token_resolver(services.tokens), observer=observer, extra_routes=extra_routes
    )
    try:
        require_mcp()
    except McpUnavailableError as error:
        logger.warning("the MCP rail at /mcp/agent is off: %s", error)
        if lifespan is not None:
            rest.router.lifespan_context = lifespan
        return rest
    from adapters_mcp import create_host_app, create_mcp_mount  # see require_mcp

    mount = create_mcp_mount(rest, services.tokens.authenticate, bind_host=bind_host)
    return create_host_app(rest, mount, lifespan=lifespan)


def build_server_app(storage: SqlStorage, *, bind_host: str, metrics_token: str | None) -> ConnectionDraining:
    """What `memorybank serve` runs in each worker: `build_app` with health, readiness and metrics.

    `/healthz` and `/readyz` are public; `/metrics` is served only with a `metrics_token`. On
    SIGTERM every response closes its connection (`ConnectionDraining`); the app closes
    `storage` when it shuts down.
    """
    # Imported here, not at the top: prometheus_client fixes its multiprocess mode at import, after
    # `memorybank serve` has set PROMETHEUS_MULTIPROC_DIR.
    from adapters_metrics import PrometheusMetrics

    metrics = PrometheusMetrics(forward=LoggingEventSink())
    services = build_services(storage, events=metrics)

    def readiness() -> str | None:
        try:
            storage.check_ready()
        except SchemaNotReadyError:
            return "the database schema is not ready: run `memorybank migrate`"
        except UnavailableError:
            return "the database cannot be reached"
        return None

    draining: ConnectionDraining

    @asynccontextmanager
    async def drain_then_close_storage(_app: Starlette) -> AsyncIterator[None]:
        # Runs inside uvicorn's own signal handling: chain ours before its handler.
        uvicorn_handler = signal.getsignal(signal.SIGTERM)

        def on_sigterm(number: int, frame: object) -> None:
            draining.begin()
            if callable(uvicorn_handler):
                uvicorn_handler(number, frame)  # type: ignore[arg-type]

        # Only uvicorn's main thread may set handlers (a test client runs the lifespan elsewhere).
        if callable(uvicorn_handler) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)
        try:
            yield
        finally:
            storage.close()

    app = build_app(
        services,
        bind_host=bind_host,
        observer=metrics,
        extra_routes=system_routes(readiness=readiness, metrics=metrics.render, metrics_token=metrics_token),
        lifespan=drain_then_close_storage,
    )
    draining = ConnectionDraining(app)
    return draining


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
