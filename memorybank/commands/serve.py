"""`memorybank serve`: the HTTP server (REST, the MCP rail, the panel), in one process or several workers."""

from __future__ import annotations

import argparse
import errno
import socket
from typing import TextIO

from memorybank import listeners, oauth_settings, secret_settings, semantic
from memorybank.commands import secrets
from memorybank.commands.base import EXIT_BAD_INPUT, PROGRAM, CommandError, Shared, Subcommands
from memorybank.commands.oauth_options import add_oauth_options, oauth_options
from memorybank.settings import (
    ALLOWED_HOSTS_ENV,
    QUOTA_CHARACTERS_ENV,
    QUOTA_MEMORIES_ENV,
    RATE_LIMIT_STORAGE_ENV,
    RATE_LIMITS_ENV,
    DatabaseChoice,
    RateLimitChoice,
    choose_allowed_hosts,
    choose_quota,
    choose_rate_limits,
    redacted,
)
from memorybank_core import RateLimits, limits
from memorybank_core.distribution import install_command

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
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
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default: {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default: {DEFAULT_PORT})")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes sharing the port, each with its own connection pool (default: 1)",
    )
    serve.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="text lines or JSON lines (default: text)"
    )
    serve.add_argument(
        "--shutdown-timeout",
        type=int,
        default=10,
        metavar="SECONDS",
        help="on SIGTERM, how long in-flight requests may take to finish (default: 10)",
    )
    serve.add_argument(
        "--allowed-host",
        metavar="HOST",
        action="append",
        dest="allowed_hosts",
        help="a Host header the MCP rail accepts besides loopback names, e.g. bank.example.com behind a reverse "
        f"proxy (`name`, `name:port` or `name:*`); repeat for several; default: ${ALLOWED_HOSTS_ENV} "
        "(comma-separated)",
    )
    serve.add_argument(
        "--quota-memories",
        metavar="N",
        help=f"each user's quota of memories unless an operator set theirs (`memorybank quota`); default: "
        f"${QUOTA_MEMORIES_ENV}, else {limits.QUOTA_MEMORIES_DEFAULT:_}",
    )
    serve.add_argument(
        "--quota-characters",
        metavar="N",
        help=f"each user's quota of characters (content, tags and snippets together); default: "
        f"${QUOTA_CHARACTERS_ENV}, else {limits.QUOTA_CHARACTERS_DEFAULT:_}",
    )
    rate_limit_options = serve.add_argument_group(
        "rate limits", "per user (and optionally per token), per operation; see docs/operations.md#rate-limits"
    )
    rate_limit_options.add_argument(
        "--rate-limit",
        metavar="RULE",
        action="append",
        dest="rate_limits",
        help="change a limit: OPERATION=N/UNIT with OPERATION save, search, list, delete or * (all), prefixed "
        "token. for a per-token limit; N/UNIT like 120/minute, or off; repeat for several (default: "
        f"${RATE_LIMITS_ENV}, comma-separated; else save=60/minute and 120/minute for the others)",
    )
    rate_limit_options.add_argument(
        "--rate-limit-storage",
        metavar="URL",
        help="where limits are counted: memory:// (each process alone) or redis://host:port/db, shared by every "
        f"worker and host (default: ${RATE_LIMIT_STORAGE_ENV}, else memory://)",
    )
    semantic.add_search_options(serve)
    add_oauth_options(serve)
    secrets.add_secret_screen_option(serve)
    serve.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    import uvicorn

    from memorybank import composition, serving
    from memorybank.logs import logging_config

    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be from 0 to 65535", EXIT_BAD_INPUT)
    if not 1 <= args.workers <= 64:
        raise CommandError("--workers must be from 1 to 64", EXIT_BAD_INPUT)
    if not 0 <= args.shutdown_timeout <= 3600:
        raise CommandError("--shutdown-timeout must be from 0 to 3600 seconds", EXIT_BAD_INPUT)
    if args.workers > 1 and not serving.shared_between_processes(choice.url):
        raise CommandError(
            "--workers above 1 needs a database file or server: in-memory SQLite lives in one process",
            EXIT_BAD_INPUT,
        )
    allowed_hosts = choose_allowed_hosts(args.allowed_hosts, args.environment)
    quota = choose_quota(args.quota_memories, args.quota_characters, args.environment)
    secret_screen = secret_settings.choose_secret_screen(args.secret_screen, args.environment)
    limits_choice = choose_rate_limits(args.rate_limit_storage, args.rate_limits, args.environment)
    rate_limits = composition.build_rate_limits(limits_choice)  # checks the rules and URL before anything starts
    options = oauth_options(args)
    oauth = oauth_settings.choose_oauth(options, args.environment, host=args.host, port=args.port)
    panel_sign_in = oauth_settings.choose_panel_sign_in(options, args.environment, oauth)
    search = semantic.choose_search(args.search, args.embedder_model, args.environment)
    # Before the database is opened: a missing extra or model is one line, and nothing is held. A
    # supervisor of several workers only checks the files; each worker loads its own model.
    embedder = None
    if search.hybrid and args.workers > 1:
        semantic.check_embedder(search)
    elif search.hybrid:
        embedder = semantic.load_embedder(search)
    storage = composition.open_ready_storage(choice, args.keys)
    issuers = composition.connect_issuers(oauth)
    try:
        if embedder is not None:
            semantic.apply_search(storage, search, embedder)
        # Bound here, before saying "serving": a port in use is one clear line, not a log after the banner.
        listener = _listen(args.host, args.port)
        port = listener.getsockname()[1]
        base = f"http://{_url_host(args.host)}:{port}"
        print(f"{PROGRAM}: {storage.describe_mode()}", file=out)
        print(f"{PROGRAM}: {semantic.describe(storage, search)}", file=out)
        workers = f", {args.workers} workers" if args.workers > 1 else ""
        print(f"{PROGRAM}: serving {base} ({_rail_at(base)}) on {redacted(choice.url)}{workers}", file=out, flush=True)
        print(_describe_rate_limits(rate_limits, limits_choice, workers=args.workers), file=out, flush=True)
        print(f"{PROGRAM}: {secret_settings.describe(secret_screen)}", file=out, flush=True)
        if oauth is not None and panel_sign_in is not None:
            print(
                f"{PROGRAM}: panel sign-in with {panel_sign_in.issuer} as client {panel_sign_in.client_id}; "
                f"its redirect URI: {composition.panel_callback_url(oauth)}",
                file=out,
                flush=True,
            )
        if args.workers > 1:
            # Each worker opens its own storage and issuers, and loads its own embedder (memorybank.serving);
            # the checks above stand.
            listener.close()
            storage.close()
            serving.run(
                serving.ServeOptions(
                    database_url=choice.url,
                    bind_host=args.host,
                    port=port,
                    oauth=options,
                    allowed_hosts=list(allowed_hosts),
                    key_file=str(args.key_file) if args.key_file is not None else None,
                    quota_memories=quota.max_memories,
                    quota_characters=quota.max_characters,
                    rate_limit_storage=limits_choice.storage_url,
                    rate_limits=list(limits_choice.rules),
                    secret_screen=secret_screen,
                    search=search.mode,
                    embedder_model=search.embedder_model,
                ),
                workers=args.workers,
                log_format=args.log_format,
                shutdown_timeout=args.shutdown_timeout,
            )
            return
        app = composition.build_server_app(
            storage,
            bind_host=args.host,
            allowed_hosts=allowed_hosts,
            metrics_token=args.environment.get(serving.METRICS_TOKEN_ENV) or None,
            issuers=issuers,
            default_quota=quota,
            rate_limits=rate_limits,
            panel_sign_in=panel_sign_in,
            secret_screen=secret_screen,
        )
        # No uvicorn access log: it prints query strings, and search text must never be logged.
        # The app logs its own access event (operationId, status, timing, request id).
        config = uvicorn.Config(
            app,
            access_log=False,
            http=serving.HTTP_PARSER,
            log_level="info",
            log_config=logging_config(args.log_format),
            timeout_graceful_shutdown=args.shutdown_timeout,
        )
        with listener:
            uvicorn.Server(config).run(sockets=[listener])
    finally:
        if issuers is not None:
            issuers.close()
        storage.close()


def _describe_rate_limits(rate_limits: RateLimits, choice: RateLimitChoice, *, workers: int) -> str:
    from adapters_ratelimit import describe_storage  # scheme, host, port and database: never a password

    rules = ", ".join(rate_limits.policy.describe()) or "none"
    line = f"{PROGRAM}: rate limits {rules}; counted in {describe_storage(choice.storage_url)}"
    if workers > 1 and choice.storage_url.startswith("memory"):
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
