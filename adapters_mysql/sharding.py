"""`memorybank migrate --db HEAD --shards URL,URL,…`: every data node first, then the Spider head."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.spider import apply_to_head
from adapters_mysql.storage import SqlStorage, open_storage
from memorybank_core import InvalidInputError
from memorybank_search import OwnerIndexer


def split_shard_urls(value: str) -> list[str]:
    """The data node URLs of a `--shards` value (comma-separated, in node order).

    Raises:
        InvalidInputError: ("shards") no URL, or a URL naming several hosts (a data node is one
            server, or one proxy in front of a cluster).
    """
    urls = [item.strip() for item in value.split(",") if item.strip()]
    # A URL's host list would have been split apart above: each item must name its database.
    if not urls or any("://" not in url or "/" not in url.partition("://")[2] for url in urls):
        raise InvalidInputError(
            "shards",
            "must list the data nodes' URLs, comma-separated: mysql://u:p@node1:3306/db,mysql://u:p@node2:3306/db",
        )
    return urls


def migrate_sharded(
    head_url: str,
    shard_urls: Sequence[str],
    *,
    indexer: OwnerIndexer,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Migrate every data node (alembic, bootstrap, re-index), then define the head's Spider tables.

    Safe to repeat: nodes at head are left alone, and so are head tables whose definition did not
    change. Ends with `check_ready` on every node and on the head.

    Raises:
        InvalidInputError: a malformed URL.
        UnavailableError: a node or the head cannot be reached.
        SchemaNotReadyError: the head spreads its tables over a different number of nodes.
    """
    if len(set(shard_urls)) != len(shard_urls):
        raise InvalidInputError("shards", "names the same data node twice")
    shards: list[SqlStorage] = []
    try:
        for url in shard_urls:
            shards.append(open_storage(url, indexer=indexer))
        for shard in shards:
            shard.migrate(progress=progress)
            shard.check_ready()
        head = open_storage(head_url, indexer=indexer)
        try:
            with (
                unavailable_on_driver_error("migrate"),
                head.engine.begin() as connection,
                shards[0].engine.connect() as source,
            ):
                apply_to_head(connection, source, [shard.engine.url for shard in shards])
            head.check_ready()
        finally:
            head.close()
    finally:
        for shard in shards:
            shard.close()
