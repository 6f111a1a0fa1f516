"""The floor under a memory request: the stack `memorybank serve` runs on, with nothing of memorybank's.

    MEMORYBANK_FLOOR_DB=URL python -m uvicorn --factory benchmarks.floor_app:app --http httptools --port PORT

uvicorn with the same HTTP parser and event loop as `serve`, and a Starlette app of two routes:
`GET /healthz` answers a fixed body on the event loop, as the real one does; `GET /floor?trips=N`
hops to the thread pool once, as every memory route does (ADR 0016), runs N `SELECT 1` on that
thread's kept connection (mysqlclient on a MySQL URL, sqlite3 on a file URL) and answers a fixed
JSON body. No authentication, no use case, no JSON encoding: what one hop and N round trips cost on
this machine, which no change to memorybank's own code can go below. `benchmarks.request_cost` times
it beside the memory routes, with N set to the round trips each route was counted to make.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harness.served import free_port
from memorybank.serving import HTTP_PARSER

FLOOR_DB_ENV = "MEMORYBANK_FLOOR_DB"
_BODY = b'{"status":"ok"}'


class _Connections(threading.local):
    """One kept database connection per pool thread, as the real server's pool keeps them."""

    def __init__(self) -> None:
        self.connection: Any = None


def app() -> Starlette:
    """The floor app for the database named by $MEMORYBANK_FLOOR_DB."""
    url = sa.make_url(os.environ[FLOOR_DB_ENV])
    kept = _Connections()

    def connect() -> Any:
        if url.get_backend_name() == "sqlite":
            return sqlite3.connect(url.database or ":memory:")
        import MySQLdb  # the `mysql` extra's driver, as the real server uses

        return MySQLdb.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 3306,
            user=url.username or "root",
            password=url.password or "",
            database=url.database or "",
        )

    def round_trips(count: int) -> None:
        if kept.connection is None:
            kept.connection = connect()
        cursor = kept.connection.cursor()
        try:
            for _ in range(count):
                cursor.execute("SELECT 1")
                cursor.fetchall()
        finally:
            cursor.close()

    async def healthz(_request: Request) -> Response:
        return Response(_BODY, media_type="application/json")

    async def floor(request: Request) -> Response:
        await run_in_threadpool(round_trips, int(request.query_params.get("trips", "0")))
        return Response(_BODY, media_type="application/json")

    return Starlette(routes=[Route("/healthz", healthz), Route("/floor", floor)])


@attrs.frozen
class FloorServer:
    """A running floor app: where it answers, and its process (uvicorn's supervisor when it has several workers)."""

    base_url: str
    pid: int


@contextmanager
def floor_server(db_url: str, *, workers: int = 1) -> Iterator[FloorServer]:
    """Serve the floor app for `db_url` in its own process (`workers` of them under uvicorn's supervisor, as
    `serve --workers` runs) until the block ends."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", "benchmarks.floor_app:app", "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    process = subprocess.Popen(  # noqa: S603 - our own command, no shell
        [*command, "--http", HTTP_PARSER, "--no-access-log", "--log-level", "warning"],
        env={**os.environ, FLOOR_DB_ENV: db_url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/healthz", timeout=1):  # noqa: S310 - loopback
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the floor server did not start") from None
                time.sleep(0.1)
        yield FloorServer(base_url=base_url, pid=process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
