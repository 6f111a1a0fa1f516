"""What the HTTP layer adds: p50/p95 of save and search through a real `memorybank serve`
process, beside the same use case called in-process, on SQLite and on MariaDB.

    python -m benchmarks.http_overhead [--iterations 400] [--mysql-server mysql://root@127.0.0.1:3306]

The HTTP figures include everything a client sees: the loopback TCP round trip, uvicorn,
routing, bearer-token lookup in the database, JSON parsing and serialization, the thread
pool hop, and the server's own request logging.
"""

from __future__ import annotations

import argparse
import os
import platform
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import attrs
import httpx2
import sqlalchemy as sa

from adapters_mysql import open_storage
from memorybank_core import MemoryBank, SaveRequest, TokenPrincipal, TokenService
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from tests.served import served

SEED_MEMORIES = 1000
WARM_UP = 30
TOPICS = ["deploy", "staging", "billing", "onboarding", "incident", "roadmap", "pricing", "hiring"]
QUERY = "staging deploy checklist"


def _save_body(i: int) -> dict[str, object]:
    topic, other = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
    return {
        "content": f"Memory {i}: the {topic} checklist mentions {other} and the owner of step {i % 13}",
        "tags": [topic, other],
        "contexts": [{"snippet": f"from the {topic} thread, message {i}", "conversation_id": f"conv-{i % 50}"}],
    }


@attrs.frozen
class Figures:
    """Latency percentiles in milliseconds."""

    p50: float
    p95: float


def _percentiles(samples: list[float]) -> Figures:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return Figures(p50=statistics.median(samples) * 1000, p95=cuts[94] * 1000)


def _measure(call: Callable[[int], object], iterations: int) -> Figures:
    for i in range(WARM_UP):
        call(-i - 1)
    samples = []
    for i in range(iterations):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    return _percentiles(samples)


@contextmanager
def _sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory:
        yield f"sqlite:///{Path(directory) / 'bench.sqlite3'}"


@contextmanager
def _mariadb_database(server: str) -> Iterator[str]:
    url = sa.make_url(server)
    admin = sa.create_engine(url.set(drivername="mysql+mysqldb", database=None), poolclass=sa.pool.NullPool)
    name = f"memorybank_bench_{secrets.token_hex(4)}"
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    try:
        yield url.set(drivername="mysql", database=name).render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        admin.dispose()


@attrs.frozen
class Row:
    """One line of the report."""

    backend: str
    operation: str
    in_process: Figures
    over_http: Figures


def _bench_backend(backend: str, url: str, iterations: int) -> list[Row]:
    user_id, org_id = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    storage = open_storage(url)
    try:
        if storage.dialect_name == "mysql":
            storage.migrate()
        else:
            storage.initialize()
        bank = MemoryBank(store=storage.store, search_engine=storage.search_engine)
        secret = TokenService(store=storage.token_store).issue(user_id=user_id, org_id=org_id).secret
        principal = TokenPrincipal(user_id=user_id, organization_id=org_id, scopes=frozenset({"mcp:read", "mcp:write"}))
        for i in range(SEED_MEMORIES):
            bank.save(principal, SaveRequest.parse(_save_body(i)))
        save_in_process = _measure(lambda i: bank.save(principal, SaveRequest.parse(_save_body(i))), iterations)
        search_in_process = _measure(lambda _: bank.search(principal, query=QUERY), iterations)
    finally:
        storage.close()

    with (
        served(url) as base_url,
        httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client,
    ):

        def save_over_http(i: int) -> None:
            response = client.post("/v1/memory", json=_save_body(i))
            if response.status_code != 201:
                raise RuntimeError(f"save failed: {response.status_code} {response.text}")

        def search_over_http(_: int) -> None:
            response = client.get("/v1/memory/search", params={"q": QUERY})
            if response.status_code != 200:
                raise RuntimeError(f"search failed: {response.status_code} {response.text}")

        save_http = _measure(save_over_http, iterations)
        search_http = _measure(search_over_http, iterations)
    return [
        Row(backend, "POST /v1/memory", save_in_process, save_http),
        Row(backend, "GET /v1/memory/search", search_in_process, search_http),
    ]


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=400, help="timed calls per operation (default: 400)")
    parser.add_argument(
        "--mysql-server",
        default=os.environ.get("MEMORYBANK_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306"),
        help="a MariaDB/MySQL server where a throwaway database may be created",
    )
    args = parser.parse_args()

    rows: list[Row] = []
    with _sqlite_database() as url:
        rows += _bench_backend("sqlite", url, args.iterations)
    with _mariadb_database(args.mysql_server) as url:
        rows += _bench_backend("mariadb", url, args.iterations)

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"HTTP overhead, {when}; Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    print(f"{SEED_MEMORIES} memories seeded for the user; {args.iterations} timed calls per figure; times in ms")
    print()
    columns = ("backend", "operation", "in-process p50 / p95", "HTTP p50 / p95", "HTTP adds (p50)")
    header = f"{columns[0]:<8}  {columns[1]:<22}  {columns[2]:>20}  {columns[3]:>16}  {columns[4]:>15}"
    print(header)
    print("-" * len(header))
    for row in rows:
        in_process = f"{row.in_process.p50:.2f} / {row.in_process.p95:.2f}"
        over_http = f"{row.over_http.p50:.2f} / {row.over_http.p95:.2f}"
        added = row.over_http.p50 - row.in_process.p50
        print(f"{row.backend:<8}  {row.operation:<22}  {in_process:>20}  {over_http:>16}  {added:>15.2f}")


if __name__ == "__main__":
    main()
