"""The pieces of the composition root: indexer -> storage -> ports -> services -> HTTP app and MCP rail.

`memorybank.bootstrap.build` is the one caller that wires them from `Settings` (and its overrides); each
function here builds one kind of object from the objects it is given (`Opening`, `Ports`, `ServiceOptions`, `Web`),
and nothing runs at import time.
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
from memorybank.oauth_settings import is_loopback
from memorybank.settings import (
    DatabaseChoice,
    HttpSettings,
    KeyRingChoice,
    RateLimitChoice,
    prepare_embedded_directory,
)
from memorybank_core import (
    BulkMemoryWriter,
    Clock,
    ControlStore,
    Embedder,
    EventSink,
    InMemoryControlStore,
    InMemoryPanelSessionStore,
    InMemoryStore,
    InMemoryTokenStore,
    MemoryBank,
    MemoryControls,
    MemoryOwners,
    MemoryStore,
    NoUnitOfWork,
    PanelSessions,
    PanelSessionStore,
    Principal,
    RateLimitPolicy,
    RateLimits,
    RevisionEraser,
    Sealer,
    SearchEngine,
    SecretScreen,
    StoragePorts,
    TokenService,
    TokenStore,
    UnavailableError,
    UnitOfWork,
    ids,
)
from memorybank_core.configuration import BankSettings
from memorybank_core.distribution import install_command
from memorybank_core.events import LoggingEventSink
from memorybank_core.offboarding import Offboarding, PurgeStore
from memorybank_core.tokens import SECRET_PREFIX
from memorybank_search import Fusion, InMemorySearch, InMemoryVectors, OwnerIndexer

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


@attrs.frozen(kw_only=True)
class Opening:
    """How to open a database besides its URL: sealed (a key ring, or a sealer already built) and hybrid or not."""

    keys: KeyRingChoice | None = None
    """The key ring for encryption at rest; None (and no `sealer`): plaintext."""
    sealer: Sealer | None = None
    """A sealer already built (a test's fresh ring); wins over `keys`."""
    embedder: Embedder | None = None
    """Hybrid search's model; None: lexical."""
    fusion: Fusion | None = None
    """How hybrid search weighs BM25 against the vectors (default `Fusion()`)."""


def open_ready_storage(choice: DatabaseChoice, opening: Opening | None = None) -> SqlStorage:
    """Open the chosen database and make sure its schema is the one this version serves.

    SQLite is embedded, so it is initialized in place (created on first use). A MySQL
    schema is never changed here: a missing, behind or index-less schema is refused
    with a message naming `memorybank migrate`. `opening` says whether it is sealed (a database holding
    sealed memories is refused unless the key ring opens them) and whether search is hybrid.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL; ("key-file") a bad key ring.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not ready (the message names the fix), or the key
            ring does not open the database (`KeyRingError`).
        OSError: the embedded database's directory cannot be created.
    """
    storage = _open_storage(choice, opening or Opening())
    try:
        if storage.dialect_name == "sqlite":
            storage.initialize()
        storage.check_ready()
    except BaseException:
        storage.close()
        raise
    return storage


def open_storage_for_migration(choice: DatabaseChoice, opening: Opening | None = None) -> tuple[SqlStorage, bool]:
    """Open the chosen database without any schema check, for `memorybank migrate`; True if it was created.

    A MySQL database the server lacks is created (utf8mb4), as migrate is the install step.

    Raises:
        InvalidInputError: ("db") a malformed or unsupported URL; ("key-file") a bad key ring.
        CreateDatabaseRefusedError: the database is missing and the account may not create it;
            the message holds the statement to run.
        UnavailableError: the database cannot be reached.
        OSError: the embedded database's directory cannot be created.
    """
    opening = opening or Opening()
    try:
        return _open_storage(choice, opening), False
    except DatabaseMissingError:
        create_database(choice.url)
        return _open_storage(choice, opening), True


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


def _open_storage(choice: DatabaseChoice, opening: Opening) -> SqlStorage:
    sealer = opening.sealer or load_sealer(opening.keys)
    prepare_embedded_directory(choice)
    # The one indexer of the process: the store writes its documents and the engine reads them.
    indexer = OwnerIndexer(blind_index=sealer.index if sealer is not None else None)
    return open_storage(choice.url, indexer=indexer, sealer=sealer, embedder=opening.embedder, fusion=opening.fusion)


@attrs.frozen(kw_only=True)
class Ports:
    """The storage ports the use cases run on: a database's (`of_database`), the core's in-memory ones
    (`in_memory`), or a host's or a test's own (`of`). `attrs.evolve(ports, store=…)` swaps one.

    Besides the six of `memorybank_core.StoragePorts`, the operator's: `bulk_writer` (`memorybank import`),
    `memory_owners` and `revision_eraser` (`memorybank secrets scan`), None where the storage has none.
    """

    store: MemoryStore
    search_engine: SearchEngine
    controls: ControlStore
    token_store: TokenStore
    panel_sessions: PanelSessionStore
    unit_of_work: UnitOfWork
    bulk_writer: BulkMemoryWriter | None = None
    memory_owners: MemoryOwners | None = None
    revision_eraser: RevisionEraser | None = None

    @classmethod
    def of(cls, storage: StoragePorts) -> Ports:
        """The six ports of `storage`, a host's own bundle (`memorybank_core.StoragePorts`), without the operator's."""
        return cls(
            store=storage.store,
            search_engine=storage.search_engine,
            controls=storage.controls,
            token_store=storage.token_store,
            panel_sessions=storage.panel_sessions,
            unit_of_work=storage.unit_of_work,
        )

    @classmethod
    def of_database(cls, storage: SqlStorage) -> Ports:
        """The SQL database's ports, the operator's included (each retried after a lost connection,
        `adapters_mysql.retrying`)."""
        return attrs.evolve(
            cls.of(storage), bulk_writer=storage.store, memory_owners=storage, revision_eraser=storage.store
        )

    @classmethod
    def in_memory(
        cls, store: InMemoryStore | None = None, *, embedder: Embedder | None = None, fusion: Fusion | None = None
    ) -> Ports:
        """The core's in-memory ports over `store` (default: a new one), searched by the reference engine, hybrid
        with `embedder`."""
        memories = store if store is not None else InMemoryStore()
        search: SearchEngine = InMemorySearch(memories, OwnerIndexer())
        if embedder is not None:
            from memorybank_search.hybrid import HybridSearch  # the semantic extra (numpy), only here

            search = HybridSearch(search, InMemoryVectors(memories, embedder), embedder, fusion=fusion)
        return cls(
            store=memories,
            search_engine=search,
            controls=InMemoryControlStore(),
            token_store=InMemoryTokenStore(),
            panel_sessions=InMemoryPanelSessionStore(),
            unit_of_work=NoUnitOfWork(),
            bulk_writer=memories,
            memory_owners=memories,
            revision_eraser=memories,
        )

    def writer(self) -> BulkMemoryWriter:
        """`bulk_writer`, for `memorybank import`.

        Raises:
            RuntimeError: this storage writes no batch of memories.
        """
        if self.bulk_writer is None:
            raise RuntimeError("these storage ports have no bulk writer (memorybank import)")
        return self.bulk_writer

    def owners(self) -> MemoryOwners:
        """`memory_owners`, for `memorybank secrets scan`.

        Raises:
            RuntimeError: this storage cannot list who stores memories.
        """
        if self.memory_owners is None:
            raise RuntimeError("these storage ports cannot list the owners of memories (memorybank secrets scan)")
        return self.memory_owners

    def eraser(self) -> RevisionEraser:
        """`revision_eraser`, for `memorybank secrets scan --drop-revisions`.

        Raises:
            RuntimeError: this storage cannot delete single kept versions.
        """
        if self.revision_eraser is None:
            raise RuntimeError("these storage ports cannot delete kept versions (memorybank secrets scan)")
        return self.revision_eraser


@attrs.frozen(kw_only=True)
class ServiceOptions:
    """How the use cases behave over their ports: the deployment's rules, and the clock, events and ids they use."""

    clock: Clock | None = None
    events: EventSink | None = None
    new_id: Callable[[str], str] | None = None
    bank: BankSettings | None = None
    """What the operator set for the use cases (`Settings.bank`: the quota where no operator set one; default:
    `BankSettings()`)."""
    secret_screen: SecretScreen | None = None
    """Screens every save for credentials; None: off."""
    rate_limits: RateLimits | None = None
    """Checked on every memory route (REST, the MCP rail, the panel); None: no limits."""


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


def build_services(ports: StoragePorts, options: ServiceOptions) -> Services:
    """The bank, the token service, the panel's sessions and the operator's controls over `ports` (a `Ports`,
    an `SqlStorage`, or a host's own `StoragePorts`), as `options` say."""
    clock, events = options.clock, options.events
    tokens = TokenService(store=ports.token_store, clock=clock)
    return Services(
        bank=MemoryBank(
            store=ports.store,
            search_engine=ports.search_engine,
            clock=clock,
            events=events,
            unit_of_work=ports.unit_of_work,
            controls=ports.controls,
            settings=options.bank,
            secret_screen=options.secret_screen,
            new_id=options.new_id or ids.new_id,
        ),
        tokens=tokens,
        panel_sessions=PanelSessions(store=ports.panel_sessions, tokens=tokens, clock=clock),
        controls=MemoryControls(
            controls=ports.controls,
            store=ports.store,
            default_quota=options.bank.quota if options.bank is not None else None,
            clock=clock,
            events=events,
            unit_of_work=ports.unit_of_work,
        ),
        rate_limits=options.rate_limits,
    )


def build_offboarding(
    purge_store: PurgeStore, *, clock: Clock | None = None, events: EventSink | None = None
) -> Offboarding:
    """The operator's purge over a `PurgeStore` port (`SqlStorage.purge_store`, which a Spider head refuses, or a
    host's own): for `memorybank purge` and a host's deletion hook, never a route."""
    return Offboarding(store=purge_store, clock=clock, events=events)


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


@attrs.frozen(kw_only=True)
class Web:
    """How the apps are reached and who vouches for their callers (`HttpSettings` and the OAuth settings, built)."""

    http: HttpSettings = attrs.field(factory=HttpSettings)
    """The http group: its `host` sets the rail's DNS-rebinding protection (a loopback bind serves loopback host
    names only), its `allowed_hosts` adds the names a reverse proxy forwards (`adapters_mcp.transport_security`),
    and its `metrics_token` is the bearer token `/metrics` requires (None: no `/metrics`)."""
    public_url: str | None = None
    """`--public-url`: the panel answers to pages of this origin only, else to pages of the host names the rail
    serves (`adapters_http.panel.PanelOrigin`)."""
    issuers: IssuerTokenVerifier | None = None
    """The OAuth issuers whose access tokens are accepted beside our own (`credential_check`)."""
    panel_sign_in: SignInSettings | None = None
    """The panel's "Sign in with <provider>" through one of the issuers."""


def build_app(
    services: Services,
    web: Web | None = None,
    *,
    observer: RequestObserver | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    lifespan: Any = None,
) -> Starlette:
    """The standalone app: the REST API, the management panel at `/` and the MCP rail at `/mcp/agent`.

    Bearer tokens from the same database authenticate every request, and with `web.issuers`
    access tokens from the configured OAuth issuers too (see `credential_check`); the
    protected-resource metadata then lists those issuers, and every bearer challenge names it.
    With `web.panel_sign_in` the panel offers "Sign in with <provider>" through one of them.
    The panel's session cookie authenticates the REST API too, on the panel's own same-origin calls only
    (`build_rest_app`); the panel answers to pages of `web.public_url`'s origin, else of the host names the rail
    serves. Without the `mcp` extra the REST API and the panel (without its copy-prompt button) are served alone,
    with a warning naming the install.
    """
    from adapters_http.panel import LOOPBACK_NAMES, PanelOrigin

    web = web or Web()
    issuers, http = web.issuers, web.http
    served = (*LOOPBACK_NAMES, *http.allowed_hosts) if is_loopback(http.host) else (http.allowed_hosts or None)
    panel_origin = PanelOrigin.of(web.public_url, hosts=served)
    authenticate = credential_check(services.tokens, issuers)
    provider = panel_identity_provider(issuers, web.panel_sign_in)
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
        bind_host=http.host,
        allowed_hosts=http.allowed_hosts,
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
    services_with: Callable[[EventSink], Services],
    web: Web,
    *,
    probe_ready: Callable[[], None],
    on_shutdown: Callable[[], None],
    forward: EventSink | None = None,
    readiness_details: Callable[[], dict[str, object]] | None = None,
    on_startup: Callable[[], None] | None = None,
) -> ConnectionDraining:
    """What `memorybank serve` runs in each worker: `build_app` with health, readiness and metrics.

    `services_with(events)` builds the services reporting to the app's metrics, which pass every event on to
    `forward` (default: the log). `probe_ready` raises `SchemaNotReadyError` or `UnavailableError` when the
    database cannot serve (`/readyz`). `/healthz` and `/readyz` are public (`readiness_details`: more for
    `/readyz` to say, such as the background vector fill's counts, which `on_startup` starts); `/metrics` is
    served only with a `web.http.metrics_token`. On SIGTERM every response closes its connection
    (`ConnectionDraining`); when the app shuts down it calls `on_shutdown` (`memorybank.bootstrap.Runtime.close`:
    whatever was opened for it).
    """
    from adapters_http import SCHEMA_NOT_READY_REASON, system_routes
    from adapters_http.draining import ConnectionDraining

    # Imported here, not at the top: prometheus_client fixes its multiprocess mode at import, after
    # `memorybank serve` has set PROMETHEUS_MULTIPROC_DIR.
    from adapters_metrics import PrometheusMetrics

    metrics = PrometheusMetrics(forward=forward or LoggingEventSink())
    services = services_with(metrics)

    def readiness() -> str | None:
        try:
            probe_ready()
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
            on_shutdown()

    app = build_app(
        services,
        web,
        observer=metrics,
        extra_routes=system_routes(
            readiness=readiness, details=readiness_details, metrics=metrics.render, metrics_token=web.http.metrics_token
        ),
        lifespan=drain_then_close,
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
