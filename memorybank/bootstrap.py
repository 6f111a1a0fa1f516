"""`build(settings)`: the one composition root (ADR 0027). Every process that serves or administers a
bank goes through it: `serve` (and each of its workers), `mcp`, every admin command, the benchmarks
and the test fixtures over SQL storage.

It opens what `Settings` names in a fixed order (the embedding model, then the database, then the
identity providers) and returns a `Runtime`, a context manager that closes what was opened, newest
first, on exit or when building fails half-way. Everything else (services, the served app, the
offboarding, the local MCP rail) is built from it on first use. The pieces themselves are
`memorybank.composition`'s.
"""

from __future__ import annotations

import contextlib
import functools
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from memorybank import composition, semantic
from memorybank.oauth_settings import choose_oauth, choose_panel_sign_in
from memorybank.settings import Settings
from memorybank_core import Clock, Embedder, EventSink, RateLimits

if TYPE_CHECKING:
    from mcp.server import Server

    from adapters_http.draining import ConnectionDraining
    from adapters_mysql import SqlStorage
    from adapters_oidc import IssuerTokenVerifier, ResourceServerSettings, SignInSettings
    from memorybank_core.offboarding import Offboarding


class Runtime:
    """What `build` opened for one set of settings, and what is built from it. Close it (or use `with`)."""

    def __init__(
        self,
        settings: Settings,
        storage: SqlStorage,
        closers: contextlib.ExitStack,
        *,
        clock: Clock | None = None,
        events: EventSink | None = None,
        created_database: bool = False,
        oauth: ResourceServerSettings | None = None,
        panel_sign_in: SignInSettings | None = None,
        issuers: IssuerTokenVerifier | None = None,
        rate_limits: RateLimits | None = None,
        serving: bool = False,
    ) -> None:
        self.settings = settings
        self.storage = storage
        self.created_database = created_database
        """`build(migrating=True)` created the MySQL database."""
        self.oauth = oauth
        self.panel_sign_in = panel_sign_in
        self.issuers = issuers
        self.rate_limits = rate_limits
        """Built with `serving=True`: the limits of every memory route."""
        self._clock = clock
        self._events = events
        self._closers = closers
        self._serving = serving

    @functools.cached_property
    def services(self) -> composition.Services:
        """The bank, tokens, panel sessions and operator controls over the storage, as the settings configure them."""
        return composition.build_services(
            self.storage,
            clock=self._clock,
            events=self._events,
            bank=self.settings.bank,
            rate_limits=self.rate_limits,
            secret_screen=self.settings.secret_screen,
        )

    @functools.cached_property
    def app(self) -> ConnectionDraining:
        """The served app (`serve` and each of its workers): REST, panel, MCP rail, health and metrics.

        Its lifespan's end closes this runtime, as a worker has nothing else to close it with.

        Raises:
            RuntimeError: the runtime was not built with `serving=True`, so it has neither the rate
                limits nor the identity providers the served app needs.
        """
        if not self._serving:
            raise RuntimeError("the served app needs build(settings, serving=True)")
        return composition.build_server_app(
            self.storage,
            bind_host=self.settings.http.host,
            metrics_token=self.settings.http.metrics_token,
            allowed_hosts=self.settings.http.allowed_hosts,
            issuers=self.issuers,
            bank=self.settings.bank,
            rate_limits=self.rate_limits,
            panel_sign_in=self.panel_sign_in,
            secret_screen=self.settings.secret_screen,
            on_shutdown=self.close,
            public_url=self.settings.oauth.public_url,
        )

    def offboarding(self) -> Offboarding:
        """The operator's purge over the storage (`memorybank purge`).

        Raises:
            PurgeUnsupportedError: the database is a Spider head.
        """
        return composition.build_offboarding(self.storage, clock=self._clock, events=self._events)

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


def build(
    settings: Settings,
    *,
    clock: Clock | None = None,
    events: EventSink | None = None,
    serving: bool = False,
    migrating: bool = False,
    search: Literal["load", "check", "off"] = "load",
    embedder: Embedder | None = None,
) -> Runtime:
    """Open what `settings` name and return the `Runtime` over them.

    `serving` also checks and builds what the served app needs, before the database is opened (rate
    limits, the OAuth and panel sign-in settings), then connects the identity providers after it.
    `migrating` opens the database without a schema check, creating a missing MySQL one (`migrate`).
    With hybrid search the model is loaded first (`search="load"`), or only its files are checked
    (`"check"`: a `serve --workers` supervisor, whose workers load their own), or search is left
    lexical (`"off"`: a command that neither searches nor saves through the bank); `embedder` is one
    already loaded (tests, benchmarks).

    Raises:
        InvalidInputError: a malformed setting found only now (a rate-limit rule, an OAuth option, the key
            ring, the database URL, the model files).
        SemanticUnavailableError: hybrid search without the `semantic` extra.
        UnavailableError: the database cannot be reached.
        SchemaNotReadyError: the schema is not the one this version serves (the message names the fix).
        OSError: the embedded database's directory cannot be created.
    """
    rate_limits = oauth = panel_sign_in = None
    if serving:
        rate_limits = composition.build_rate_limits(settings.rate_limits)
        oauth = choose_oauth(settings.oauth, host=settings.http.host, port=settings.http.port)
        panel_sign_in = choose_panel_sign_in(settings.oauth, oauth)
    if settings.search.hybrid and embedder is None:
        # Before the database is opened: a missing extra or model is one line, and nothing is held.
        if search == "load":
            embedder = semantic.load_embedder(settings.search)
        elif search == "check":
            semantic.check_embedder(settings.search)
    with contextlib.ExitStack() as closers:
        created = False
        if migrating:
            storage, created = composition.open_storage_for_migration(settings.database, settings.keys)
        else:
            storage = composition.open_ready_storage(settings.database, settings.keys)
        closers.callback(storage.close)
        if embedder is not None and settings.search.hybrid:
            semantic.apply_search(storage, settings.search, embedder)
        issuers = composition.connect_issuers(oauth) if serving else None
        if issuers is not None:
            closers.callback(issuers.close)
        # pop_all: from here on the runtime owns what was opened.
        return Runtime(
            settings,
            storage,
            closers.pop_all(),
            clock=clock,
            events=events,
            created_database=created,
            oauth=oauth,
            panel_sign_in=panel_sign_in,
            issuers=issuers,
            rate_limits=rate_limits,
            serving=serving,
        )
