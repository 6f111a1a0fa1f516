"""SQL storage for the memory bank: MySQL/MariaDB (FULLTEXT) and embedded SQLite (FTS5).

The composition root calls `open_storage(url, indexer=…)`; a host with its own engine builds
`SqlStorage(engine=…, indexer=…, display_url=…)`. Either way the storage's store, owner-scoped
search engine and token store are wired into the bank. Nothing connects at import time.

`SqlStorage` (storage.py) only assembles the ports over one engine; each job has its module: `connect`
(a URL to an engine), `lifecycle` (the schema), `seal_keys` (the key ring), `maintenance` (batch walks).
"""

from adapters_mysql.connect import (
    CreateDatabaseRefusedError,
    DatabaseMissingError,
    create_database,
    create_database_statement,
)
from adapters_mysql.control_store import SqlControlStore
from adapters_mysql.embedding_reindex import EmbeddingReport
from adapters_mysql.errors import SchemaNotReadyError
from adapters_mysql.lifecycle import MigrationReport
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.mysql_search import MysqlOwnerScopedSearch
from adapters_mysql.panel_session_store import SqlPanelSessionStore
from adapters_mysql.purge_store import PurgeUnsupportedError, SqlPurgeStore
from adapters_mysql.reindex import ReindexReport
from adapters_mysql.seal_keys import KeyRingError, SealStatus
from adapters_mysql.sharding import migrate_sharded, split_shard_urls
from adapters_mysql.sqlite_search import SqliteOwnerScopedSearch
from adapters_mysql.storage import (
    CompactUnsupportedError,
    SpiderSealingError,
    SqlStorage,
    StorageClosedError,
    open_storage,
)
from adapters_mysql.token_store import SqlTokenStore
from adapters_mysql.vector_store import SqlVectorStore

__all__ = [
    "CompactUnsupportedError",
    "CreateDatabaseRefusedError",
    "DatabaseMissingError",
    "EmbeddingReport",
    "KeyRingError",
    "MigrationReport",
    "MysqlOwnerScopedSearch",
    "PurgeUnsupportedError",
    "ReindexReport",
    "SchemaNotReadyError",
    "SealStatus",
    "SpiderSealingError",
    "SqlControlStore",
    "SqlMemoryStore",
    "SqlPanelSessionStore",
    "SqlPurgeStore",
    "SqlStorage",
    "SqlTokenStore",
    "SqlVectorStore",
    "SqliteOwnerScopedSearch",
    "StorageClosedError",
    "create_database",
    "create_database_statement",
    "migrate_sharded",
    "open_storage",
    "split_shard_urls",
]
