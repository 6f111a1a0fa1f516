"""The pieces of the composition root: indexer -> storage -> MemoryBank -> HTTP app and MCP rail.

`memorybank.bootstrap.build` is the one caller that wires them from `Settings`; each function here
builds one kind of object from what it is given, and nothing runs at import time.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import attrs

import adapters_mysql
from adapters_mysql import (
    DatabaseMissingError,
    SchemaNotReadyError,
    SpiderSealingError,
    SqlStorage,
    create_database,
    open_storage,
)
from memorybank import secret_settings
from memorybank.oauth_settings import is_loopback
from memorybank.settings import DatabaseChoice, KeyRingChoice, RateLimitChoice, prepare_embedded_directory
from memorybank_core import (
    Clock,
    EventSink,
    MemoryBank,
    MemoryControls,
    PanelSessions,
    Principal,
    RateLimitPolicy,
    RateLimits,
    Sealer,
    StoragePorts,
    TokenService,
    UnavailableError,
)
from memorybank_core.configuration import BankSettings
from memorybank_core.distribution import install_command
from memorybank_core.events import LoggingEventSink
from memorybank_core.offboarding import Offboarding
from memorybank_core.tokens import SECRET_PREFIX
from memorybank_search import OwnerIndexer

# The web stack, the OAuth client and the cipher are imported by the functions that build with them, not
# here: an admin command (`token create`, `migrate`) needs none of them and answers in well under a second
# (docs/benchmarks.md, Start-up). tests/cli/test_startup.py holds the line.
if TYPE_CHECKING:
    from mcp.server import Server
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from adapters_http import Authenticate, RequestObserver
    from adapters_http.draining import ConnectionDraining
    from adapters_http.panel import PanelIdentityProvider, PanelOrigin
    from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, SignInSettings

#: Third-party packages of the `mcp` extra.
MCP_EXTRA_MODULES = frozenset({"mcp", "mcp_types", "jsonschema"})
MCP_EXTRA = "mcp"

logger = logging.getLogger("memorybank")


class McpUnavailableError(RuntimeError):
    """The MCP SDK (the `mcp` extra) is not installed."""


def load_sealer(keys: KeyRingChoice | None) -> Sealer | None:
    """The sealer for the chosen key ring; None means plaintext storage.

    Raises:
        InvalidInputError: ("key-file") the ring cannot be read or is malformed.
    """
    if keys is None:
        return None
    from adapters_crypto import AesGcmSealer, load_key_ring, parse_key_ring

    if keys.path is not None:
        return AesGcmSealer(load_key_ring(keys.path))
    return AesGcmSealer(parse_key_ring(keys.text or "", origin=f"${keys.source}"))


def open_ready_storage(choice: DatabaseChoice, keys: KeyRingChoice | None = None) -> SqlStorage:
    """Open the chosen database and make sure its schema is the one this version serves.

    SQLite is embedded, so it is initialized in place (created on first use). A MySQL
    schema is never changed here: a missing, behind or index-less schema is refused
    with a message naming `memorybank migrate`. `keys` is the key ring for encryption at rest
    (None: plaintext); a database holding sealed memories is refused unless the ring opens them.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL; ("key-file") a bad key ring.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not ready (the message names the fix), or the key
            ring does not open the database (`KeyRingError`).
        OSError: the embedded database's directory cannot be created.
    """
    storage = _open_storage(choice, keys)
    try:
        if storage.dialect_name == "sqlite":
            storage.initialize()
        storage.check_ready()
    except BaseException:
        storage.close()
        raise
    return storage


def open_storage_for_migration(choice: DatabaseChoice, keys: KeyRingChoice | None = None) -> tuple[SqlStorage, bool]:
    """Open the chosen database without any schema check, for `memorybank migrate`; True if it was created.

    A MySQL database the server lacks is created (utf8mb4), as migrate is the install step.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL; ("key-file") a bad key ring.
        CreateDatabaseRefusedError: the database is missing and the account may not create it;
            the message holds the statement to run.
        UnavailableError: the database cannot be reached.
        OSError: the embedded database's directory cannot be created.
    """
    try:
        return _open_storage(choice, keys), False
    except DatabaseMissingError:
        create_database(choice.url)
        return _open_storage(choice, keys), True


def migrate_sharded(choice: DatabaseChoice, shard_urls: Sequence[str], keys: KeyRingChoice | None) -> None:
    """`memorybank migrate --shards`: every data node, then the Spider head named by `choice`.

    Raises:
        SpiderSealingError: a key ring is configured (a sharded deployment cannot seal yet).
        InvalidInputError: a malformed URL.
        UnavailableError: a node or the head cannot be reached.
        SchemaNotReadyError: the head spreads its tables over a different number of nodes.
    """
    if load_sealer(keys) is not None:
        raise SpiderSealingError
    adapters_mysql.migrate_sharded(choice.url, shard_urls, indexer=OwnerIndexer())


def _open_storage(choice: DatabaseChoice, keys: KeyRingChoice | None) -> SqlStorage:
    sealer = load_sealer(keys)
    prepare_embedded_directory(choice)
    # The one indexer of the process: the store writes its documents and the engine reads them.
    indexer = OwnerIndexer(blind_index=sealer.index if sealer is not None else None)
    return open_storage(choice.url, indexer=indexer, sealer=sealer)


@attrs.frozen(kw_only=True)
class Services:
    """The wired use cases over one storage."""

    bank: MemoryBank
    tokens: TokenService
    panel_sessions: PanelSessions
    controls: MemoryControls | None = None
    """The operator's gate and quotas (`memorybank gate`, `memorybank quota`); None when not wired."""

    rate_limits: RateLimits | None = None
    """Checked on every memory route (REST, the MCP rail, the panel); None: no limits."""


