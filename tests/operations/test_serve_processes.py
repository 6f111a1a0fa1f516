"""`memorybank serve` as an operator runs it: several workers, JSON logs, metrics across workers, SIGTERM."""

from __future__ import annotations

import json
import signal
import threading
import time
from http.client import HTTPConnection
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import httpx2
import pytest
import sqlalchemy as sa

from adapters_http.panel import PANEL_HEADER, SESSION_COOKIE
from adapters_mysql.schema import memory, memory_context
from harness.served import NO_RATE_LIMITS, run_memorybank, serving
from tests.sql.backends import storage_at

#: Each test starts real server processes with workers: a tier of its own (`pytest -m serve_processes`).
pytestmark = pytest.mark.serve_processes

METRICS_TOKEN = "metrics-token-for-tests"
CLIENT_THREADS = 4
SAVING_SECONDS_BEFORE_SIGTERM = 1.5
#: uvicorn's graceful stop: in-flight requests finish, then the pools close; the test allows this long.
EXIT_SECONDS = 30


def _token(db_url: str) -> str:
    result = run_memorybank(["token", "create", "--db", db_url])
    assert result.returncode == 0, result.stderr
    return result.stdout.rstrip("\n").split("\n")[-1]


def _save_body(marker: str) -> dict[str, object]:
    return {
        "content": f"Saved during shutdown {marker}",
        "contexts": [{"snippet": f"first {marker}"}, {"snippet": f"second {marker}", "conversation_id": "c-1"}],
    }


def test_two_workers_serve_one_port_and_metrics_add_up_across_them(database_url: str, tmp_path: Path) -> None:
    secret = _token(database_url)
    saves = 24

    with serving(
        database_url,
        args=["--workers", "2"],
        env={"MEMORYBANK_METRICS_TOKEN": METRICS_TOKEN},
        log=tmp_path / "serve.log",
    ) as server:
        ids = set()
        for n in range(saves):
            # A new connection each time, so the kernel spreads them over both workers.
            answer = httpx2.post(
                f"{server.base_url}/v1/memory",
                json={"content": f"Worker spread note {n} about harbours"},
                headers={"Authorization": f"Bearer {secret}"},
                timeout=30,
            )
            assert answer.status_code == 201, answer.text
            ids.add(answer.json()["memory"]["id"])
        found = httpx2.get(
            f"{server.base_url}/v1/memory/search",
            params={"q": "harbours", "limit": 50},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        ).json()["results"]
        ready = httpx2.get(f"{server.base_url}/readyz", timeout=30)
        metrics = httpx2.get(
            f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30
        ).text

    assert {result["id"] for result in found} == ids
    assert ready.json() == {"status": "ready"}
    assert f'memorybank_http_requests_total{{operation="postMemory",status="201"}} {float(saves)}' in metrics
    log = (tmp_path / "serve.log").read_text()
    assert log.count("Started server process") == 2
    assert "harbours" not in log


