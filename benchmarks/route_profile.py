"""Where a memory request's CPU goes, route by route, layer by layer (issue #24's profile).

    pip install -e ".[bench]"     # yappi
    python -m benchmarks.route_profile --backend mariadb --rows 10000

On the database `benchmarks.request_cost` prepares (the same corpus and measured user), builds the
app every `serve` worker runs (`bootstrap.build`, rate limits on at limits one client stays under)
and drives it in this process, straight through ASGI, one request at a time: `GET /healthz`, list
(20), search for a rare and a common word, save with 2 contexts. For each route it first takes the
CPU per request without a profiler (this process, every thread), then profiles the same number of
calls with yappi (CPU clock, every thread) and splits the profile's self time into layers by the
file each function lives in. Shares are of the profiled time (a profiler slows small functions most,
so read them as proportions); the CPU per request is the unprofiled figure. No socket and no HTTP
parsing: those are the floor's (benchmarks/floor_app.py), measured by request_cost.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from benchmarks.common import delete_saved_since, run_header
from benchmarks.corpus import COMMON, RARE
from benchmarks.request_cost import (
    BARE,
    GENEROUS_RULE,
    LIST,
    SAVE,
    SEARCH_COMMON,
    SEARCH_RARE,
    _in_repository,
    _save_body,
    prepare,
)
from benchmarks.request_cpu import _call
from memorybank import bootstrap
from memorybank.settings import RateLimitChoice, Settings

#: Layers, first match wins: a path fragment of the function's file, and the layer's name.
LAYERS: tuple[tuple[str, str], ...] = (
    ("/memorybank_core/wire.py", "memory → JSON data (memorybank_core.wire)"),
    ("/adapters_http/", "HTTP adapter: auth, routing, bodies, JSON bytes"),
    ("/memorybank_core/", "core: use cases, tokens, controls, validation"),
    ("/memorybank_search/", "search: analysis and ranking"),
    ("/memorybank_text/", "search: analysis and ranking"),
    ("/adapters_secrets/", "secret screen"),
    ("/detect_secrets/", "secret screen"),
    ("/adapters_ratelimit/", "rate limits"),
    ("/limits/", "rate limits"),
    ("/adapters_mysql/", "SQL adapter: compiled reads, rows → entities"),
    ("/sqlalchemy/", "SQLAlchemy: types, pool, transactions"),
    ("/MySQLdb/", "database driver"),
    ("sqlite3", "database driver"),
    ("/starlette/", "stack: Starlette, anyio, asyncio, threads"),
    ("/anyio/", "stack: Starlette, anyio, asyncio, threads"),
    ("/asyncio/", "stack: Starlette, anyio, asyncio, threads"),
    ("threading.py", "stack: Starlette, anyio, asyncio, threads"),
    ("/concurrent/", "stack: Starlette, anyio, asyncio, threads"),
    ("/json/", "JSON parsing (stored tags, request bodies)"),
    ("/prometheus_client/", "metrics"),
    ("/logging/", "logging"),
    ("/site-packages/", "other libraries (attrs, typeid, …)"),
    ("/lib/python3", "Python standard library (contextlib, enum, datetime, …)"),
)
OTHER = "other"


def layer_of(path: str) -> str:
    """The layer a function's file belongs to."""
    return next((name for fragment, name in LAYERS if fragment in path), OTHER)


def _requests() -> dict[str, tuple[str, str, bytes, Callable[[int], bytes]]]:
    def search(word: str) -> tuple[str, str, bytes, Callable[[int], bytes]]:
        return "GET", "/v1/memory/search", urlencode({"q": word, "limit": 20}).encode(), lambda _n: b""

    return {
        BARE: ("GET", "/healthz", b"", lambda _n: b""),
        LIST: ("GET", "/v1/memory", b"limit=20", lambda _n: b""),
        SEARCH_RARE: search(RARE),
        SEARCH_COMMON: search(COMMON),
        # The saves request_cost times: text like the corpus's, a different memory each (a bank of copies of one
        # sentence would make every save's `similar` look-up rank the whole bank).
        SAVE: ("POST", "/v1/memory", b"", _save_body),
    }


