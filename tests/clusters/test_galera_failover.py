"""High availability on Galera: kill -9 the node `memorybank serve` uses, under a mixed load.

A private 3-node cluster; the app is given all three hosts in `--db`. Four users save (with
two contexts each), search, list and delete through the real server while the node the app
is connected to is killed. Afterwards, read straight from a surviving node: every acknowledged
save is there with both contexts, nothing is stored twice, no context lost its memory, no
answer was a 5xx other than 503, and the service answered again within 10 s of the kill,
without restarting the app.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import attrs
import httpx2
import pytest

from harness.clusters import APP_USER, DATABASE, GaleraCluster, Node, galera_cluster
from harness.served import NO_RATE_LIMITS, run_memorybank, served

USERS = 4
CONTEXTS_PER_SAVE = 2
LOAD_BEFORE_KILL_SECONDS = 3.0
LOAD_AFTER_KILL_SECONDS = 14.0
RECOVERY_LIMIT_SECONDS = 10.0

pytestmark = pytest.mark.cluster


@attrs.frozen
class Answer:
    """One response of the load, and when it arrived (monotonic seconds)."""

    operation: str
    status: int
    at: float


@attrs.define
class Worker:
    """One user's load: what it was told was saved and deleted."""

    secret: str
    number: int
    answers: list[Answer] = attrs.field(factory=list)
    saved: dict[str, str] = attrs.field(factory=dict)
    deleted: set[str] = attrs.field(factory=set)
    unsure: set[str] = attrs.field(factory=set)

    def run(self, base_url: str, stop: threading.Event) -> None:
        headers = {"Authorization": f"Bearer {self.secret}"}
        with httpx2.Client(base_url=base_url, headers=headers, timeout=30) as client:
            sequence = 0
            while not stop.is_set():
                sequence += 1
                self._save(client, sequence)
                if sequence % 2 == 0:
                    self._call(client, "search", "GET", "/v1/memory/search", params={"q": "failover probe"})
                if sequence % 3 == 0:
                    self._call(client, "list", "GET", "/v1/memory", params={"limit": "20"})
                if sequence % 4 == 0 and self.saved:
                    self._delete(client)

    def _call(self, client: httpx2.Client, operation: str, method: str, path: str, **kwargs: object) -> httpx2.Response:
        response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
        self.answers.append(Answer(operation, response.status_code, time.monotonic()))
        return response

    def _save(self, client: httpx2.Client, sequence: int) -> None:
        content = f"failover probe user {self.number} number {sequence}"
        body = {"content": content, "contexts": [{"snippet": f"context {n}"} for n in range(CONTEXTS_PER_SAVE)]}
        response = self._call(client, "save", "POST", "/v1/memory", json=body)
        if response.status_code == 201:
            self.saved[response.json()["memory"]["id"]] = content

    def _delete(self, client: httpx2.Client) -> None:
        memory_id = next(iter(self.saved))
        response = self._call(client, "delete", "DELETE", f"/v1/memory/{memory_id}")
        if response.status_code == 204:
            self.deleted.add(memory_id)
        else:
            self.unsure.add(memory_id)  # a 503: gone or not, it is not counted as lost
        del self.saved[memory_id]


def _app_connections(node: Node) -> int:
    rows = node.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s", (APP_USER,))
    return int(rows[0][0])


def _token(url: str) -> str:
    created = run_memorybank(["token", "create", "--db", url])
    assert created.returncode == 0, created.stderr
    return created.stdout.rstrip("\n").split("\n")[-1]


def _run_load(cluster: GaleraCluster, base_url: str, workers: list[Worker]) -> tuple[Node, float]:
    stop = threading.Event()
    threads = [threading.Thread(target=worker.run, args=(base_url, stop)) for worker in workers]
    for thread in threads:
        thread.start()
    try:
        time.sleep(LOAD_BEFORE_KILL_SECONDS)
        used = [node for node in cluster.nodes if _app_connections(node) > 0]
        assert len(used) == 1, "the app must write through one node at a time"
        victim = used[0]
        killed_at = time.monotonic()
        victim.kill()
        time.sleep(LOAD_AFTER_KILL_SECONDS)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    return victim, killed_at


def test_killing_the_node_the_app_uses_loses_no_acknowledged_save(tmp_path: Path) -> None:
    with galera_cluster() as cluster:
        url = cluster.url()
        migrated = run_memorybank(["migrate", "--db", url])
        assert migrated.returncode == 0, migrated.stderr
        workers = [Worker(_token(url), number) for number in range(USERS)]

        log = tmp_path / "serve.log"
        with served(url, log=log, args=NO_RATE_LIMITS) as base_url:
            victim, killed_at = _run_load(cluster, base_url, workers)
        survivor = next(node for node in cluster.nodes if node is not victim)
        answers = [answer for worker in workers for answer in worker.answers]

        statuses = Counter(answer.status for answer in answers)
        assert set(statuses) <= {200, 201, 204, 503}, statuses
        failures_after_kill = [a.at - killed_at for a in answers if a.status == 503 and a.at > killed_at]
        assert all(delay < RECOVERY_LIMIT_SECONDS for delay in failures_after_kill), failures_after_kill
        back = [a for a in answers if a.operation == "save" and a.status == 201 and a.at > killed_at]
        assert back, "no save succeeded after the kill"
        assert back[-1].at - killed_at > RECOVERY_LIMIT_SECONDS, "the load must outlast the recovery limit"

        acknowledged = {memory_id for worker in workers for memory_id in worker.saved}
        _assert_stored_exactly_once(survivor, acknowledged, {m for w in workers for m in w.deleted})
        assert f"using 127.0.0.1:{victim.port}" not in log.read_text()
        assert f"127.0.0.1:{victim.port} is unreachable; using" in log.read_text()


def _assert_stored_exactly_once(node: Node, acknowledged: set[str], deleted: set[str]) -> None:
    stored = {row[0]: row[1] for row in node.query(f"SELECT id, user_id FROM `{DATABASE}`.memory")}  # noqa: S608
    assert acknowledged - set(stored) == set(), "an acknowledged save was lost"
    assert deleted & set(stored) == set(), "an acknowledged delete came back"
    duplicates = node.query(
        f"SELECT content, COUNT(*) FROM `{DATABASE}`.memory GROUP BY content HAVING COUNT(*) > 1"  # noqa: S608
    )
    assert duplicates == [], "a save was stored twice"
    orphans = node.query(
        f"SELECT COUNT(*) FROM `{DATABASE}`.memory_context c "  # noqa: S608
        f"LEFT JOIN `{DATABASE}`.memory m ON m.id = c.memory_id AND m.user_id = c.user_id WHERE m.id IS NULL"
    )
    assert orphans[0][0] == 0, "a context outlived its memory"
    half = node.query(
        f"SELECT m.id FROM `{DATABASE}`.memory m LEFT JOIN `{DATABASE}`.memory_context c "  # noqa: S608
        f"ON c.memory_id = m.id GROUP BY m.id HAVING COUNT(c.id) <> {CONTEXTS_PER_SAVE}"
    )
    assert half == [], "a memory was stored without all its contexts"
