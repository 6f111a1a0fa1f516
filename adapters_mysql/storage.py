"""`SqlStorage`: everything the bank needs from one SQL database; `open_storage(url)` opens one.

A host with its own SQLAlchemy engine builds `SqlStorage(engine=…, indexer=…)` directly; the
owner-scoped search engine of the engine's dialect comes with it, fused with the memories' vectors when
it is built with an `embedder` (hybrid search is chosen at construction, never switched on later).
With a `sealer` (encryption at rest, docs/security.md) the store seals what it writes and the indexer
must write its blind index.

`SqlStorage` assembles the ports over one engine. The jobs live by name beside it: opening a URL in
`connect`, the schema's life in `lifecycle`, the key ring's adoption in `seal_keys`, the batch walks
in `maintenance`; its methods of the same names hand over to them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

import sqlalchemy as sa

from adapters_mysql import seal_keys
from adapters_mysql.connect import (
    CreateDatabaseRefusedError,
    DatabaseMissingError,
    create_database,
    create_database_statement,
    open_database,
    open_engine,
)
from adapters_mysql.control_store import SqlControlStore
from adapters_mysql.deferred_vectors import DeferredVectors
from adapters_mysql.embedding_reindex import DEFAULT_EMBEDDING_BATCH, EmbeddingReport
from adapters_mysql.lifecycle import MigrationReport, SchemaLifecycle
from adapters_mysql.maintenance import Maintenance
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.mysql_search import MysqlOwnerScopedSearch
from adapters_mysql.owner_search import OwnerScopedSearch
from adapters_mysql.panel_session_store import SqlPanelSessionStore
from adapters_mysql.purge_store import PurgeUnsupportedError, SqlPurgeStore
from adapters_mysql.reindex import DEFAULT_BATCH_SIZE, ReindexReport
from adapters_mysql.retrying import (
    ResilientControlStore,
    ResilientMemoryStore,
    ResilientPurgeStore,
    ResilientSearch,
    ResilientTokenStore,
)
from adapters_mysql.seal_keys import SealStatus
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.spider_store import SpiderMemoryStore
from adapters_mysql.sqlite_search import SqliteOwnerScopedSearch
from adapters_mysql.token_store import SqlTokenStore
from adapters_mysql.unit_of_work import SqlUnitOfWork
from adapters_mysql.vector_store import SqlVectorStore
from memorybank_core import Embedder, InvalidInputError, MemoryBankError, Sealer, SearchEngine
from memorybank_core.offboarding import PurgeStore
from memorybank_search import Fusion, OwnerIndexer

# Re-exported: callers import the whole storage API from here (and from the package).
__all__ = [
    "CompactUnsupportedError",
    "CreateDatabaseRefusedError",
    "DatabaseMissingError",
    "MigrationReport",
    "SpiderSealingError",
    "SqlStorage",
    "StorageClosedError",
    "create_database",
    "create_database_statement",
    "open_engine",
    "open_storage",
]

#: The owner-scoped search engine of each dialect.
_SEARCH_ENGINES: dict[str, type[OwnerScopedSearch]] = {
    "mysql": MysqlOwnerScopedSearch,
    "sqlite": SqliteOwnerScopedSearch,
}


class CompactUnsupportedError(MemoryBankError, RuntimeError):
    """This database's search index is compacted elsewhere (a Spider head's data nodes); the message says where."""


class SpiderSealingError(InvalidInputError):
    """A key ring was configured for a sharded (Spider) deployment, which cannot seal yet: refused at startup."""

    def __init__(self) -> None:
        super().__init__(
            "key-file",
            "is set, but encryption at rest is not supported on a sharded (Spider) deployment yet: each data "
            "node would need its own key checks and re-sealing walks. Run the head without a key ring "
            "(no --key-file, MEMORYBANK_KEY_FILE or MEMORYBANK_KEYS), or seal an unsharded database "
            "(docs/security.md)",
        )


class StorageClosedError(RuntimeError):
    """The storage was closed (`close`, or the end of its `with` block): a bug in the caller, not the database."""


class SqlStorage:
    """Everything the bank needs from one SQL database: store, search, token and panel session stores, schema.

    A context manager: `with open_storage(url, indexer=…) as storage:` closes it at the end of the block.
    """

    def __init__(
        self,
        *,
        engine: sa.Engine,
        indexer: OwnerIndexer,
        display_url: str,
        sealer: Sealer | None = None,
        spider_head: bool = False,
        embedder: Embedder | None = None,
        fusion: Fusion | None = None,
    ) -> None:
        """Storage on `engine` (MySQL/MariaDB or SQLite); `display_url` names it in messages.

        With `sealer`, `indexer` must write that sealer's blind index (`OwnerIndexer(blind_index=sealer.index)`).
        With `embedder` search is hybrid: saves also write each memory's vector, and search fuses BM25 with
        it, weighed by `fusion` (default `Fusion()`). `memorybank_search.hybrid` (numpy, the `semantic`
        extra) is imported only then: lexical storage needs neither.
        `spider_head`: the database is a Spider head (adapters_mysql.spider), whose deletes
        report no row counts (adapters_mysql.spider_store).

        Raises:
            InvalidInputError: ("db") the engine's dialect is neither MySQL nor SQLite.
            ValueError: the indexer does not write the sealer's blind index (or writes one without a sealer).
        """
        search_engine = _SEARCH_ENGINES.get(engine.dialect.name)
        if search_engine is None:
            raise InvalidInputError(
                "db", f"uses the {engine.dialect.name} dialect; memorybank stores in MySQL or SQLite"
            )
        written = indexer.blind_index.key_id if indexer.blind_index is not None else None
        if written != (sealer.index.key_id if sealer is not None else None):
            # Sealed text with readable search tokens (or the reverse) would defeat the point.
            raise ValueError("the indexer must write the sealer's blind index, and only with a sealer")
        if sealer is not None and spider_head:
            raise SpiderSealingError
        self.engine = engine
        self.dialect_name: str = engine.dialect.name
        self.indexer = indexer
        self.sealer = sealer
        self.codec = RowCodec(sealer)
        self.vectors = SqlVectorStore(engine, self.codec)
        """The owners' memory vectors (`memory_vector`), for hybrid search."""
        # Hybrid search reads the owner's vectors after every lexical search: in the candidates' round trip.
        along = (
            (lambda user_id: [self.vectors.read_of(user_id=user_id, model_id=embedder.model_id)])
            if embedder is not None
            else None
        )
        lexical = search_engine(engine, indexer, along=along)
        self.lexical_search: OwnerScopedSearch = lexical
        """The owner-scoped BM25 engine of the dialect (what `search_engine` fuses with vectors when hybrid)."""
        self.deferred_vectors = DeferredVectors(engine, self.codec, embedder) if embedder is not None else None
        """Where long saves leave their vectors, written just after they answer (ADR 0045); None: lexical."""
        # A save reads what its `similar` look-up reads first in its own last round trip (ADR 0042).
        store = (SpiderMemoryStore if spider_head else SqlMemoryStore)(
            engine,
            indexer,
            self.codec,
            embedder=embedder,
            similar_reads=lambda memory: lexical.reads_for(memory.user_id, memory.similar_query),
            deferred=self.deferred_vectors,
        )
        self.embedder = embedder
        """Hybrid search's model; None: lexical search."""
        served: SearchEngine = self.lexical_search
        if embedder is not None:
            from memorybank_search.hybrid import HybridSearch

            served = HybridSearch(self.lexical_search, self.vectors, embedder, fusion=fusion)
        # Every port is retried after a lost connection or a conflict (adapters_mysql.retrying).
        self.store = ResilientMemoryStore(store)
        self.search_engine = ResilientSearch(served)
        self.token_store = ResilientTokenStore(SqlTokenStore(engine))
        self.controls = ResilientControlStore(SqlControlStore(engine))
        self.unit_of_work = SqlUnitOfWork(engine)
        self.panel_sessions = SqlPanelSessionStore(engine)
        self.maintenance = Maintenance(engine=engine, indexer=indexer, codec=self.codec, sealer=sealer, store=store)
        """The batch walks over every memory (re-index, embed, quota use, owners)."""
        self.schema = SchemaLifecycle(
            engine=engine,
            fix_command=f"memorybank migrate --db {display_url}",
            adopt_sealing=lambda: seal_keys.adopt_sealing(engine, sealer, indexer, self.codec),
            maintenance=self.maintenance,
        )
        """The schema's life: initialize, migrate, check_ready, probe_ready."""
        self._spider_head = spider_head
        self._closed = False

    @property
    def purge_store(self) -> PurgeStore:
        """The storage side of an offboarding purge (`memorybank_core.offboarding`), retried like every port.

        Raises:
            PurgeUnsupportedError: the database is a Spider head, where a batch's deletes and its
                record would commit on different nodes (docs/operations.md says what to do).
        """
        if self._spider_head:
            raise PurgeUnsupportedError(
                "purge does not run through a Spider head yet: its batches would commit on several nodes at once; "
                "run `memorybank purge --db URL` against each data node instead (docs/operations.md, Offboarding)"
            )
        return ResilientPurgeStore(SqlPurgeStore(self.engine))

    # The schema's life (adapters_mysql.lifecycle).

    @property
    def fix_command(self) -> str:
        """The command that brings this database's schema up to date (no password in it)."""
        return self.schema.fix_command

    def initialize(self) -> None:
        """See `SchemaLifecycle.initialize`: the fresh-install path."""
        self.schema.initialize()

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> MigrationReport:
        """See `SchemaLifecycle.migrate`: `memorybank migrate`."""
        return self.schema.migrate(progress=progress)

    def check_ready(self) -> None:
        """See `SchemaLifecycle.check_ready`: refuse to serve a database not at head."""
        self.schema.check_ready()

    def probe_ready(self) -> None:
        """See `SchemaLifecycle.probe_ready`: `/readyz`."""
        self.schema.probe_ready()

    # The key ring (adapters_mysql.seal_keys).

    def sealing_status(self, *, vectors: bool = False) -> SealStatus:
        """See `seal_keys.sealing_status`: the key-check ids and the rows' (and, if `vectors`, vectors') seal states."""
        return seal_keys.sealing_status(self.engine, vectors=vectors)

    def describe_mode(self, *, vectors: bool = False) -> str:
        """One line saying whether this database is plaintext or sealed at rest, and what is left to do.

        `vectors`: also say how many hybrid-search vectors are behind (scans them; `encrypt`, `keys rotate`).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return self.sealing_status(vectors=vectors).describe(self.codec.state)

    # The batch walks (adapters_mysql.maintenance).

    def count_to_reindex(self, *, everything: bool = False) -> int:
        """See `Maintenance.count_to_reindex`."""
        return self.maintenance.count_to_reindex(everything=everything)

    def reindex(
        self,
        *,
        everything: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> ReindexReport:
        """See `Maintenance.reindex`: `memorybank reindex`, `encrypt` and `keys rotate`."""
        return self.maintenance.reindex(everything=everything, batch_size=batch_size, progress=progress)

    def count_to_embed(self) -> int:
        """See `Maintenance.count_to_embed`, for the storage's embedder."""
        return self.maintenance.count_to_embed(self._require_embedder())

    def embed_missing(
        self, *, batch_size: int = DEFAULT_EMBEDDING_BATCH, progress: Callable[[int], None] | None = None
    ) -> EmbeddingReport:
        """See `Maintenance.embed_missing`, for the storage's embedder: `memorybank reindex --embeddings`."""
        return self.maintenance.embed_missing(self._require_embedder(), batch_size=batch_size, progress=progress)

    def measure_usage(self) -> int:
        """See `Maintenance.measure_usage`."""
        return self.maintenance.measure_usage()

    def memory_owners(self) -> list[str]:
        """See `Maintenance.memory_owners`: `memorybank secrets scan`."""
        return self.maintenance.memory_owners()

    def compact_search_index(self) -> int:
        """See `Maintenance.compact_search_index`: `memorybank compact`.

        Raises:
            CompactUnsupportedError: the database is a Spider head, whose tables hold no rows.
        """
        if self._spider_head:
            raise CompactUnsupportedError(
                "this database is a Spider head, whose tables hold no rows: run `memorybank compact --db URL` "
                "against each data node instead"
            )
        return self.maintenance.compact_search_index()

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise ValueError("no embedder: this storage was opened for lexical search")
        return self.embedder

    def close(self) -> None:
        """Close every pooled connection; any later use of the storage raises `StorageClosedError`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.deferred_vectors is not None:
            self.deferred_vectors.stop()
        # The pool outlives dispose() (it is recreated on the next use): refusing every checkout makes a use
        # after close a clear error, not a silent reconnect.
        sa.event.listen(self.engine, "checkout", _refuse_checkout)
        self.engine.dispose()

    def __enter__(self) -> SqlStorage:
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _error: BaseException | None, _traceback: TracebackType | None
    ) -> None:
        self.close()


def _refuse_checkout(*_: Any) -> None:
    raise StorageClosedError("this storage is closed: open another (open_storage) to use the database again")


def open_storage(
    url: str,
    *,
    indexer: OwnerIndexer,
    sealer: Sealer | None = None,
    embedder: Embedder | None = None,
    fusion: Fusion | None = None,
) -> SqlStorage:
    """Open SQL storage at `url` and check that the database answers.

    `url` is `mysql://user:pw@host:port/db` (mysqlclient), `mysql+pymysql://…`, for a
    cluster `mysql://user:pw@host1:port1,host2:port2/db` (adapters_mysql.failover),
    `sqlite:///path/file.sqlite3`, or `sqlite://` (in memory, for tests). Search is the
    dialect's owner-scoped engine, with `indexer`'s search documents. With a `sealer`
    (encryption at rest) every stored user text is sealed and `indexer` must write its blind index.
    With an `embedder` search is hybrid (see `SqlStorage`).
    The schema is not touched: call `initialize`, `migrate` or `check_ready` next (they also
    check the key ring against the database).

    Raises:
        InvalidInputError: ("db") a malformed URL, an unsupported scheme, a missing database
            name or a missing driver.
        UnavailableError: the database cannot be reached.
    """
    engine, display_url, spider_head = open_database(url)
    try:
        return SqlStorage(
            engine=engine,
            indexer=indexer,
            display_url=display_url,
            sealer=sealer,
            spider_head=spider_head,
            embedder=embedder,
            fusion=fusion,
        )
    except BaseException:
        engine.dispose()
        raise
