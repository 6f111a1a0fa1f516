"""`build(settings, **overrides)`: the one composition root (ADR 0027, ADR 0033). Every process that serves or
administers a bank goes through it: `serve` (and each of its workers), `mcp`, every admin command, the benchmarks
and the test fixtures.

It opens what `Settings` names in a fixed order (the embedding model, then the database, then the identity
providers) and returns a `Runtime`, a context manager that closes what was opened, newest first, on exit or when
building fails half-way. Everything else (services, the served app, the offboarding, the local MCP rail) is built
from it on first use. The pieces themselves are `memorybank.composition`'s.

A caller replaces any part by passing it (cosmicpython's bootstrap): `build(settings, store=InMemoryStore())` runs
the bank on the core's in-memory ports and opens no database; `build(settings, clock=…, events=…, embedder=…)`
keeps the database and swaps the rest. What is not overridden comes from the settings, so a test exercises the
same wiring as `memorybank serve`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import attrs

from memorybank import composition, secret_settings, semantic
from memorybank.composition import Ports, Services, Web
from memorybank.oauth_settings import choose_oauth, choose_panel_sign_in
from memorybank.settings import Settings
from memorybank_core import (
    Clock,
    ControlStore,
    Embedder,
    EventSink,
    InMemoryStore,
    MemoryStore,
    PanelSessionStore,
    RateLimits,
    Sealer,
    SearchEngine,
    SecretScreen,
    StoragePorts,
    TokenStore,
    UnitOfWork,
)

if TYPE_CHECKING:
    from mcp.server import Server
    from starlette.applications import Starlette

    from adapters_http.draining import ConnectionDraining
    from adapters_mysql import SqlStorage
    from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, SignInSettings
    from memorybank.vector_fill import VectorFill
    from memorybank_core.offboarding import Offboarding

__all__ = ["Overrides", "Ports", "Runtime", "Services", "build"]

#: The database of `build()` without settings: in-memory SQLite, opened only when no storage ports are given.
IN_MEMORY_DATABASE = "sqlite://"


@attrs.frozen(kw_only=True)
class Overrides:
    """What the caller of `build` supplies instead of what the settings would build; None: the settings' own."""

    clock: Clock | None = None
    events: EventSink | None = None
    """Where the bank's and the controls' events go; the served app counts them in its metrics, then forwards."""
    new_id: Callable[[str], str] | None = None
    """The memories' id maker (a test's sequential ids)."""
    embedder: Embedder | None = None
    """A model already loaded; given, search is hybrid."""
    sealer: Sealer | None = None
    """Encryption at rest with this sealer instead of the settings' key ring."""
    secret_screen: SecretScreen | None = None
    """The save path's screen instead of the one `settings.secret_screen` names."""
    rate_limits: RateLimits | None = None
    issuers: IssuerTokenVerifier | None = None
    """The resource server's issuer check instead of the one the OAuth settings connect (a test's own client)."""
    panel_sign_in: SignInSettings | None = None


@attrs.frozen(kw_only=True)
class _Serving:
    """What `build(serving=True)` checked and connected for the served app."""

    rate_limits: RateLimits
    oauth: ResourceServerSettings | None
    panel_sign_in: SignInSettings | None
    issuers: IssuerTokenVerifier | None


