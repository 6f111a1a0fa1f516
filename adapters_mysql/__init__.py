"""SQL storage for the memory bank: MySQL/MariaDB (FULLTEXT) and embedded SQLite (FTS5).

The composition root calls `open_storage(url)` and wires the returned `SqlStorage`'s
store, search engine and token store into the bank. Nothing connects at import time.
"""

from adapters_mysql.errors import SchemaNotReadyError
from adapters_mysql.mysql_fulltext import MysqlFulltextSearch
from adapters_mysql.owner_fulltext import MysqlOwnerScopedSearch
from adapters_mysql.owner_index import OwnerIndexer
from adapters_mysql.reindex import ReindexReport
from adapters_mysql.seal_keys import KeyRingError, SealStatus
from adapters_mysql.sqlite_fts5 import Fts5Search
from adapters_mysql.sqlite_owner_fts5 import Fts5OwnerScopedSearch
from adapters_mysql.storage import SqlStorage, open_storage
from adapters_mysql.store import SqlMemoryStore
from adapters_mysql.token_store import SqlTokenStore

__all__ = [
    "Fts5OwnerScopedSearch",
    "Fts5Search",
    "KeyRingError",
    "MysqlFulltextSearch",
    "MysqlOwnerScopedSearch",
    "OwnerIndexer",
    "ReindexReport",
    "SchemaNotReadyError",
    "SealStatus",
    "SqlMemoryStore",
    "SqlStorage",
    "SqlTokenStore",
    "open_storage",
]