async def _profile(app: Any, secret: str, calls: int) -> dict[str, tuple[float, dict[str, float]]]:
    import yappi  # the `bench` extra

    results: dict[str, tuple[float, dict[str, float]]] = {}
    numbers = iter(range(10**9))
    for name, (method, path, query, body) in _requests().items():

        async def run(
            count: int, method: str = method, path: str = path, query: bytes = query, body: Any = body
        ) -> None:
            for _ in range(count):
                status = await _call(app, method, path, query, body(next(numbers)), secret)
                if status >= 300:
                    raise SystemExit(f"{method} {path} answered {status}")

        await run(50)  # warm: the pool's connections, the token cache, the statements
        started = time.process_time()
        await run(calls)
        cpu_ms = (time.process_time() - started) * 1000 / calls
        yappi.clear_stats()
        yappi.set_clock_type("cpu")
        yappi.start(builtins=False, profile_threads=True)
        await run(calls)
        yappi.stop()
        layers: dict[str, float] = {}
        for entry in yappi.get_func_stats():
            layer = layer_of(entry.module)
            layers[layer] = layers.get(layer, 0.0) + entry.tsub
        results[name] = (cpu_ms, layers)
    return results


async def _with_lifespan(app: Any, secret: str, calls: int) -> dict[str, tuple[float, dict[str, float]]]:
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await messages.put({"type": "lifespan.startup"})
    lifespan = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}}, messages.get, answers.put))
    await answers.get()
    try:
        return await _profile(app, secret, calls)
    finally:
        await messages.put({"type": "lifespan.shutdown"})
        await answers.get()
        await lifespan


def print_profile(results: dict[str, tuple[float, dict[str, float]]]) -> None:
    """One table: CPU per request, then each layer's share of it, route by route."""
    names = list(results)
    order = sorted(
        {layer for _cpu, layers in results.values() for layer in layers},
        key=lambda layer: -sum(layers.get(layer, 0.0) / (sum(layers.values()) or 1) for _c, layers in results.values()),
    )
    print("| layer | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    print("| **CPU ms per request (unprofiled)** | " + " | ".join(f"**{results[n][0]:.2f}**" for n in names) + " |")
    for layer in order:
        cells = []
        for name in names:
            layers = results[name][1]
            share = layers.get(layer, 0.0) / (sum(layers.values()) or 1)
            cells.append(f"{100 * share:.0f} %" if share >= 0.005 else "")
        print(f"| {layer} | " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    """Profile each route and print the layer table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.route_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("mariadb", "sqlite"), default="mariadb")
    parser.add_argument("--rows", type=int, default=10_000, help="memories in the database (default: 10000)")
    parser.add_argument("--calls", type=int, default=1000, help="calls of each route, unprofiled and profiled")
    args = parser.parse_args(argv)
    with _in_repository():
        prepared = prepare(args.backend, args.rows)
        limits = RateLimitChoice(storage_url="memory://", rules=(GENEROUS_RULE,))
        settings = Settings.for_database(prepared.url, rate_limits=limits)
        runtime = bootstrap.build(settings, serving=True)
        started_at = datetime.now(UTC)
        # The app's lifespan end closes the runtime.
        results = asyncio.run(_with_lifespan(runtime.app, prepared.measured_secret, args.calls))
        delete_saved_since(prepared.url, started_at)  # a second run profiles the same corpus
        print(run_header(f"route profile, {args.backend}, {args.rows:,} memories"))
        print(f"command: python -m benchmarks.route_profile --backend {args.backend} --rows {args.rows}")
        print()
        print_profile(results)


if __name__ == "__main__":
    main()
