"""CPU per request of the server app, in-process: the mix driven straight into the ASGI app, no socket.

    python -m benchmarks.request_cpu [--backend mariadb|sqlite] [--requests 3000] [--concurrency 16]
    python -m benchmarks.request_cpu --profile FILE        # yappi, every thread: where a request's CPU goes

On a shared machine, requests/s under wrk move with everyone else's load; CPU seconds per request
do not, much. This drives `build_server_app` (the app every `serve` worker runs) with the wrk mix
of `benchmarks/mix.lua` (60 % search, 20 % list, 20 % save with 2 contexts, random users of the
throughput benchmark's mix database, made by `python -m benchmarks.throughput mix` first), from
`--concurrency` asyncio tasks, and prints this process's CPU time per request (the app: routing,
auth, use case, SQL driver, JSON; no HTTP parsing) and the MariaDB server's, read from /proc.
It also times `get_many` of 20 memories with their contexts alone (the issue's ≤ 0.5 ms goal).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa

from adapters_mysql.schema import memory
from benchmarks.common import time_calls
from benchmarks.processes import cpu_seconds, listening_pid
from benchmarks.throughput import MIX_ROWS, SQLITE_HOME, _mix_url
from memorybank import bootstrap
from memorybank.settings import RateLimitChoice, Settings

WORDS = ("zanzibar", "lighthouse", "deployment", "project")


def _request(rng: random.Random, n: int) -> tuple[str, str, bytes, bytes]:
    """Method, path, query string and body of one mix request (benchmarks/mix.lua's choices)."""
    roll = rng.randrange(100)
    if roll < 60:
        return "GET", "/v1/memory/search", f"q={rng.choice(WORDS)}&limit=20".encode(), b""
    if roll < 80:
        return "GET", "/v1/memory", b"limit=20", b""
    body = {
        "content": f"In-process note {n} about the project deployment checklist",
        "tags": ["load"],
        "contexts": [
            {"snippet": f"first snippet of note {n}", "conversation_id": f"conv-{n % 50}"},
            {"snippet": f"second snippet of note {n}", "origin": "active_conversation"},
        ],
    }
    return "POST", "/v1/memory", b"", json.dumps(body).encode()


async def _call(app: Any, method: str, path: str, query: bytes, body: bytes, token: str) -> int:
    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode())]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _drive(app: Any, tokens: Sequence[str], requests: int, concurrency: int) -> list[int]:
    rng = random.Random(14)
    plan = [(*_request(rng, n), rng.choice(tokens)) for n in range(requests)]
    statuses: list[int] = []
    queue = iter(plan)

    async def worker() -> None:
        for method, path, query, body, token in queue:
            statuses.append(await _call(app, method, path, query, body, token))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


async def _with_lifespan(
    app: Any, tokens: Sequence[str], requests: int, concurrency: int, database_pid: int | None
) -> tuple[list[int], float, float]:
    """Start the app, warm it, drive the mix; the statuses, this process's and the database's CPU seconds."""
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await messages.put({"type": "lifespan.startup"})
    lifespan = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}}, messages.get, answers.put))
    await answers.get()
    # Warm the pool and every token's cache entry: a long-running worker has seen its callers.
    await asyncio.gather(*(_call(app, "GET", "/v1/memory", b"limit=1", b"", token) for token in tokens))
    database_before = cpu_seconds(database_pid) if database_pid else 0.0
    started = time.process_time()
    statuses = await _drive(app, tokens, requests, concurrency)
    used = time.process_time() - started
    database_used = (cpu_seconds(database_pid) - database_before) if database_pid else 0.0
    await messages.put({"type": "lifespan.shutdown"})
    await answers.get()
    await lifespan
    return statuses, used, database_used


def main(argv: Sequence[str] | None = None) -> None:
    """Drive the app and print CPU per request."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.request_cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("mariadb", "sqlite"), default="mariadb")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile", type=Path, help="write a yappi CPU profile summary (every thread) here")
    args = parser.parse_args(argv)
    url = _mix_url(args.backend, MIX_ROWS)
    tokens = (SQLITE_HOME / f"tokens_{args.backend}_{MIX_ROWS}.txt").read_text().split()
    # Built as a `serve --rate-limit '*=off'` worker builds it: the mix sends far more than a person does.
    settings = Settings.for_database(url, rate_limits=RateLimitChoice(storage_url="memory://", rules=("*=off",)))
    runtime = bootstrap.build(settings, serving=True)
    storage = runtime.storage
    user_id, memory_ids = _twenty(storage.engine)
    with storage.unit_of_work():  # as a request runs it: on the request's one connection
        load = time_calls(
            lambda: storage.store.get_many(user_id=user_id, memory_ids=memory_ids), repeats=500, budget_seconds=10
        )
    app = runtime.app  # its lifespan's end closes the runtime
    database_pid = listening_pid(int(urlsplit(url).port or 3306)) if args.backend == "mariadb" else None
    wall = time.perf_counter()
    if args.profile:
        import yappi

        yappi.set_clock_type("cpu")
        yappi.start(builtins=False, profile_threads=True)
    statuses, used, database_used = asyncio.run(
        _with_lifespan(app, tokens, args.requests, args.concurrency, database_pid)
    )
    if args.profile:
        yappi.stop()
        from benchmarks.profiled_serve import summarize

        args.profile.write_text(summarize(yappi.get_func_stats()))
    wall = time.perf_counter() - wall
    bad = sum(1 for status in statuses if status >= 300)
    print(
        f"{args.backend}: {len(statuses)} requests (non-2xx: {bad}), concurrency {args.concurrency}; "
        f"load average {os.getloadavg()[0]:.2f}\n"
        f"app CPU per request {1000 * used / len(statuses):.3f} ms; database server CPU per request "
        f"{1000 * database_used / len(statuses):.3f} ms (the server's every client counts; run {wall:.1f} s)\n"
        f"get_many of 20 memories with contexts, in-process: p50 {load.p50:.3f} ms, p95 {load.p95:.3f} ms"
    )


def _twenty(engine: sa.Engine) -> tuple[str, list[str]]:
    with engine.connect() as connection:
        user_id = connection.execute(sa.select(memory.c.user_id).limit(1)).scalar_one()
        ids = connection.execute(sa.select(memory.c.id).where(memory.c.user_id == user_id).limit(20)).scalars().all()
    return user_id, list(ids)


if __name__ == "__main__":
    main()
