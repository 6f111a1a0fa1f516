"""`memorybank serve`: uvicorn with one or several worker processes on one port.

Each worker is its own process with its own connection pool, built by `app_from_environment`
from the settings the parent leaves in the environment (`Settings.worker_environment`: uvicorn
starts workers with `spawn`, so nothing else crosses; secrets stay in the variables the workers
inherit and are read again there). Whatever workers share lives outside them: the database, and the metrics
directory (`PROMETHEUS_MULTIPROC_DIR`) that `/metrics` sums. SIGTERM stops a worker gracefully:
it stops accepting, finishes in-flight requests (at most `shutdown_timeout` seconds), then its
lifespan closes the pool.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import sqlalchemy as sa
import uvicorn
from starlette.types import ASGIApp
from uvicorn.supervisors import Multiprocess

from memorybank import bootstrap, listeners
from memorybank.logs import logging_config
from memorybank.settings import Settings

METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's multiprocess directory; `run` makes a fresh one unless it is set."""

APP_FACTORY = "memorybank.serving:app_from_environment"

HTTP_PARSER = "httptools"
"""uvicorn's HTTP/1.1 parser, named rather than left to uvicorn's choice of whatever is installed.

httptools (llhttp) refuses a header line ending in a bare LF with 400; h11, uvicorn's fallback,
accepts it, so `X-A: a\\nAuthorization: …` would reach the app as two headers a proxy in front may
have read as one (request smuggling). Naming it makes a missing httptools a start-up error, not h11.
"""


def shared_between_processes(database_url: str) -> bool:
    """False for an in-memory SQLite database, which lives and dies inside one process."""
    url = sa.make_url(database_url)
    return url.get_backend_name() != "sqlite" or url.database not in (None, "", ":memory:")


def run(settings: Settings) -> None:
    """Serve until SIGTERM or SIGINT: `settings.http.workers` processes on `settings.http.host:port`.

    `serve` without `--workers` runs its one process itself, on a socket it bound (memorybank.commands.serve).
    """
    http = settings.http
    os.environ.update(settings.worker_environment())
    made_metrics_dir = not os.environ.get(METRICS_DIR_ENV)
    if made_metrics_dir:
        os.environ[METRICS_DIR_ENV] = tempfile.mkdtemp(prefix="memorybank-metrics-")
    config = uvicorn.Config(
        APP_FACTORY,
        factory=True,
        host=http.host,
        port=http.port,
        workers=http.workers,
        log_config=logging_config(http.log_format),
        # No uvicorn access log: it prints query strings, and search text must never be logged.
        # The app logs its own access event (operationId, status, timing, request id).
        access_log=False,
        http=HTTP_PARSER,
        timeout_graceful_shutdown=http.shutdown_timeout,
    )
    try:
        if listeners.SPREADS_CONNECTIONS:
            # uvicorn's supervisor (restarts, signals), each worker on a listener of its own (see listeners).
            with listeners.HeldPort.bind_to(http.host, http.port) as held:
                Multiprocess(config, sockets=[held]).run()
        else:
            Multiprocess(config, sockets=[config.bind_socket()]).run()
    finally:
        if made_metrics_dir:
            shutil.rmtree(os.environ.pop(METRICS_DIR_ENV), ignore_errors=True)


def app_from_environment() -> ASGIApp:
    """uvicorn's app factory, run in each worker: the served app for the settings `run` left behind.

    Each worker builds its own runtime (pool, issuers, embedder); the app's lifespan closes it.
    """
    return bootstrap.build(Settings.for_worker(os.environ), serving=True).app
