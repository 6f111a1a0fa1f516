"""One Spider deployment (a head over 3 data nodes) shared by every cluster test of a session.

Started on first use and migrated with `memorybank migrate --db HEAD --shards …`; stopped, and
its directory removed, when the test process exits, whatever the tests did.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack

from adapters_mysql import SqlStorage
from harness.clusters import DATABASE, SpiderCluster, migrate_command, require_cluster_tools, spider_cluster
from harness.served import run_memorybank
from tests.contract.backends import Backend, BackendFactory
from tests.sql.backends import backend_of, storage_at

_shared: tuple[ExitStack, SpiderCluster] | None = None


def shared_spider() -> SpiderCluster:
    """The session's migrated Spider deployment, started on first call."""
    global _shared
    require_cluster_tools()
    if _shared is None:
        stack = ExitStack()
        try:
            cluster = stack.enter_context(spider_cluster(shards=3))
            migrated = run_memorybank(migrate_command(cluster), timeout=300)
            if migrated.returncode != 0:
                raise RuntimeError(f"memorybank migrate --shards failed: {migrated.stderr}")
        except BaseException:
            stack.close()
            raise
        atexit.register(stack.close)
        _shared = (stack, cluster)
    return _shared[1]


def empty_every_node(cluster: SpiderCluster) -> None:
    """Delete every row on the data nodes (the head holds none)."""
    for node in cluster.shards:
        for table in (
            "memory_vector",
            "memory_context",
            "memory",
            "api_token",
            "panel_credential",
            "memory_usage",
            "memory_control",
        ):
            node.query(f"TRUNCATE TABLE `{DATABASE}`.`{table}`")


class SpiderFactory(BackendFactory):
    """The contract suite's backend on the shared Spider deployment, through the head."""

    #: Its nodes are InnoDB: a committed row's words show within a few milliseconds (docs/storage.md).
    index_lag = 1.0

    def __init__(self) -> None:
        self.cluster = shared_spider()
        self.storage: SqlStorage = storage_at(self.cluster.head.url())

    def fresh(self) -> Backend:
        empty_every_node(self.cluster)
        # A Spider head cannot purge (docs/operations.md): its batches would commit on several nodes.
        return backend_of(self.storage, purges=False)

    def close(self) -> None:
        self.storage.close()


def rows_per_node(cluster: SpiderCluster, user_id: str) -> list[int]:
    """How many memories of `user_id` each data node holds, read on the nodes themselves."""
    return [
        int(node.query(f"SELECT COUNT(*) FROM `{DATABASE}`.memory WHERE user_id = %s", (user_id,))[0][0])  # noqa: S608
        for node in cluster.shards
    ]
