"""`memorybank serve`: uvicorn with one or several worker processes on one port.

Each worker is its own process with its own connection pool, built by `app_from_environment`
from the options the parent leaves in the environment (uvicorn starts workers with `spawn`, so
nothing else crosses). Whatever workers share lives outside them: the database, and the metrics
directory (`PROMETHEUS_MULTIPROC_DIR`) that `/metrics` sums. SIGTERM stops a worker gracefully:
it stops accepting, finishes in-flight requests (at most `shutdown_timeout` seconds), then its
lifespan closes the pool.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import attrs
import sqlalchemy as sa
import uvicorn
from starlette.types import ASGIApp
from uvicorn.supervisors import Multiprocess

from memorybank import composition, listeners, secret_settings, semantic
from memorybank.logs import logging_config
from memorybank.oauth_settings import OAuthOptions, choose_oauth, choose_panel_sign_in
from memorybank.semantic import SearchChoice
from memorybank.settings import DatabaseChoice, RateLimitChoice, choose_key_ring
from memorybank_core import Quota, limits

OPTIONS_ENV = "MEMORYBANK_SERVE_OPTIONS"
"""Where `run` leaves the options for its workers (JSON)."""

METRICS_TOKEN_ENV = "MEMORYBANK_METRICS_TOKEN"  # noqa: S105 - the variable's name, not a token
"""The bearer token `/metrics` requires; unset, `/metrics` is not served."""

METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's multiprocess directory; `run` makes a fresh one unless it is set."""

APP_FACTORY = "memorybank.serving:app_from_environment"

HTTP_PARSER = "httptools"
"""uvicorn's HTTP/1.1 parser, named rather than left to uvicorn's choice of whatever is installed.

httptools (llhttp) refuses a header line ending in a bare LF with 400; h11, uvicorn's fallback,
accepts it, so `X-A: a\\nAuthorization: …` would reach the app as two headers a proxy in front may
have read as one (request smuggling). Naming it makes a missing httptools a start-up error, not h11.
"""


@attrs.frozen(kw_only=True)
class ServeOptions:
    """What every worker needs to build the same app."""

    database_url: str
    bind_host: str = "127.0.0.1"
    port: int = 8000
    oauth: OAuthOptions = attrs.field(factory=OAuthOptions)
    allowed_hosts: list[str] = attrs.field(factory=list)
    #: `--key-file`, if given (the key ring's environment variables reach the workers by themselves).
    key_file: str | None = None
    #: The deployment's default quota (`--quota-memories`, `--quota-characters`), as chosen by the parent.
    quota_memories: int = limits.QUOTA_MEMORIES_DEFAULT
    quota_characters: int = limits.QUOTA_CHARACTERS_DEFAULT

    @property
    def default_quota(self) -> Quota:
        """The quota of every user no operator set one for."""
        return Quota(max_memories=self.quota_memories, max_characters=self.quota_characters)

    #: Where rate limits are counted: `memory://` counts in each worker alone; `redis://` is shared.
    rate_limit_storage: str = "memory://"
    #: `--rate-limit` rules over the defaults, e.g. `search=300/minute`.
    rate_limits: list[str] = attrs.field(factory=list)
    #: `--secret-screen` as chosen by the parent: `refuse` or `off` (memorybank.secret_settings).
    secret_screen: str = secret_settings.REFUSE
    #: `--search` and `--embedder-model` as the parent chose them (memorybank.semantic).
    search: str = "lexical"
    embedder_model: str | None = None

    def to_json(self) -> str:
        """For the environment of the workers."""
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeOptions:
        """What `to_json` wrote."""
        values = json.loads(text)
        return cls(**{**values, "oauth": OAuthOptions(**values["oauth"])})


def shared_between_processes(database_url: str) -> bool:
    """False for an in-memory SQLite database, which lives and dies inside one process."""
    url = sa.make_url(database_url)
    return url.get_backend_name() != "sqlite" or url.database not in (None, "", ":memory:")


def run(
    options: ServeOptions,
    *,
    workers: int,
    log_format: str = "text",
    shutdown_timeout: int = 10,
) -> None:
    """Serve until SIGTERM or SIGINT: `workers` processes on `options.bind_host:options.port`.

    `serve` without `--workers` runs its one process itself, on a socket it bound (memorybank.commands.serve).
    """
    os.environ[OPTIONS_ENV] = options.to_json()
    made_metrics_dir = not os.environ.get(METRICS_DIR_ENV)
    if made_metrics_dir:
        os.environ[METRICS_DIR_ENV] = tempfile.mkdtemp(prefix="memorybank-metrics-")
    config = uvicorn.Config(
        APP_FACTORY,
        factory=True,
        host=options.bind_host,
        port=options.port,
        workers=workers,
        log_config=logging_config(log_format),
        # No uvicorn access log: it prints query strings, and search text must never be logged.
        # The app logs its own access event (operationId, status, timing, request id).
        access_log=False,
        http=HTTP_PARSER,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    try:
        if listeners.SPREADS_CONNECTIONS:
            # uvicorn's supervisor (restarts, signals), each worker on a listener of its own (see listeners).
            with listeners.HeldPort.bind_to(options.bind_host, options.port) as held:
                Multiprocess(config, sockets=[held]).run()
        else:
            Multiprocess(config, sockets=[config.bind_socket()]).run()
    finally:
        if made_metrics_dir:
            shutil.rmtree(os.environ.pop(METRICS_DIR_ENV), ignore_errors=True)


def app_from_environment() -> ASGIApp:
    """uvicorn's app factory, run in each worker: the server app for the options `run` left behind."""
    options = ServeOptions.from_json(os.environ[OPTIONS_ENV])
    oauth = choose_oauth(options.oauth, os.environ, host=options.bind_host, port=options.port)
    panel_sign_in = choose_panel_sign_in(options.oauth, os.environ, oauth)
    issuers = composition.connect_issuers(oauth)
    keys = choose_key_ring(Path(options.key_file) if options.key_file else None, os.environ)
    # The model loads once per worker, before the database is opened.
    search = SearchChoice(mode=options.search, embedder_model=options.embedder_model)
    embedder = semantic.load_embedder(search) if search.hybrid else None
    storage = composition.open_ready_storage(DatabaseChoice(url=options.database_url, source="serve"), keys)
    semantic.apply_search(storage, search, embedder)
    return composition.build_server_app(
        storage,
        bind_host=options.bind_host,
        metrics_token=os.environ.get(METRICS_TOKEN_ENV) or None,
        allowed_hosts=options.allowed_hosts,
        issuers=issuers,
        default_quota=options.default_quota,
        rate_limits=composition.build_rate_limits(
            RateLimitChoice(storage_url=options.rate_limit_storage, rules=tuple(options.rate_limits))
        ),
        panel_sign_in=panel_sign_in,
        secret_screen=options.secret_screen,
    )