class Runtime:
    """What `build` opened for one set of settings, and what is built from it. Close it (or use `with`)."""

    def __init__(
        self,
        settings: Settings,
        overrides: Overrides,
        ports: Ports,
        closers: contextlib.ExitStack,
        *,
        storage: SqlStorage | None = None,
        serving: _Serving | None = None,
        created_database: bool = False,
    ) -> None:
        self.settings = settings
        self.overrides = overrides
        self.ports = ports
        """The storage ports the use cases run on: the database's, or those given to `build`."""
        self.created_database = created_database
        """`build(migrating=True)` created the MySQL database."""
        self._storage = storage
        self._serving = serving
        self._closers = closers

    @property
    def storage(self) -> SqlStorage:
        """The SQL database the settings name (schema, key ring and batch walks: the admin commands).

        Raises:
            RuntimeError: the runtime runs on ports given to `build`, not on a database.
        """
        if self._storage is None:
            raise RuntimeError("this runtime runs on the ports given to build(), not on a database")
        return self._storage

    @property
    def rate_limits(self) -> RateLimits | None:
        """The limits of every memory route: given, or built with `serving=True`; None: no limits."""
        if self.overrides.rate_limits is not None:
            return self.overrides.rate_limits
        return self._serving.rate_limits if self._serving is not None else None

    @property
    def oauth(self) -> ResourceServerSettings | None:
        """The OAuth resource server's settings (`serving=True` with issuers configured)."""
        return self._serving.oauth if self._serving is not None else None

    @property
    def panel_sign_in(self) -> SignInSettings | None:
        """The panel's "Sign in with <provider>": given, or from the OAuth settings with `serving=True`."""
        if self.overrides.panel_sign_in is not None:
            return self.overrides.panel_sign_in
        return self._serving.panel_sign_in if self._serving is not None else None

    @property
    def issuers(self) -> IssuerTokenVerifier | None:
        """The issuer check: given, or connected with `serving=True` when issuers are configured."""
        if self.overrides.issuers is not None:
            return self.overrides.issuers
        return self._serving.issuers if self._serving is not None else None

    @property
    def web(self) -> Web:
        """How the apps are reached and who vouches for callers, from the settings and the overrides."""
        return Web(
            http=self.settings.http,
            public_url=self.settings.oauth.public_url,
            issuers=self.issuers,
            panel_sign_in=self.panel_sign_in,
        )

    @functools.cached_property
    def services(self) -> Services:
        """The bank, tokens, panel sessions and operator controls over the ports, as the settings configure them."""
        return self._services(self.overrides.events)

    def _services(self, events: EventSink | None) -> Services:
        overrides = self.overrides
        screen = overrides.secret_screen or secret_settings.build_secret_screen(self.settings.secret_screen)
        return composition.build_services(
            self.ports,
            composition.ServiceOptions(
                clock=overrides.clock,
                events=events,
                new_id=overrides.new_id,
                bank=self.settings.bank,
                secret_screen=screen,
                rate_limits=self.rate_limits,
            ),
        )

    def web_app(self) -> Starlette:
        """The standalone app over `services`: REST, panel and MCP rail, without health, metrics or draining
        (`app` is what `serve` runs)."""
        return composition.build_app(self.services, self.web)

    @functools.cached_property
    def app(self) -> ConnectionDraining:
        """The served app (`serve` and each of its workers): REST, panel, MCP rail, health and metrics.

        Its lifespan's end closes this runtime, as a worker has nothing else to close it with.

        Raises:
            RuntimeError: the runtime was not built with `serving=True`, so it has neither the rate
                limits nor the identity providers the served app needs.
        """
        if self._serving is None:
            raise RuntimeError("the served app needs build(settings, serving=True)")
        probe = self._storage.probe_ready if self._storage is not None else _always_ready
        fill = self.vector_fill()
        return composition.build_server_app(
            self._services,
            self.web,
            probe_ready=probe,
            forward=self.overrides.events,
            on_shutdown=self.close,
            readiness_details=None if fill is None else lambda: {"vectors": fill.details()},
            on_startup=None if fill is None else fill.start,
        )

    def fill_vectors(self) -> VectorFill | None:
        """`vector_fill()`, started now (`memorybank mcp`; the served app starts its own when it starts)."""
        fill = self.vector_fill()
        if fill is not None:
            fill.start()
        return fill

    def vector_fill(self) -> VectorFill | None:
        """With hybrid search and the model loaded: what writes the vectors the memories lack, in the background
        once started (memorybank.vector_fill), stopped when the runtime closes. None otherwise.
        """
        if not self.settings.search.hybrid or self._storage is None or self._storage.embedder is None:
            return None  # lexical, or ports given to `build` (their caller fills their vectors)
        from memorybank.serving import METRICS_DIR_ENV
        from memorybank.vector_fill import VectorFill

        shared = os.environ.get(METRICS_DIR_ENV)  # set for `serve --workers N`: the workers' shared directory
        fill = VectorFill(self._storage, shared_dir=Path(shared) if shared else None)
        self._closers.callback(fill.stop)
        return fill

    def offboarding(self) -> Offboarding:
        """The operator's purge over the storage (`memorybank purge`).

        Raises:
            PurgeUnsupportedError: the database is a Spider head.
            RuntimeError: the runtime runs on given ports, not on a database.
        """
        purge_store = self.storage.purge_store
        return composition.build_offboarding(purge_store, clock=self.overrides.clock, events=self.overrides.events)

    def local_rail(self, *, user_id: str, org_id: str) -> Server[Any]:
        """The MCP rail for one local user (`memorybank mcp`).

        Raises:
            McpUnavailableError: the `mcp` extra is not installed.
        """
        return composition.build_local_rail(self.services, user_id=user_id, org_id=org_id)

    def close(self) -> None:
        """Close what `build` opened, newest first; again is harmless."""
        self._closers.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def _always_ready() -> None:
    """The readiness of ports given to `build`: the caller keeps them."""


