"""Sharding by user on Spider: one head over three data nodes, started by the tests themselves.

The contract suite runs on the same deployment (tests/contract, backend `spider`). Here: the
migration order and its idempotence, the readiness check of every node, shard-local statements,
the REST flows through a real `memorybank serve`, per-node counters proving that one user's
operations touch one data node, and a stopped data node.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from adapters_mysql import SqlStorage
from harness.clusters import DATABASE, Node, SpiderCluster, migrate_command
from harness.served import NO_RATE_LIMITS, run_memorybank, served
from memorybank_core import InMemoryControlStore, SaveRequest
from memorybank_core.ids import new_id
from memorybank_testing.backends import settled
from tests.clusters.spider_deployment import SpiderFactory, empty_every_node, shared_spider
from tests.conftest import User
from tests.http.test_served import _walk_every_route
from tests.sql.backends import bank_on, storage_at
from tests.sql.conftest import Statement
from tests.sql.owner_statements import check_every_statement_carries_one_owner

pytestmark = pytest.mark.cluster

COUNTERS = ("Com_select", "Com_insert", "Com_delete")
RECOVERY_SECONDS = 20.0


@pytest.fixture
def cluster() -> SpiderCluster:
    deployment = shared_spider()
    empty_every_node(deployment)
    return deployment


@pytest.fixture
def head(cluster: SpiderCluster) -> Iterator[SqlStorage]:
    storage = storage_at(cluster.head.url())
    yield storage
    storage.close()


def node_of(cluster: SpiderCluster, user_id: str) -> int:
    """The data node (0-based) that holds `user_id`, as the head's partitioning decides it.

    A probe row goes in through the head and is looked for, and removed, on the nodes themselves.
    """
    probe = new_id("mem")
    cluster.head.query(
        f"INSERT INTO `{DATABASE}`.memory (id, user_id, org_id, content, source, created_at, updated_at) "  # noqa: S608
        "VALUES (%s, %s, 'org_probe', 'probe', 'chat', NOW(6), NOW(6))",
        (probe, user_id),
    )
    found = f"SELECT COUNT(*) FROM `{DATABASE}`.memory WHERE id = %s"  # noqa: S608
    homes = [index for index, node in enumerate(cluster.shards) if node.query(found, (probe,))[0][0]]
    assert len(homes) == 1, homes
    cluster.shards[homes[0]].query(f"DELETE FROM `{DATABASE}`.memory WHERE id = %s", (probe,))  # noqa: S608
    return homes[0]


def user_on(cluster: SpiderCluster, node: int) -> User:
    """A new user whose rows live on data node `node` (0-based)."""
    while True:
        user = User()
        if node_of(cluster, user.user_id) == node:
            return user


def _counters(node: Node) -> list[int]:
    return [node.status(name) for name in COUNTERS]


def _table_created_at(node: Node) -> list[tuple[object, ...]]:
    return node.query(
        "SELECT TABLE_NAME, CREATE_TIME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME",
        (DATABASE,),
    )


def test_migrate_again_changes_nothing_and_a_plain_migrate_of_the_head_is_refused(cluster: SpiderCluster) -> None:
    before = _table_created_at(cluster.head)

    again = run_memorybank(migrate_command(cluster), timeout=300)
    plain = run_memorybank(["migrate", "--db", cluster.head.url()])

    assert again.returncode == 0, again.stderr
    assert "3 data nodes" in again.stdout
    assert _table_created_at(cluster.head) == before, "an unchanged definition must be left alone"
    assert plain.returncode == 1
    assert "Spider head" in plain.stderr
    assert "--shards" in plain.stderr


def test_the_head_defines_every_table_of_the_data_nodes_sharded_by_user(cluster: SpiderCluster) -> None:
    engines = dict(
        cluster.head.query(
            "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (DATABASE,)
        )
    )
    node_tables = {row[0] for row in cluster.shards[0].query(f"SHOW TABLES FROM `{DATABASE}`")}
    partitioned = {
        row[0]
        for row in cluster.head.query(
            "SELECT DISTINCT TABLE_NAME FROM information_schema.PARTITIONS "
            "WHERE TABLE_SCHEMA = %s AND PARTITION_NAME IS NOT NULL",
            (DATABASE,),
        )
    }

    assert node_tables <= set(engines)
    assert {engines[table] for table in node_tables} == {"SPIDER"}
    # The two memory tables and the quota ledger, which a save changes in the same transaction (one node).
    assert partitioned == {"memory", "memory_context", "memory_usage", "memory_vector", "memory_revision"}
    assert cluster.head.query(f"SELECT COUNT(*) FROM `{DATABASE}`.memorybank_spider_table")[0][0] > 0  # noqa: S608


def test_serve_refuses_a_head_whose_data_node_is_behind(cluster: SpiderCluster) -> None:
    lagging = cluster.shards[1]
    version = f"`{DATABASE}`.memorybank_alembic_version"
    (revision,) = lagging.query(f"SELECT version_num FROM {version}")[0]  # noqa: S608
    lagging.query(f"UPDATE {version} SET version_num = '0001'")  # noqa: S608
    try:
        refused = run_memorybank(["serve", "--db", cluster.head.url(), "--port", "0"])
    finally:
        lagging.query(f"UPDATE {version} SET version_num = %s", (revision,))  # noqa: S608

    assert refused.returncode == 1
    assert "data node 2" in refused.stderr
    assert "--shards" in refused.stderr


def test_serve_refuses_a_head_with_a_key_ring(cluster: SpiderCluster, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert run_memorybank(["keys", "create", "--out", str(keys)]).returncode == 0

    refused = run_memorybank(["serve", "--db", cluster.head.url(), "--port", "0", "--key-file", str(keys)])

    assert refused.returncode != 0
    assert "not supported on a sharded (Spider) deployment" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_every_statement_through_the_head_carries_one_owner(head: SqlStorage, statements: list[Statement]) -> None:
    check_every_statement_carries_one_owner(head, statements)


def test_one_users_save_search_list_and_delete_touch_exactly_one_data_node(
    cluster: SpiderCluster, head: SqlStorage
) -> None:
    # The memory statements only: the operators' controls, like the token lookup, live unsharded on the first
    # node (adapters_mysql.spider), so their reads are left out of the count by keeping them in memory here.
    bank = bank_on(head, controls=InMemoryControlStore())
    for home in range(len(cluster.shards)):
        user = user_on(cluster, home)
        before = [_counters(node) for node in cluster.shards]

        saved = bank.save(user, SaveRequest.parse({"content": "harbor lighthouse", "contexts": [{"snippet": "a"}]}))
        assert [hit.memory.id for hit in bank.search(user, query="lighthouse")] == [saved.id]
        assert [memory.id for memory in bank.list(user, limit=10).memories] == [saved.id]
        bank.delete(user, memory_id=saved.id)

        deltas = [
            [a - b for a, b in zip(after, start, strict=True)]
            for after, start in zip([_counters(node) for node in cluster.shards], before, strict=True)
        ]
        for index, delta in enumerate(deltas):
            if index == home:
                assert all(change > 0 for change in delta), (COUNTERS, deltas)
            else:
                assert delta == [0, 0, 0], f"user on node {home + 1} touched node {index + 1}: {deltas}"


def test_a_saves_similar_look_up_through_the_head_names_the_memory_it_resembles(
    cluster: SpiderCluster, head: SqlStorage
) -> None:
    # The look-up reads its best candidates by InnoDB's relevance with a window count of all matches (ADR 0048): the
    # head must run both over its data node's rows. A look-up never fails a save, so an error would answer nothing.
    bank = bank_on(head, controls=InMemoryControlStore())
    user = user_on(cluster, 1)
    for word in ("alpha", "beta", "gamma"):
        bank.save(user, SaveRequest.parse({"content": f"the team meeting notes about project {word}"}))
    resembled = bank.save(user, SaveRequest.parse({"content": "the harbor lighthouse keeper moved to lisbon"}))
    new = bank.save(user, SaveRequest.parse({"content": "the harbor lighthouse keeper moved to porto"}))

    # The memories saved a moment ago show in the data node's index moments later (ADR 0046).
    named = settled(
        lambda: [found.memory.id for found in bank.similar(user, new)],
        lambda ids: ids == [resembled.id],
        SpiderFactory.index_lag,
    )
    assert named == [resembled.id]


def test_a_memory_at_the_bounds_read_alone_through_the_head_comes_back_whole(
    cluster: SpiderCluster, head: SqlStorage
) -> None:
    # Read alone, a memory is the join's constant row; a Spider head overwrote its TEXT columns with the contexts
    # it read after it once they filled a few of its buffers (adapters_mysql.memory_store.get_many says how).
    bank = bank_on(head, controls=InMemoryControlStore())
    user = user_on(cluster, 0)
    body = {"content": "x" * 8000, "contexts": [{"snippet": f"{n} " + "京" * 3990} for n in range(16)]}
    saved = bank.save(user, SaveRequest.parse(body))

    read = bank.revisions(user, memory_id=saved.id).memory

    assert read.content == saved.content
    assert [context.snippet for context in read.contexts] == [context.snippet for context in saved.contexts]


def _token(cluster: SpiderCluster, user: User) -> str:
    created = run_memorybank(
        ["token", "create", "--db", cluster.head.url(), "--user", user.user_id, "--org", user.organization_id]
    )
    assert created.returncode == 0, created.stderr
    return created.stdout.rstrip("\n").split("\n")[-1]


def test_a_purge_through_the_head_is_refused_with_what_to_do_instead(cluster: SpiderCluster) -> None:
    refused = run_memorybank(["purge", "--db", cluster.head.url(), "--user", new_id("usr")])

    assert refused.returncode == 1
    assert "each data node" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_rest_flows_through_a_real_server_on_the_head(cluster: SpiderCluster, tmp_path: Path) -> None:
    alice, bob = _token(cluster, User()), _token(cluster, User())

    with served(cluster.head.url(), log=tmp_path / "serve.log") as base_url:
        _walk_every_route(base_url, alice, bob)


def _calls(client: httpx2.Client) -> list[int]:
    saved = client.post("/v1/memory", json={"content": "harbor lighthouse note"})
    found = client.get("/v1/memory/search", params={"q": "lighthouse"})
    listed = client.get("/v1/memory")
    return [saved.status_code, found.status_code, listed.status_code]


def test_a_stopped_data_node_leaves_other_users_served_and_its_users_get_503s(
    cluster: SpiderCluster, tmp_path: Path
) -> None:
    # Node 1 also holds the unsharded tables (tokens): stop node 3.
    stopped = cluster.shards[2]
    users = {home: user_on(cluster, home) for home in (0, 1, 2)}
    tokens = {home: _token(cluster, user) for home, user in users.items()}

    # Polls until the node's users recover: more requests than a person sends, not a rate-limit test.
    with served(cluster.head.url(), log=tmp_path / "serve.log", args=NO_RATE_LIMITS) as base_url:
        clients = {
            home: httpx2.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            for home, token in tokens.items()
        }
        try:
            assert {home: _calls(client) for home, client in clients.items()} == {
                home: [201, 200, 200] for home in clients
            }
            stopped.stop()
            try:
                assert _calls(clients[0]) == [201, 200, 200]
                assert _calls(clients[1]) == [201, 200, 200]
                assert _calls(clients[2]) == [503, 503, 503]
                assert clients[2].delete(f"/v1/memory/{new_id('mem')}").status_code == 503
            finally:
                stopped.start()
                stopped.wait_ready()
            deadline = time.monotonic() + RECOVERY_SECONDS
            while _calls(clients[2]) != [201, 200, 200]:
                assert time.monotonic() < deadline, "the node's users did not recover after it came back"
                time.sleep(0.5)
        finally:
            for client in clients.values():
                client.close()
    assert "status=500" not in (tmp_path / "serve.log").read_text()