def build_rate_limits(choice: RateLimitChoice) -> RateLimits:
    """The rate limits of `choice`: its rules over the defaults, counted in its storage (connected lazily).

    Raises:
        InvalidInputError: ("rate_limit") a malformed rule; ("rate_limit_storage") an unusable URL.
    """
    from adapters_ratelimit import LimitsRateLimiter

    policy = RateLimitPolicy.from_rules(choice.rules)
    return RateLimits(limiter=LimitsRateLimiter(choice.storage_url), policy=policy)


def build_services(
    storage: StoragePorts,
    *,
    clock: Clock | None = None,
    events: EventSink | None = None,
    bank: BankSettings | None = None,
    rate_limits: RateLimits | None = None,
    secret_screen: str = secret_settings.REFUSE,
) -> Services:
    """The bank, the token service, the panel's sessions and the operator's controls over `storage`'s ports
    (`SqlStorage`, or a host's own `StoragePorts`).

    `bank` is what the use cases take (the deployment's quota where no operator set one; default: `BankSettings()`);
    `rate_limits` apply on the memory routes. `secret_screen` is `refuse` (every save is screened for
    credentials) or `off` (`memorybank.secret_settings`).
    """
    tokens = TokenService(store=storage.token_store, clock=clock)
    return Services(
        bank=MemoryBank(
            store=storage.store,
            search_engine=storage.search_engine,
            clock=clock,
            events=events,
            unit_of_work=storage.unit_of_work,
            controls=storage.controls,
            settings=bank,
            secret_screen=secret_settings.build_secret_screen(secret_screen),
        ),
        tokens=tokens,
        panel_sessions=PanelSessions(store=storage.panel_sessions, tokens=tokens, clock=clock),
        controls=MemoryControls(
            controls=storage.controls,
            store=storage.store,
            default_quota=bank.quota if bank is not None else None,
            clock=clock,
            events=events,
            unit_of_work=storage.unit_of_work,
        ),
        rate_limits=rate_limits,
    )


def build_offboarding(
    storage: SqlStorage, *, clock: Clock | None = None, events: EventSink | None = None
) -> Offboarding:
    """The operator's purge over `storage`: for `memorybank purge` and a host's deletion hook, never a route.

    Raises:
        PurgeUnsupportedError: `storage` is a Spider head (docs/operations.md).
    """
    return Offboarding(store=storage.purge_store, clock=clock, events=events)


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


def connect_issuers(oauth: ResourceServerSettings | None) -> IssuerTokenVerifier | None:
    """The resource server's check of issuer tokens, with every issuer discovered now (failures only logged:
    a server may start before its identity provider); None without issuers."""
    from adapters_oidc import IssuerTokenVerifier

    if oauth is None:
        return None
    issuers = IssuerTokenVerifier(oauth)
    issuers.warm_up()
    return issuers


def panel_identity_provider(
    issuers: IssuerTokenVerifier | None, settings: SignInSettings | None
) -> PanelIdentityProvider | None:
    """The panel's "Sign in with <provider>" through one of the trusted issuers, or None.

    It maps people with the resource server's own settings (claims, organization), so a person is the same
    `usr_` id in the panel as with their access tokens; the redirect URI is the server's public URL + callback.

    Raises:
        ValueError: `settings` without `issuers`, or naming an issuer they do not trust.
    """
    from adapters_http.panel import PanelIdentityProvider
    from adapters_oidc import OidcSignIn

    if settings is None:
        return None
    if issuers is None or settings.issuer not in issuers.settings.issuers:
        raise ValueError("the panel's identity provider must be one of the trusted issuers")
    return PanelIdentityProvider(
        sign_in=OidcSignIn(issuers, settings), callback_url=panel_callback_url(issuers.settings)
    )


