"""Database faults: kill the app's MariaDB connections mid-stream; retried or 503, never 500, nothing half-written."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import attrs
import httpx2
import pytest
import sqlalchemy as sa

from adapters_http import RETRY_AFTER_SECONDS
from harness.served import NO_RATE_LIMITS, run_memorybank, served
from tests.mysql_server import ThrowawayDatabase, server_url

CONTEXTS_PER_SAVE = 3
CLIENT_THREADS = 4
WARM_UP_SECONDS = 0.5
KILLING_SECONDS = 2.0
RECOVERY_SECONDS = 1.0
KILL_INTERVAL_SECONDS = 0.02


@attrs.frozen
class Answer:
    """One response in the stream."""

    operation: str
    status: int
    body: str
    retry_after: str | None
    memory_id: str | None = None


def _stream(base_url: str, secret: str, worker: int, stop: threading.Event, answers: list[Answer]) -> None:
    with httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client:
        sequence = 0
        while not stop.is_set():
            sequence += 1
            body = {
                "content": f"fault probe worker {worker} number {sequence}",
                "contexts": [{"snippet": f"context {n} of probe {sequence}"} for n in range(CONTEXTS_PER_SAVE)],
            }
            saved = client.post("/v1/memory", json=body)
            memory_id = saved.json()["memory"]["id"] if saved.status_code == 201 else None
            answers.append(Answer("save", saved.status_code, saved.text, saved.headers.get("Retry-After"), memory_id))
            found = client.get("/v1/memory/search", params={"q": "fault probe"})
            answers.append(Answer("search", found.status_code, found.text, found.headers.get("Retry-After")))


def _kill_app_connections(admin: sa.Engine, database: str, stop: threading.Event) -> int:
    killed = 0
    while not stop.is_set():
        with admin.connect() as connection:
            ids = connection.execute(
                sa.text("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = :db AND ID <> CONNECTION_ID()"),
                {"db": database},
            ).scalars()
            for connection_id in ids:
                try:
                    # KILL takes no bind parameter; the id is an integer read from the server itself.
                    connection.exec_driver_sql(f"KILL {int(connection_id)}")
                    killed += 1
                except sa.exc.OperationalError:
                    pass  # it ended on its own in between
        time.sleep(KILL_INTERVAL_SECONDS)
    return killed


@pytest.mark.mysql
@pytest.mark.serve_processes  # `memorybank serve` as a real process, for 4 s of faults: the slower tier's
def test_killed_connections_are_retried_or_503_never_500_no_half_saves_and_the_app_recovers(
    mariadb: ThrowawayDatabase, tmp_path: Path
) -> None:
    assert run_memorybank(["migrate", "--db", mariadb.url]).returncode == 0
    secret = run_memorybank(["token", "create", "--db", mariadb.url]).stdout.rstrip().split("\n")[-1]
    admin = sa.create_engine(server_url(), poolclass=sa.pool.NullPool)
    answers: list[Answer] = []
    stop_clients, stop_killing = threading.Event(), threading.Event()
    kills: list[int] = []

    with served(mariadb.url, log=tmp_path / "serve.log", args=NO_RATE_LIMITS) as base_url:
        clients = [
            threading.Thread(target=_stream, args=(base_url, secret, worker, stop_clients, answers))
            for worker in range(CLIENT_THREADS)
        ]
        for client in clients:
            client.start()
        time.sleep(WARM_UP_SECONDS)
        killer = threading.Thread(target=lambda: kills.append(_kill_app_connections(admin, mariadb.name, stop_killing)))
        killer.start()
        time.sleep(KILLING_SECONDS)
        stop_killing.set()
        killer.join()
        time.sleep(RECOVERY_SECONDS)
        stop_clients.set()
        for client in clients:
            client.join()
        # Recovery without a restart: a calm sequence of requests all succeeds.
        with httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as calm:
            after = [calm.post("/v1/memory", json={"content": f"after the storm {i}"}).status_code for i in range(5)]
            after += [calm.get("/v1/memory/search", params={"q": "storm"}).status_code for _ in range(5)]

    statuses = Counter((a.operation, a.status) for a in answers)
    assert kills[0] > 0
    assert {status for _, status in statuses} <= {200, 201, 503}, statuses
    # A request caught by a kill is retried on a new connection (adapters_mysql.retrying), or
    # answered 503 when its attempts run out: the server logs each caught attempt.
    caught = (tmp_path / "serve.log").read_text().count("storage unavailable during")
    assert caught > 0, f"no request was caught by a kill: {statuses}"
    for answer in answers:
        if answer.status == 503:
            assert answer.retry_after == str(RETRY_AFTER_SECONDS)
            assert '"error":"unavailable"' in answer.body
    assert after == [201] * 5 + [200] * 5
    _assert_no_half_written_save(admin, mariadb.name, {a.memory_id for a in answers if a.memory_id})
    admin.dispose()


def _assert_no_half_written_save(admin: sa.Engine, database: str, acknowledged: set[str]) -> None:
    with admin.connect() as connection:
        connection.exec_driver_sql(f"USE `{database}`")
        per_memory: dict[str, int] = dict(
            connection.execute(
                sa.text(
                    "SELECT m.id, COUNT(c.id) FROM memory m LEFT JOIN memory_context c ON c.memory_id = m.id "
                    "WHERE m.content LIKE 'fault probe%' GROUP BY m.id"
                )
            ).all()
        )
        orphans = connection.execute(
            sa.text("SELECT COUNT(*) FROM memory_context c LEFT JOIN memory m ON m.id = c.memory_id WHERE m.id IS NULL")
        ).scalar_one()
    assert acknowledged <= set(per_memory), "a save answered 201 is missing"
    assert set(per_memory.values()) == {CONTEXTS_PER_SAVE}, "a memory lost some of its contexts"
    assert orphans == 0, "contexts without their memory"