def build(
    settings: Settings | None = None,
    *,
    serving: bool = False,
    migrating: bool = False,
    search: Literal["load", "check", "off"] = "load",
    ports: StoragePorts | None = None,
    store: MemoryStore | None = None,
    search_engine: SearchEngine | None = None,
    controls: ControlStore | None = None,
    token_store: TokenStore | None = None,
    panel_sessions: PanelSessionStore | None = None,
    unit_of_work: UnitOfWork | None = None,
    clock: Clock | None = None,
    events: EventSink | None = None,
    new_id: Callable[[str], str] | None = None,
    embedder: Embedder | None = None,
    sealer: Sealer | None = None,
    secret_screen: SecretScreen | None = None,
    rate_limits: RateLimits | None = None,
    issuers: IssuerTokenVerifier | None = None,
    panel_sign_in: SignInSettings | None = None,
) -> Runtime:
    """Open what `settings` name (default: the defaults over in-memory SQLite) and return the `Runtime` over them.

    `serving` also checks and builds what the served app needs, before the database is opened (rate
    limits, the OAuth and panel sign-in settings), then connects the identity providers after it.
    `migrating` opens the database without a schema check, creating a missing MySQL one (`migrate`).
    With hybrid search the model is loaded first (`search="load"`), or only its files are checked
    (`"check"`: a `serve --workers` supervisor, whose workers load their own), or search is left
    lexical (`"off"`: a command that neither searches nor saves through the bank).

    Every other keyword replaces what the settings would build. The storage ports: `ports` (a whole set: another
    runtime's, or a host's own `StoragePorts`) or `store` opens no database, and any port not given is the core's
    in-memory one (search: the reference engine over `store`); without either the database is opened, and the ports
    given replace its own. The rest: `clock`, `events`, `new_id`, `embedder` (a model already loaded; search is then
    hybrid), `sealer` (instead of the key ring), `secret_screen`, `rate_limits`, `issuers`, `panel_sign_in`.

    Raises:
        InvalidInputError: a malformed setting found only now (a rate-limit rule, an OAuth option, the key
            ring, the database URL, the model files).
        SemanticUnavailableError: hybrid search without the `semantic` extra.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not the one this version serves (the message names the fix).
        OSError: the embedded database's directory cannot be created.
    """
    settings = settings or Settings.for_database(IN_MEMORY_DATABASE)
    overrides = Overrides(
        clock=clock,
        events=events,
        new_id=new_id,
        embedder=embedder,
        sealer=sealer,
        secret_screen=secret_screen,
        rate_limits=rate_limits,
        issuers=issuers,
        panel_sign_in=panel_sign_in,
    )
    given: dict[str, Any] = {
        name: port
        for name, port in (
            ("store", store),
            ("search_engine", search_engine),
            ("controls", controls),
            ("token_store", token_store),
            ("panel_sessions", panel_sessions),
            ("unit_of_work", unit_of_work),
        )
        if port is not None
    }
    if store is not None and not isinstance(store, InMemoryStore):
        # The operator's ports were the replaced store's: a store given brings its own, or none.
        given.update(bulk_writer=None, memory_owners=None, revision_eraser=None)
    serving_checks = None
    if serving:
        oauth = choose_oauth(settings.oauth, host=settings.http.host, port=settings.http.port)
        serving_checks = (
            rate_limits or composition.build_rate_limits(settings.rate_limits),
            oauth,
            panel_sign_in or choose_panel_sign_in(settings.oauth, oauth),
        )
    # Ports given bring their own search; a store given is searched as the settings say, as a database would be.
    if embedder is None and settings.search.hybrid and ports is None and search_engine is None:
        # Before the database is opened: a missing extra or model is one line, and nothing is held.
        try:
            if search == "load":
                embedder = semantic.load_embedder(settings.search)
            elif search == "check":
                semantic.check_embedder(settings.search)
        except semantic.SemanticUnavailableError:
            if settings.search.explicit:
                raise
            # Hybrid only by default, and the extra is missing: serve lexically (the banner says how to get it).
            settings = attrs.evolve(settings, search=attrs.evolve(settings.search, mode="lexical"))
    fusion = semantic.fusion(settings.search)
    with contextlib.ExitStack() as closers:
        storage, created = None, False
        if ports is not None or store is not None:
            # The reference engine searches `store` when it is the core's in-memory one; else give `search_engine`.
            memories = store if isinstance(store, InMemoryStore) else None
            if isinstance(ports, Ports):
                base = ports
            elif ports is not None:
                base = Ports.of(ports)
            else:
                base = Ports.in_memory(memories, embedder=embedder, fusion=fusion)
        else:
            opening = composition.Opening(keys=settings.keys, sealer=sealer, embedder=embedder, fusion=fusion)
            if migrating:
                storage, created = composition.open_storage_for_migration(settings.database, opening)
            else:
                storage = composition.open_ready_storage(settings.database, opening)
            closers.callback(storage.close)
            base = Ports.of_database(storage)
        serving_state = None
        if serving_checks is not None:
            limits, oauth, sign_in = serving_checks
            connected = issuers or composition.connect_issuers(oauth)
            if connected is not None and issuers is None:
                closers.callback(connected.close)
            serving_state = _Serving(rate_limits=limits, oauth=oauth, panel_sign_in=sign_in, issuers=connected)
        # pop_all: from here on the runtime owns what was opened.
        return Runtime(
            settings,
            overrides,
            attrs.evolve(base, **given),
            closers.pop_all(),
            storage=storage,
            serving=serving_state,
            created_database=created,
        )
