"""`memorybank serve`: the HTTP server (REST, the MCP rail, the panel), in one process or several workers."""

from __future__ import annotations

import argparse
import errno
import socket
from typing import TextIO

import attrs

from memorybank import listeners, secret_settings, semantic
from memorybank.commands.base import EXIT_BAD_INPUT, PROGRAM, CommandError, Shared, Subcommands
from memorybank.settings import DEFAULT_HOST, DEFAULT_PORT, Settings, add_arguments, redacted
from memorybank_core import RateLimits
from memorybank_core.distribution import install_command

#: Where `serve` listens by default (`panel-link` names it when no public URL is set).
DEFAULT_SERVER = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"


def register(commands: Subcommands, shared: Shared) -> None:
    serve = commands.add_parser(
        "serve",
        parents=[shared.database],
        help="run the HTTP server",
        description="Run the HTTP API. The embedded SQLite database is created on first start; a MySQL "
        "database must be migrated first (`memorybank migrate`).",
    )
    add_arguments(serve, "serve")  # every flag `serve` takes is declared in memorybank.settings
    serve.set_defaults(run=run_serve)


def run_serve(_args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    import uvicorn

    from memorybank import bootstrap, composition, serving
    from memorybank.logs import logging_config

    http = settings.http
    if http.workers > 1 and not serving.shared_between_processes(settings.database.url):
        raise CommandError(
            "--workers above 1 needs a database file or server: in-memory SQLite lives in one process",
            EXIT_BAD_INPUT,
        )
    # A supervisor of several workers only checks the model's files; each worker loads its own.
    settings = semantic.serving_default(settings)
    with bootstrap.build(settings, serving=True, search="check" if http.workers > 1 else "load") as runtime:
        settings = runtime.settings  # a default hybrid search without the semantic extra is lexical from here
        storage, oauth, panel_sign_in = runtime.storage, runtime.oauth, runtime.panel_sign_in
        # Bound here, before saying "serving": a port in use is one clear line, not a log after the banner.
        listener = _listen(http.host, http.port)
        port = listener.getsockname()[1]
        base = f"http://{_url_host(http.host)}:{port}"
        print(f"{PROGRAM}: {storage.describe_mode()}", file=out)
        print(f"{PROGRAM}: {semantic.describe(storage, settings.search)}", file=out)
        workers = f", {http.workers} workers" if http.workers > 1 else ""
        where = redacted(settings.database.url)
        print(f"{PROGRAM}: serving {base} ({_rail_at(base)}) on {where}{workers}", file=out, flush=True)
        assert runtime.rate_limits is not None  # noqa: S101 - built with serving=True
        print(_describe_rate_limits(runtime.rate_limits, settings), file=out, flush=True)
        print(f"{PROGRAM}: {secret_settings.describe(settings.secret_screen)}", file=out, flush=True)
        if oauth is not None and panel_sign_in is not None:
            print(
                f"{PROGRAM}: panel sign-in with {panel_sign_in.issuer} as client {panel_sign_in.client_id}; "
                f"its redirect URI: {composition.panel_callback_url(oauth)}",
                file=out,
                flush=True,
            )
        if http.workers > 1:
            # Each worker builds its own runtime (memorybank.serving); the checks above stand.
            listener.close()
            runtime.close()
            serving.run(attrs.evolve(settings, http=attrs.evolve(http, port=port)))
            return
        # No uvicorn access log: it prints query strings, and search text must never be logged.
        # The app logs its own access event (operationId, status, timing, request id).
        config = uvicorn.Config(
            runtime.app,
            access_log=False,
            http=serving.HTTP_PARSER,
            log_level="info",
            log_config=logging_config(http.log_format),
            timeout_graceful_shutdown=http.shutdown_timeout,
        )
        with listener:
            uvicorn.Server(config).run(sockets=[listener])


def _describe_rate_limits(rate_limits: RateLimits, settings: Settings) -> str:
    from adapters_ratelimit import describe_storage  # scheme, host, port and database: never a password

    rules = ", ".join(rate_limits.policy.describe()) or "none"
    storage_url, workers = settings.rate_limits.storage_url, settings.http.workers
    line = f"{PROGRAM}: rate limits {rules}; counted in {describe_storage(storage_url)}"
    if workers > 1 and storage_url.startswith("memory"):
        line += f" by each of the {workers} workers alone (--rate-limit-storage redis://... shares them)"
    return line


def _rail_at(base: str) -> str:
    """Where the MCP rail answers, or that it is off (the `mcp` extra is missing): the banner never promises it."""
    from memorybank import composition

    try:
        composition.require_mcp()
    except composition.McpUnavailableError:
        return f"MCP rail off: {install_command(composition.MCP_EXTRA)}"
    return f"MCP: {base}/mcp/agent"


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, as uvicorn would bind it (SO_REUSEADDR, IPv6 for a `:` host)."""
    try:
        return listeners.tcp_listener(host, port)
    except socket.gaierror as error:  # an unknown host name (a subclass of OSError, so first)
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror}", EXIT_BAD_INPUT) from error
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise CommandError(
                f"port {port} on {host} is already in use: stop what listens there or choose another with --port"
            ) from error
        raise CommandError(f"cannot listen on {host}:{port}: {error.strerror or error}") from error


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