def panel_callback_url(oauth: ResourceServerSettings) -> str:
    """The redirect URI to register for the panel's client at the provider: the public URL + the callback path."""
    from adapters_http.panel import OIDC_CALLBACK_PATH
    from memorybank.oauth_settings import RAIL_PATH

    return oauth.resource.removesuffix(RAIL_PATH) + OIDC_CALLBACK_PATH


def build_app(
    services: Services,
    *,
    bind_host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    issuers: IssuerTokenVerifier | None = None,
    panel_sign_in: SignInSettings | None = None,
    observer: RequestObserver | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    lifespan: Any = None,
    public_url: str | None = None,
) -> Starlette:
    """The standalone app: the REST API, the management panel at `/` and the MCP rail at `/mcp/agent`.

    Bearer tokens from the same database authenticate every request, and with `issuers`
    access tokens from the configured OAuth issuers too (see `credential_check`); the
    protected-resource metadata then lists those issuers, and every bearer challenge names it.
    With `panel_sign_in` the panel offers "Sign in with <provider>" through one of them.
    `bind_host` sets the rail's DNS-rebinding protection (a loopback bind serves loopback
    host names only); `allowed_hosts` adds the names a reverse proxy forwards
    (`adapters_mcp.transport_security`). The panel's session cookie authenticates the REST API too, on the
    panel's own same-origin calls only (`build_rest_app`). Without the `mcp` extra the REST
    API and the panel (without its copy-prompt button) are served alone, with a warning
    naming the install. The panel answers to pages of `public_url`'s origin only (`--public-url`), else to pages
    of the host names the rail serves (`adapters_http.panel.PanelOrigin`).
    """
    from adapters_http.panel import LOOPBACK_NAMES, PanelOrigin

    served = (*LOOPBACK_NAMES, *allowed_hosts) if is_loopback(bind_host) else (allowed_hosts or None)
    panel_origin = PanelOrigin.of(public_url, hosts=served)
    authenticate = credential_check(services.tokens, issuers)
    provider = panel_identity_provider(issuers, panel_sign_in)
    try:
        require_mcp()
    except McpUnavailableError as error:
        logger.warning("the MCP rail at /mcp/agent is off: %s", error)
        alone = build_rest_app(
            services,
            authenticate=authenticate,
            prompt="",
            observer=observer,
            extra_routes=extra_routes,
            identity_provider=provider,
            panel_origin=panel_origin,
        )
        if lifespan is not None:
            alone.router.lifespan_context = lifespan
        return alone
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
        observer=observer,
        extra_routes=extra_routes,
        identity_provider=provider,
        panel_origin=panel_origin,
    )
    mount = create_mcp_mount(
        rest,
        authenticate,
        catalog=default_catalog(services.bank.settings),
        bind_host=bind_host,
        allowed_hosts=allowed_hosts,
        public_url=public_url,
        authorization_servers=issuers.settings.issuers if issuers else (),
        scopes_supported=issuers.settings.scopes_supported if issuers else RAIL_SCOPES,
        memory_enabled=services.bank.memory_enabled,
        unit_of_work=services.bank.unit_of_work,
    )
    return create_host_app(rest, mount, lifespan=lifespan)


def build_rest_app(
    services: Services,
    *,
    authenticate: Authenticate,
    prompt: str,
    resource_metadata_url: str | None = None,
    observer: RequestObserver | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    identity_provider: PanelIdentityProvider | None = None,
    panel_origin: PanelOrigin | None = None,
) -> Starlette:
    """The REST API and the management panel: a bearer credential, or the panel's session cookie on panel calls.

    `authenticate` checks bearer credentials (see `credential_check`); a credential pasted into
    the panel's sign-in page is checked by it too. `prompt` is the text of the panel's
    copy-prompt button (empty hides it). `identity_provider` adds "Sign in with <provider>".
    """
    from adapters_http import bearer_resolver, create_app
    from adapters_http.panel import SAME_HOST, PanelSignIn, bearer_or_session, panel_routes, session_cookie_resolver

    origin = panel_origin or SAME_HOST
    resolver = bearer_or_session(
        bearer_resolver(authenticate), session_cookie_resolver(services.panel_sessions, origin)
    )
    sign_in = PanelSignIn(
        sessions=services.panel_sessions,
        authenticate_token=authenticate,
        identity_provider=identity_provider,
        origin=origin,
    )
    return create_app(
        services.bank,
        resolver,
        resource_metadata_url=resource_metadata_url,
        panel=panel_routes(sign_in=sign_in, prompt=prompt),
        observer=observer,
        extra_routes=extra_routes,
        rate_limits=services.rate_limits,
    )