def test_json_logs_carry_the_request_id_on_every_line_of_a_request(tmp_path: Path) -> None:
    database_url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    secret = _token(database_url)

    with serving(database_url, args=["--log-format", "json"], log=tmp_path / "serve.log") as server:
        answer = httpx2.post(
            f"{server.base_url}/v1/memory",
            json={"content": "A note whose text must stay out of the log"},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
    request_id = answer.headers["x-request-id"]

    lines = [line for line in (tmp_path / "serve.log").read_text().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    assert records, "no JSON log line"
    assert all("request_id" in record and "level" in record and "message" in record for record in records)
    # uvicorn's start-up lines are the server's (issue 28): not one logged as uvicorn.error.
    assert "memorybank.server" in {record["logger"] for record in records}
    assert "uvicorn.error" not in {record["logger"] for record in records}
    mine = [record for record in records if record["request_id"] == request_id]
    # A save's events: the save, then the look-up for memories like it (issue 29), then the request.
    assert {record["message"].split(" ")[0] for record in mine} == {
        "memory.saved",
        "memory.similar_found",
        "http.request",
    }
    assert "must stay out" not in (tmp_path / "serve.log").read_text()


@attrs.define
class SaveStream:
    """Clients saving as fast as they can; what the server acknowledged and what else happened."""

    acknowledged: dict[str, str] = attrs.field(factory=dict)
    """Marker -> memory id, for every 201."""
    other_statuses: list[int] = attrs.field(factory=list)
    transport_errors: int = 0
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def run(self, base_url: str, secret: str, client_number: int, stop: threading.Event) -> None:
        sequence = 0
        with httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client:
            while not stop.is_set():
                sequence += 1
                marker = f"c{client_number}n{sequence}"
                try:
                    answer = client.post("/v1/memory", json=_save_body(marker))
                except httpx2.TransportError:
                    with self.lock:
                        self.transport_errors += 1
                    time.sleep(0.05)
                    continue
                with self.lock:
                    if answer.status_code == 201:
                        self.acknowledged[marker] = answer.json()["memory"]["id"]
                    else:
                        self.other_statuses.append(answer.status_code)


def test_sigterm_during_a_stream_of_saves_loses_no_acknowledged_save(database_url: str, tmp_path: Path) -> None:
    secret = _token(database_url)
    stream = SaveStream()
    stop = threading.Event()

    with serving(database_url, args=["--workers", "2", *NO_RATE_LIMITS], log=tmp_path / "serve.log") as server:
        clients = [
            threading.Thread(target=stream.run, args=(server.base_url, secret, n, stop)) for n in range(CLIENT_THREADS)
        ]
        for client in clients:
            client.start()
        time.sleep(SAVING_SECONDS_BEFORE_SIGTERM)
        acknowledged_before = len(stream.acknowledged)
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=EXIT_SECONDS)
        stopped_after = time.monotonic() - signalled
        stop.set()
        for client in clients:
            client.join(timeout=60)

    assert acknowledged_before > 0, "no save was acknowledged before SIGTERM"
    assert stream.other_statuses == [], "a save was answered with an error instead of finishing"
    assert stopped_after < EXIT_SECONDS
    storage = storage_at(database_url)
    try:
        with storage.engine.connect() as connection:
            stored: dict[str, str] = dict(connection.execute(sa.select(memory.c.id, memory.c.content)).all())
            contexts: dict[str, int] = dict(
                connection.execute(
                    sa.select(memory_context.c.memory_id, sa.func.count()).group_by(memory_context.c.memory_id)
                ).all()
            )
    finally:
        storage.close()
    missing = [marker for marker, memory_id in stream.acknowledged.items() if memory_id not in stored]
    assert missing == [], "acknowledged saves are not stored"
    # Nothing cut mid-write: every stored memory has both of its contexts.
    assert all(contexts.get(memory_id) == 2 for memory_id in stored)
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log
    assert "status=500" not in log


def _worker_of(log: Path, request_id: str) -> int:
    """The pid of the worker that logged `request_id` (its lines may land just after the answer)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("request_id") == request_id:
                    return int(record["pid"])
        time.sleep(0.02)
    raise AssertionError(f"no log line for request {request_id}")


def _from_every_worker(base_url: str, auth: dict[str, str], log: Path, workers: int) -> list[tuple[int, int]]:
    """(worker pid, status) of requests on fresh connections, until each of `workers` has answered one.

    The kernel hands each new connection to whichever worker accepts first, so a fixed count could miss
    one; this keeps asking (a bounded number of times) until every worker has been heard from.
    """
    answers: list[tuple[int, int]] = []
    for _ in range(200):
        answer = httpx2.get(f"{base_url}/v1/memory", headers=auth, timeout=30)
        answers.append((_worker_of(log, answer.headers["x-request-id"]), answer.status_code))
        if len({pid for pid, _status in answers}) == workers and len(answers) >= 2 * workers:
            return answers
    raise AssertionError(f"200 fresh connections reached only workers {sorted({pid for pid, _ in answers})}")


@pytest.mark.parametrize("revocation", ["token revoke", "purge --user"])
def test_a_revoked_token_fails_on_the_next_request_in_every_worker(
    database_url: str, tmp_path: Path, revocation: str
) -> None:
    created = run_memorybank(["token", "create", "--db", database_url])
    assert created.returncode == 0, created.stderr
    user_id = next(line.removeprefix("user: ") for line in created.stdout.splitlines() if line.startswith("user: "))
    secret = created.stdout.rstrip("\n").split("\n")[-1]
    command = ["token", "revoke", secret] if revocation == "token revoke" else ["purge", "--user", user_id]
    auth = {"Authorization": f"Bearer {secret}"}
    log = tmp_path / "serve.log"

    with serving(database_url, args=["--workers", "2", "--log-format", "json"], log=log) as server:
        # A panel session made by pasting the token (issue 19, finding 2) must end with it.
        panel = {PANEL_HEADER: "1", "Origin": server.base_url}
        signed_in = httpx2.post(f"{server.base_url}/panel/session", json={"token": secret}, headers=panel, timeout=30)
        panel["Cookie"] = f"{SESSION_COOKIE}={signed_in.cookies[SESSION_COOKIE]}"
        # Both workers verify the token and remember it; then it is revoked, and both must refuse it.
        before = _from_every_worker(server.base_url, auth, log, workers=2)
        panel_before = _from_every_worker(server.base_url, panel, log, workers=2)
        revoked = run_memorybank([*command, "--db", database_url])
        after = _from_every_worker(server.base_url, auth, log, workers=2)
        panel_after = _from_every_worker(server.base_url, panel, log, workers=2)

    assert {status for _pid, status in before + panel_before} == {200}
    assert revoked.returncode == 0, revoked.stderr
    assert {status for _pid, status in after + panel_after} == {401}
    assert {pid for pid, _status in before} == {pid for pid, _status in after}


def test_a_burst_of_keep_alive_connections_is_spread_over_both_workers(tmp_path: Path) -> None:
    # A load generator or a reverse proxy opens its connections at once and keeps them. On a listener
    # the workers share, the first worker to wake accepted the whole burst and the other sat idle;
    # with a listener per worker (SO_REUSEPORT) the kernel spreads them.
    database_url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    auth = {"Authorization": f"Bearer {_token(database_url)}"}
    log = tmp_path / "serve.log"

    with serving(database_url, args=["--workers", "2", "--log-format", "json"], log=log) as server:
        _wait_until_started(log, workers=2)  # `serving` returns once one of them answers
        address = urlsplit(server.base_url)
        listening = _listening_sockets(address.port or 0)
        connections = [HTTPConnection(address.hostname or "", address.port, timeout=30) for _ in range(16)]
        try:
            for connection in connections:  # all connected before any request, as wrk does
                connection.connect()
            first = [_ask(connection, auth, log) for connection in connections]
            # The same connections again: each stays with the worker that accepted it.
            second = [_ask(connection, auth, log) for connection in connections]
        finally:
            for connection in connections:
                connection.close()

    assert listening == 2, "the workers share one listener"
    assert len(set(first)) == 2, "one worker took every connection of the burst"
    assert second == first


def _listening_sockets(port: int) -> int:
    """How many sockets listen on 127.0.0.1:`port` (Linux's /proc/net/tcp: state 0A is LISTEN)."""
    local = f"0100007F:{port:04X}"
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return len({row[9] for row in rows if row[1] == local and row[3] == "0A"})  # distinct inodes


def _wait_until_started(log: Path, *, workers: int) -> None:
    deadline = time.monotonic() + 30
    while log.read_text().count("Application startup complete") < workers:
        assert time.monotonic() < deadline, f"{workers} workers did not start"
        time.sleep(0.05)


def _ask(connection: HTTPConnection, headers: dict[str, str], log: Path) -> int:
    """GET /v1/memory on `connection` (kept open); the pid of the worker that answered."""
    connection.request("GET", "/v1/memory", headers=headers)
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 200
    return _worker_of(log, answer.headers["x-request-id"])


def test_a_second_server_on_the_port_of_running_workers_is_refused(tmp_path: Path) -> None:
    # The workers' listeners share their port on purpose (SO_REUSEPORT); another server must not join them.
    database_url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"

    with serving(database_url, args=["--workers", "2"], log=tmp_path / "serve.log") as server:
        port = str(urlsplit(server.base_url).port)
        second = run_memorybank(["serve", "--port", port, "--workers", "2", "--db", database_url], timeout=30)
        alone = run_memorybank(["serve", "--port", port, "--db", database_url], timeout=30)

    for refused in (second, alone):
        assert refused.returncode == 1
        assert f"port {port} on 127.0.0.1 is already in use" in refused.stderr
