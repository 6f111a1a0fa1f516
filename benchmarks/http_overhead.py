"""What the HTTP layer adds: p50/p95 of save and search through a real `memorybank serve`
process, beside the same use case called in-process, on SQLite and on MariaDB.

    python -m benchmarks.http_overhead [--iterations 400] [--mysql-server mysql://root@127.0.0.1:3306]

The HTTP figures include everything the server's HTTP layer does: the loopback TCP round
trip, uvicorn, routing, bearer-token lookup in the database, JSON parsing and serialization,
the thread-pool hops, and the server's own request logging. The client is a minimal
keep-alive socket client, so a client library's own cost is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import socket
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import attrs
import sqlalchemy as sa

from benchmarks.common import open_bank
from harness.served import NO_RATE_LIMITS, served
from memorybank_core import SaveRequest, TokenPrincipal
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id

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


class KeepAliveClient:
    """A minimal HTTP/1.1 keep-alive client on a raw socket.

    A full client library costs the caller 0.6 to 1 ms per request in Python (measured against
    httpx2); that is the client's cost, not the server's HTTP layer, so it is kept out.
    """

    def __init__(self, base_url: str, secret: str, *, accept: str | None = None) -> None:
        parts = urlsplit(base_url)
        self._socket = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80))
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._headers = f"Host: {parts.netloc}\r\nAuthorization: Bearer {secret}\r\nContent-Type: application/json\r\n"
        if accept is not None:
            self._headers += f"Accept: {accept}\r\n"
        self._buffer = b""

    def __enter__(self) -> KeepAliveClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._socket.close()

    def request(self, method: str, path: str, body: bytes = b"", *, expect: int) -> bytes:
        """Send one request and read its whole response body (sent with Content-Length, or chunked)."""
        head = f"{method} {path} HTTP/1.1\r\n{self._headers}Content-Length: {len(body)}\r\n\r\n"
        self._socket.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self._buffer:
            self._buffer += self._receive()
        header, _, rest = self._buffer.partition(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        if any(line.lower().replace(" ", "") == "transfer-encoding:chunked" for line in lines):
            body_read, self._buffer = self._chunked(rest)
        else:
            length = next(
                (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0
            )
            while len(rest) < length:
                rest += self._receive()
            body_read, self._buffer = rest[:length], rest[length:]
        status = int(lines[0].split(" ")[1])
        if status != expect:
            raise RuntimeError(f"{method} {path}: {status} {body_read[:200]!r}")
        return body_read

    def _chunked(self, rest: bytes) -> tuple[bytes, bytes]:
        """A chunked body (the MCP SDK streams its answers) and what follows it."""
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += self._receive()
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                rest += self._receive()
            body, rest = body + rest[:size], rest[size + 2 :]
            if size == 0:
                return body, rest

    def _receive(self) -> bytes:
        chunk = self._socket.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        return chunk


@attrs.frozen
class Figures:
    """Latency percentiles in milliseconds."""

    p50: float
    p95: float


def _percentiles(samples: list[float]) -> Figures:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return Figures(p50=statistics.median(samples) * 1000, p95=cuts[94] * 1000)


def _measure_pair(
    in_process: Callable[[int], object], over_http: Callable[[int], object], iterations: int
) -> tuple[Figures, Figures]:
    for i in range(WARM_UP):
        in_process(-2 * i - 1)
        over_http(-2 * i - 2)
    samples: tuple[list[float], list[float]] = ([], [])
    for i in range(iterations):
        for side, call, number in ((0, in_process, 2 * i), (1, over_http, 2 * i + 1)):
            started = time.perf_counter()
            call(number)
            samples[side].append(time.perf_counter() - started)
    return _percentiles(samples[0]), _percentiles(samples[1])


@contextmanager
def _sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="memorybank-bench-") as directory:
        yield f"sqlite:///{Path(directory) / 'bench.sqlite3'}"


@contextmanager
def _mariadb_database(server: str) -> Iterator[str]:
    url = sa.make_url(server)
    admin = sa.create_engine(url._replace(database=None), poolclass=sa.pool.NullPool)
    name = f"memorybank_bench_{secrets.token_hex(4)}"
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
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
    in_server: Figures
    """The server's own time for the request (its `http.request` event), without client and socket."""


def _server_side(log: str, operation_id: str, iterations: int) -> Figures:
    durations = [
        float(ms) / 1000 for ms in re.findall(rf"operation={operation_id} status=\d+ duration_ms=([0-9.]+)", log)
    ]
    return _percentiles(durations[-iterations:])


def _bench_backend(backend: str, url: str, iterations: int) -> list[Row]:
    user_id, org_id = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    principal = TokenPrincipal(user_id=user_id, organization_id=org_id, scopes=frozenset({"mcp:read", "mcp:write"}))
    # The in-process bank is built as the served one is (controls, secret screen), so the difference is HTTP's.
    with open_bank(url, migrate=url.startswith("mysql")) as runtime:
        bank = runtime.services.bank
        secret = runtime.services.tokens.issue(user_id=user_id, org_id=org_id).secret
        for i in range(SEED_MEMORIES):
            bank.save(principal, SaveRequest.parse(_save_body(i)))
        server_log = Path(tempfile.mkdtemp(prefix="memorybank-bench-")) / "serve.log"
        with served(url, log=server_log, args=NO_RATE_LIMITS) as base_url, KeepAliveClient(base_url, secret) as client:
            search_path = "/v1/memory/search?" + urlencode({"q": QUERY})

            def save_over_http(i: int) -> None:
                client.request("POST", "/v1/memory", json.dumps(_save_body(i)).encode(), expect=201)

            def search_over_http(_: int) -> None:
                client.request("GET", search_path, expect=200)

            # Interleaved, so both sides see the same data and the same machine load.
            save_in_process, save_http = _measure_pair(
                lambda i: bank.save(principal, SaveRequest.parse(_save_body(i))), save_over_http, iterations
            )
            search_in_process, search_http = _measure_pair(
                lambda _: bank.search(principal, query=QUERY), search_over_http, iterations
            )
    log = server_log.read_text()
    return [
        Row(backend, "POST /v1/memory", save_in_process, save_http, _server_side(log, "postMemory", iterations)),
        Row(
            backend,
            "GET /v1/memory/search",
            search_in_process,
            search_http,
            _server_side(log, "getMemorySearch", iterations),
        ),
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
    columns = ("backend", "operation", "in-process p50/p95", "HTTP p50/p95", "in server p50/p95", "HTTP adds p50")
    header = (
        "  ".join(
            (f"{columns[0]:<8}", f"{columns[1]:<22}", f"{columns[2]:>18}", f"{columns[3]:>14}", f"{columns[4]:>17}")
        )
        + f"  {columns[5]:>13}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        in_process = f"{row.in_process.p50:.2f} / {row.in_process.p95:.2f}"
        over_http = f"{row.over_http.p50:.2f} / {row.over_http.p95:.2f}"
        in_server = f"{row.in_server.p50:.2f} / {row.in_server.p95:.2f}"
        added = row.over_http.p50 - row.in_process.p50
        print(
            f"{row.backend:<8}  {row.operation:<22}  {in_process:>18}  {over_http:>14}  {in_server:>17}  {added:>13.2f}"
        )


if __name__ == "__main__":
    main()