def build_server_app(
    storage: SqlStorage,
    *,
    bind_host: str,
    metrics_token: str | None,
    allowed_hosts: Sequence[str] = (),
    issuers: IssuerTokenVerifier | None = None,
    bank: BankSettings | None = None,
    rate_limits: RateLimits | None = None,
    panel_sign_in: SignInSettings | None = None,
    secret_screen: str = secret_settings.REFUSE,
    on_shutdown: Callable[[], None] | None = None,
    public_url: str | None = None,
    readiness_details: Callable[[], dict[str, object]] | None = None,
    on_startup: Callable[[], None] | None = None,
) -> ConnectionDraining:
    """What `memorybank serve` runs in each worker: `build_app` with health, readiness and metrics.

    `bank` is what the use cases take (`Settings.bank`: the deployment's storage quota, `--quota-memories`...).
    `rate_limits` (see `build_rate_limits`) applies to every memory route: REST, MCP rail and panel.
    `secret_screen` (`refuse` or `off`) screens every save for credentials.

    `/healthz` and `/readyz` are public (`readiness_details`: more for `/readyz` to say, such as the
    background vector fill's counts, which `on_startup` starts); `/metrics` is served only with a
    `metrics_token`. On SIGTERM every response closes its connection (`ConnectionDraining`); when the app shuts
    down it calls `on_shutdown` (`memorybank.bootstrap.Runtime.close`: whatever was opened for it),
    else closes `storage` (and `issuers`).
    """
    from adapters_http import SCHEMA_NOT_READY_REASON, system_routes
    from adapters_http.draining import ConnectionDraining

    # Imported here, not at the top: prometheus_client fixes its multiprocess mode at import, after
    # `memorybank serve` has set PROMETHEUS_MULTIPROC_DIR.
    from adapters_metrics import PrometheusMetrics

    metrics = PrometheusMetrics(forward=LoggingEventSink())
    services = build_services(storage, events=metrics, bank=bank, rate_limits=rate_limits, secret_screen=secret_screen)

    def readiness() -> str | None:
        try:
            storage.probe_ready()
        except SchemaNotReadyError:
            return SCHEMA_NOT_READY_REASON
        except UnavailableError:
            return "the database cannot be reached"
        return None

    draining: ConnectionDraining

    @asynccontextmanager
    async def drain_then_close(_app: Starlette) -> AsyncIterator[None]:
        # Runs inside uvicorn's own signal handling: chain ours before its handler.
        uvicorn_handler = signal.getsignal(signal.SIGTERM)

        def on_sigterm(number: int, frame: object) -> None:
            draining.begin()
            if callable(uvicorn_handler):
                uvicorn_handler(number, frame)  # type: ignore[arg-type]

        # Only uvicorn's main thread may set handlers (a test client runs the lifespan elsewhere).
        if callable(uvicorn_handler) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_sigterm)
        if on_startup is not None:
            on_startup()  # once serving starts, its logging configured (the background vector fill)
        try:
            yield
        finally:
            if on_shutdown is not None:
                on_shutdown()
            else:
                if issuers is not None:
                    issuers.close()
                storage.close()

    app = build_app(
        services,
        bind_host=bind_host,
        allowed_hosts=allowed_hosts,
        issuers=issuers,
        panel_sign_in=panel_sign_in,
        observer=metrics,
        extra_routes=system_routes(
            readiness=readiness, details=readiness_details, metrics=metrics.render, metrics_token=metrics_token
        ),
        lifespan=drain_then_close,
        public_url=public_url,
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
    from adapters_http import create_app

    require_mcp(stdio_only=True)
    # From their modules, not the package: `adapters_mcp` would reach them through the HTTP transport.
    from adapters_mcp.catalog import default_catalog
    from adapters_mcp.stdio_transport import LocalPrincipal, build_local_server

    rest = create_app(services.bank, _no_network_caller)
    principal = LocalPrincipal(user_id=user_id, organization_id=org_id)
    return build_local_server(rest, principal, catalog=default_catalog(services.bank.settings))


def require_mcp(*, stdio_only: bool = False) -> None:
    """Import the MCP facade now (its stdio transport alone with `stdio_only`), or say that its extra is missing.

    The facade is imported where it is used, not at the top of this module: the MCP SDK
    takes about a second to import, and the token and migrate commands never need it.

    Raises:
        McpUnavailableError: the `mcp` extra is not installed.
    """
    try:
        # The package itself imports lazily; its transports are what need the SDK.
        import adapters_mcp.stdio_transport

        if not stdio_only:
            import adapters_mcp.http_transport  # noqa: F401 - as above
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] in MCP_EXTRA_MODULES:
            raise McpUnavailableError(f"the MCP SDK is not installed: {install_command(MCP_EXTRA)}") from error
        raise
