"""The operator's walks over every memory of one database: re-index (and re-seal), write missing vectors,
count quota use saved before it was counted, list the owners.

Each runs in batches of short transactions beside a live server (`memorybank reindex`, `encrypt`,
`keys rotate`, `migrate`, `secrets scan`); `SqlStorage` hands them its engine and row codec.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import sqlalchemy as sa

from adapters_mysql import embedding_reindex, reindex, seal_keys
from adapters_mysql.embedding_reindex import DEFAULT_EMBEDDING_BATCH, EmbeddingReport
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.reindex import DEFAULT_BATCH_SIZE, ReindexReport
from adapters_mysql.schema import memory
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.sqlite_search import purge_rewritten_text
from adapters_mysql.usage import backfill_characters
from memorybank_core import Embedder, Sealer, UnavailableError
from memorybank_search import OwnerIndexer


class Maintenance:
    """The batch jobs over one database's memories, written through its indexer and codec."""

    def __init__(
        self, *, engine: sa.Engine, indexer: OwnerIndexer, codec: RowCodec, sealer: Sealer | None, store: SqlMemoryStore
    ) -> None:
        self._engine = engine
        self._indexer = indexer
        self._codec = codec
        self._sealer = sealer
        # Reads whole memories (opened through the codec) for the walks that need their text.
        self._store = store

    def count_to_reindex(self, *, everything: bool = False) -> int:
        """How many memories `reindex` would rewrite: indexed by an older scheme or sealed by other keys (or all).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return reindex.count_to_reindex(self._engine, self._codec, everything=everything)

    def reindex(
        self,
        *,
        everything: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> ReindexReport:
        """Rewrite memories indexed by an older scheme or sealed by other keys (or all) under the current ones.

        This is `memorybank reindex`, `encrypt` and `keys rotate`: batches of `batch_size` rows, each
        its own transaction, beside a live server; `progress` gets each batch's count. Hybrid search's
        vectors are re-sealed too (`reseal_vectors`; those that do not open are counted in
        `broken_vectors`). When nothing was left broken, key-check values of keys no row or vector
        needs are dropped, and a database whose rows are now all sealed refuses plaintext rows from
        its next start on.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        report = reindex.reindex(
            self._engine, self._indexer, self._codec, everything=everything, batch_size=batch_size, progress=progress
        )
        # Hybrid search's vectors are sealed like the text they come from (no model needed to re-seal them),
        # and so are the kept earlier versions of memories.
        vectors = embedding_reindex.reseal_vectors(self._engine, self._codec)
        revisions = embedding_reindex.reseal_revisions(self._engine, self._codec)
        report = attrs.evolve(report, broken_vectors=vectors.broken, broken_revisions=revisions.broken)
        # As for a broken row: a vector or revision left under an old key still needs that key: nothing is settled.
        if self._sealer is not None and not report.broken and not report.broken_vectors and not report.broken_revisions:
            seal_keys.settle_keys(self._engine, self._sealer)
        if self._engine.dialect.name == "sqlite":
            with unavailable_on_driver_error("reindex"):
                purge_rewritten_text(self._engine)
        return report

    def compact_search_index(self) -> int:
        """Drop the entries of deleted and rewritten memories from the search index; how many memories it holds.

        This is `memorybank compact`. Every delete, edit, purge and re-index leaves the old text's entries in the
        full-text index: InnoDB keeps them, and the id of every such document, until the table is rebuilt, and
        checks every search of every user against those ids (ADR 0047, `benchmarks.fulltext_churn`: about
        0.1 ms per search for each 1,000); FTS5 keeps them in segments until they are merged. MySQL/MariaDB:
        `OPTIMIZE TABLE memory` (InnoDB recreates the table: reads go on, writes to it wait). Not
        `innodb_optimize_fulltext_only`: a server-wide setting, and MariaDB 10.11.19 crashed on it here
        (MDEV-39616). SQLite: the FTS5 merge and a WAL checkpoint (`purge_rewritten_text`).

        Raises:
            UnavailableError: the database cannot be reached, or the server refused the rebuild.
        """
        with unavailable_on_driver_error("compact"):
            if self._engine.dialect.name == "sqlite":
                purge_rewritten_text(self._engine)
            else:
                with self._engine.connect() as connection:
                    # A table name, not input: no parameter can stand for it.
                    outcome = connection.exec_driver_sql(f"OPTIMIZE TABLE {memory.name}").all()
                    refused = [str(row[3]) for row in outcome if str(row[2]).lower() == "error"]
                    if refused:
                        raise UnavailableError(f"the server did not rebuild the memory table: {'; '.join(refused)}")
            with self._engine.connect() as connection:
                return int(connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one())

    def count_to_embed(self, embedder: Embedder) -> int:
        """How many memories lack a vector of `embedder`'s model (under the current seal).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return embedding_reindex.count_to_embed(self._engine, self._codec, embedder)

    def embed_missing(
        self,
        embedder: Embedder,
        *,
        batch_size: int = DEFAULT_EMBEDDING_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> EmbeddingReport:
        """`memorybank reindex --embeddings`: write the vector of every memory lacking a current one, online.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        store = self._store
        return embedding_reindex.embed_missing(
            self._engine,
            self._codec,
            embedder,
            lambda user_id, ids: store.get_many(user_id=user_id, memory_ids=ids),
            batch_size=batch_size,
            progress=progress,
        )

    def measure_usage(self) -> int:
        """Count the quota characters of memories saved before revision 0010, through the key ring; how many.

        Raises:
            UnavailableError: the database cannot be reached; counted batches stay counted.
        """
        store = self._store
        return backfill_characters(self._engine, lambda user_id, ids: store.get_many(user_id=user_id, memory_ids=ids))

    def memory_owners(self) -> list[str]:
        """Every user id that owns at least one memory, in order: for operator walks across users
        (`memorybank secrets scan`), which then read each owner's memories through the store.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("memory owners"), self._engine.connect() as connection:
            query = sa.select(memory.c.user_id).distinct().order_by(memory.c.user_id)
            return list(connection.execute(query).scalars())
