"""`SqlMemoryStore`: memories and their contexts in SQL, every statement scoped to one owner.

Dialect-neutral: the same statements run on MySQL/MariaDB and SQLite. Every statement
that touches `memory` or `memory_context` carries `user_id = :owner` (reads and deletes
of memories also `scope = 'user'`), so each one routes to a single Vitess shard.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa

from adapters_mysql.compiled_reads import CompiledInsert, CompiledRead, PlannedRead, insert_together
from adapters_mysql.deferred_vectors import DeferredVectors
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import (
    memory_row,
    owned_memories,
    owned_vectors,
    owner_parameter,
    owner_scope_parameter,
    owner_values,
)
from adapters_mysql.schema import memory as memory_table
from adapters_mysql.schema import memory_context, memory_revision, memory_vector
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.unit_of_work import kept_after_the_use_case, reading, writing
from adapters_mysql.usage import charge, charge_many, credit, read_usage, recharge
from memorybank_core import (
    BrokenSealError,
    Embedder,
    Embedding,
    InvalidInputError,
    ListPosition,
    Memory,
    MemoryChange,
    MemoryStore,
    NotFoundError,
    Quota,
    RevisionConflictError,
    RevisionEraser,
    UnavailableError,
    Usage,
    charged_characters,
)
from memorybank_core.sealing import UnknownSealKeyError
from memorybank_search import OwnerIndexer, embedding_text

_log = logging.getLogger("memorybank.storage")

#: The search document is the search engines' business: loading memories leaves it in the table,
#: except on a sealed database, where each read checks the tokens' authenticator (sealed_rows).
SEARCH_COLUMNS = frozenset({"search_terms", "doc_length", "search_version", "search_mac"})
_ENTITY_COLUMNS = [column for column in memory_table.c if column.name not in SEARCH_COLUMNS]
_CHECKED_COLUMNS = [column for column in memory_table.c if column.name != "search_version"]
#: What a change of a memory never rewrites: who owns it, since when, how it first came, who wrote it and whether
#: a purge since made them a former member (a change read before the purge must not undo its mark).
_FIXED_COLUMNS = frozenset(
    {"id", "user_id", "org_id", "scope", "source", "created_at", "author_id", "author_former_member"}
)


#: Contexts joined to their memory: same owner (the shard key), same memory.
_CONTEXT_OF_MEMORY = memory_row(memory_context.c.user_id, memory_context.c.memory_id)
_MEMORY_WITH_CONTEXTS = memory_table.outerjoin(memory_context, _CONTEXT_OF_MEMORY)
_CONTEXT_COLUMNS = [column.label(f"context_{column.name}") for column in memory_context.c]


_ContextRow = namedtuple("_ContextRow", [column.name for column in memory_context.c])  # type: ignore[misc]
"""A joined row's context columns (its last ones), under their own names."""


def _context_order(context: Any) -> tuple[Any, str]:
    # A memory's contexts share created_at; ids are time-ordered TypeIDs minted in save order.
    return (context.created_at, context.id)


class _ReadStatements(NamedTuple):
    """`get_many`'s and `list`'s statements over one choice of `memory` columns, built once.

    Each loads memories joined with their contexts in one round trip. No ORDER BY on the join:
    sorting a join that carries TEXT columns makes MariaDB build an on-disk temporary table (a few
    milliseconds for 20 rows); the rows are put in order in Python.
    """

    get_many: CompiledRead
    list_first: CompiledRead
    list_after: CompiledRead
    list_first_all: CompiledRead
    list_after_all: CompiledRead
    """The lists with retired memories too (`include_retired`)."""
    contexts_from: int
    """Where a row's context columns start."""

    @classmethod
    def selecting(cls, columns: Sequence[sa.Column[Any]]) -> _ReadStatements:
        joined = sa.select(*columns, *_CONTEXT_COLUMNS).select_from(_MEMORY_WITH_CONTEXTS)
        # get_many: the owner's personal memories among `:ids`.
        get_many = joined.where(
            owned_memories(owner_parameter(), owner_scope_parameter()),
            memory_table.c.id.in_(sa.bindparam("ids", expanding=True)),
        )
        # list: the ids of a page of the owner's personal memories, newest first, from the start or
        # strictly after a position (expanded rather than a row comparison, so MySQL can range-scan the
        # (user_id, created_at, id) index); then those memories joined with their contexts. Only the
        # ids go through the derived table: with the TEXT columns MariaDB would materialize it on disk.
        page_first_all = (
            sa.select(memory_table.c.id)
            .where(owned_memories(owner_parameter(), owner_scope_parameter()))
            .order_by(memory_table.c.created_at.desc(), memory_table.c.id.desc())
            .limit(sa.bindparam("limit", type_=sa.Integer))
        )
        after = sa.or_(
            memory_table.c.created_at < sa.bindparam("after_created_at", type_=memory_table.c.created_at.type),
            sa.and_(
                memory_table.c.created_at == sa.bindparam("after_created_at", type_=memory_table.c.created_at.type),
                memory_table.c.id < sa.bindparam("after_id"),
            ),
        )
        page_after_all = page_first_all.where(after)
        # A list leaves retired memories out unless asked (`GET /v1/memory?include=retired`).
        page_first = page_first_all.where(memory_table.c.retired_by.is_(None))
        page_after = page_first.where(after)

        def page_of(ids: sa.Select[Any]) -> sa.Select[Any]:
            page = ids.subquery("page")
            memories = page.join(memory_table, memory_table.c.id == page.c.id).outerjoin(
                memory_context, _CONTEXT_OF_MEMORY
            )
            return (
                sa.select(*columns, *_CONTEXT_COLUMNS)
                .select_from(memories)
                .where(owned_memories(owner_parameter(), owner_scope_parameter()))
            )

        return cls(
            CompiledRead(get_many, expanding="ids"),
            CompiledRead(page_of(page_first)),
            CompiledRead(page_of(page_after)),
            CompiledRead(page_of(page_first_all)),
            CompiledRead(page_of(page_after_all)),
            contexts_from=len(columns),
        )


#: Plaintext databases read the entity columns; sealed ones also the search columns, to check them.
_PLAIN_READS = _ReadStatements.selecting(_ENTITY_COLUMNS)
_CHECKED_READS = _ReadStatements.selecting(_CHECKED_COLUMNS)


_MEMORY_INSERT = CompiledInsert(memory_table)
_CONTEXT_INSERT = CompiledInsert(memory_context)
_VECTOR_INSERT = CompiledInsert(memory_vector)


class SqlMemoryStore(MemoryStore, RevisionEraser):
    """The `MemoryStore` port over SQLAlchemy Core; see `adapters_mysql.open_storage`.

    Every write also stores the memory's owner-scoped search document (`indexer`), in the
    same transaction, whichever search engine reads it; with an `embedder` (hybrid search), its
    vector too (`memory_vector`), so a search never sees a saved memory without its vector.
    """

    def __init__(
        self,
        engine: sa.Engine,
        indexer: OwnerIndexer,
        codec: RowCodec | None = None,
        *,
        embedder: Embedder | None = None,
        similar_reads: Callable[[Memory], Sequence[PlannedRead]] | None = None,
        deferred: DeferredVectors | None = None,
    ) -> None:
        """`similar_reads(memory)`: what the served search engine reads first to find memories like `memory`
        (`OwnerScopedSearch.reads_for`); a save sends them after its commit, in its last round trip, for the
        `similar` look-up that follows it in the same unit of work (ADR 0042). None: nothing is read ahead.
        `deferred`: where a save or an edit of a long text leaves its vector to be written after it answers
        (ADR 0045); None: every write embeds its own."""
        self._engine = engine
        self._indexer = indexer
        self.codec = codec or RowCodec()
        self._reads = _CHECKED_READS if self.codec.reads_search_columns else _PLAIN_READS
        self.embedder = embedder
        """Hybrid search's model: saves then write each memory's vector too; None: lexical storage."""
        self._similar_reads = similar_reads
        self._deferred = deferred

    def add(
        self, *, user_id: str, memory: Memory, quota: Quota | None = None, retiring: Sequence[MemoryChange] = ()
    ) -> None:
        if memory.user_id != user_id or any(change.current.user_id != user_id for change in retiring):
            raise ValueError("a memory is added by its own owner")
        # Embedded before any row is locked (about 20 ms on one core) and written in the same transaction; a long
        # text's after the save answered (ADR 0045).
        later = self._embeds_later(memory)
        vectors = [] if later else self._vector_rows([memory])
        with unavailable_on_driver_error("save"), writing(self._engine) as connection:
            # The ledger first: over quota, the transaction rolls back before any row is written.
            charge(connection, memory, quota)
            # Nothing follows the rows: their query may commit, and read ahead for the `similar` look-up.
            then_read = self._read_ahead(memory) if not retiring else ()
            self._insert(connection, [memory], vectors, then_read=then_read)
            for change in retiring:
                # A retired memory keeps its texts: only its version, search document and vector change.
                self._revise_in(connection, user_id, change, None)
        if later and self._deferred is not None:
            self._deferred.write_later(memory)

    def revise(self, *, user_id: str, change: MemoryChange, quota: Quota | None = None) -> bool:
        if change.current.user_id != user_id or change.current.id != change.previous.id:
            raise ValueError("a memory is revised by its own owner, as itself")
        later = self._text_changed(change) and self._embeds_later(change.current)
        vector = None if later else self._vector_of(change)
        try:
            with unavailable_on_driver_error("edit"), writing(self._engine) as connection:
                growth = charged_characters(change.current) - charged_characters(change.previous)
                # The ledger first, as for a save: over quota, nothing is written.
                recharge(connection, user_id=user_id, characters=growth, quota=quota)
                self._revise_in(connection, user_id, change, vector, stale=later)
        except NotFoundError:
            return False
        if later and self._deferred is not None:
            self._deferred.write_later(change.current)
        return True

    def _embeds_later(self, memory: Memory) -> bool:
        """Whether `memory`'s vector is written after its write answers (a long text, ADR 0045)."""
        return (
            self.embedder is not None
            and self._deferred is not None
            and not memory.retired
            and self._deferred.defers(embedding_text(memory))
        )

    @staticmethod
    def _text_changed(change: MemoryChange) -> bool:
        """Whether `change` gives its memory another embedded text (or brings a retired one back)."""
        return change.previous.retired or embedding_text(change.previous) != embedding_text(change.current)

    def _vector_of(self, change: MemoryChange) -> Embedding | None:
        """The new version's vector, embedded before any row is locked; None without an embedder, for a retired
        memory (it has none), or when the embedded text is unchanged."""
        if self.embedder is None or change.current.retired or not self._text_changed(change):
            return None
        return self.embedder.embed([embedding_text(change.current)])[0]

    def _revise_in(
        self,
        connection: sa.Connection,
        user_id: str,
        change: MemoryChange,
        vector: Embedding | None,
        *,
        stale: bool = False,
    ) -> None:
        """Write `change` in the caller's transaction; raise to roll it back when it does not apply. `stale`: the
        memory's vector no longer matches its text and its new one comes later (ADR 0045): the old one goes now.

        Raises:
            NotFoundError: the owner has no such memory.
            RevisionConflictError: the stored revision is not `change.previous.revision`.
        """
        previous, current = change.previous, change.current
        values = self._memory_row(current)
        mine = sa.and_(owned_memories(user_id), memory_table.c.id == current.id)
        # The conditional update is the check and the lock: a racing change of the same memory waits, then
        # finds another revision and updates nothing.
        updated = connection.execute(
            memory_table.update()
            .where(mine, memory_table.c.revision == previous.revision)
            .values({key: value for key, value in values.items() if key not in _FIXED_COLUMNS})
        ).rowcount
        if updated != 1:
            if connection.execute(sa.select(memory_table.c.id).where(mine)).first() is None:
                raise NotFoundError()
            raise RevisionConflictError()
        if current.contexts != previous.contexts:
            connection.execute(
                memory_context.delete().where(
                    memory_context.c.user_id == user_id, memory_context.c.memory_id == current.id
                )
            )
            if current.contexts:
                connection.execute(
                    memory_context.insert(), [self.codec.context_row(context, user_id) for context in current.contexts]
                )
        if self.embedder is not None and (current.retired or vector is not None or stale):
            connection.execute(
                memory_vector.delete().where(owned_vectors(user_id), memory_vector.c.memory_id == current.id)
            )
            if vector is not None:
                connection.execute(
                    memory_vector.insert(),
                    self.codec.vector_row(
                        user_id=user_id, memory_id=current.id, model=self.embedder.model_id, embedding=vector
                    ),
                )
        if change.keep_revisions > 0:
            connection.execute(memory_revision.insert(), self.codec.revision_row(previous))
        # Only the newest `keep_revisions` earlier versions stay (their numbers are consecutive, below `current`).
        connection.execute(
            memory_revision.delete().where(
                memory_revision.c.user_id == user_id,
                memory_revision.c.memory_id == current.id,
                memory_revision.c.revision < current.revision - change.keep_revisions,
            )
        )

    def revisions(self, *, user_id: str, memory_id: str, limit: int, before: int | None) -> Sequence[Memory]:
        # The memory first (owner-scoped): a revision is only ever read beside its own, living memory.
        found = self.get_many(user_id=user_id, memory_ids=[memory_id]).get(memory_id)
        if found is None:
            return []
        newest = before if before is not None else found.revision
        with unavailable_on_driver_error("revisions"), reading(self._engine) as connection:
            rows = connection.execute(
                sa.select(memory_revision)
                .where(
                    memory_revision.c.user_id == user_id,
                    memory_revision.c.memory_id == memory_id,
                    memory_revision.c.revision < newest,
                )
                .order_by(memory_revision.c.revision.desc())
                .limit(limit)
            ).all()
        kept: list[Memory] = []
        for row in rows:
            try:
                kept.append(self.codec.revision(row, found))
            except BrokenSealError as error:
                _log.warning("revision %s of memory %s does not open (%s): left out", row.revision, memory_id, error)
        return kept

    def drop_revisions(self, *, user_id: str, memory_id: str, revisions: Sequence[int]) -> None:
        if not revisions:
            return
        with unavailable_on_driver_error("drop revisions"), writing(self._engine) as connection:
            connection.execute(
                memory_revision.delete().where(
                    memory_revision.c.user_id == user_id,
                    memory_revision.c.memory_id == memory_id,
                    memory_revision.c.revision.in_(sorted(set(revisions))),
                )
            )

    def add_many(self, memories: Sequence[Memory], revisions: Sequence[Memory] = ()) -> None:
        """Store memories of any owners, with their contexts and `revisions` (earlier versions of them, kept as
        revisions), in one transaction: all or none.

        For bulk loads (`memorybank import`): one multi-row insert per table. Each memory keeps
        the id, owner, timestamps and revision it carries.

        Raises:
            UnavailableError: storage cannot be reached; nothing was written.
            InvalidInputError: ("id") a memory or context id is already stored; nothing was written.
        """
        if not memories:
            return
        vectors = self._vector_rows(memories)
        try:
            with unavailable_on_driver_error("import"), writing(self._engine) as connection:
                charge_many(connection, memories)
                self._insert(connection, memories, vectors)
                if revisions:
                    connection.execute(memory_revision.insert(), [self.codec.revision_row(v) for v in revisions])
        except sa.exc.IntegrityError as error:
            raise InvalidInputError("id", "is already stored") from error

    def _read_ahead(self, memory: Memory) -> Sequence[PlannedRead]:
        """The reads of the `similar` look-up of `memory` to send after its save's commit: only when the unit of
        work outlives the save (a facade's request, which asks `similar` next: a save alone would drop them)."""
        if self._similar_reads is None or not kept_after_the_use_case(self._engine):
            return ()
        return self._similar_reads(memory)

    def _insert(
        self,
        connection: sa.Connection,
        memories: Sequence[Memory],
        vectors: Sequence[dict[str, Any]],
        *,
        then_read: Sequence[PlannedRead] = (),
    ) -> None:
        rows = [self._memory_row(memory) for memory in memories]
        contexts = [
            self.codec.context_row(context, memory.user_id) for memory in memories for context in memory.contexts
        ]
        # A save's rows in one round trip where the connection allows it (adapters_mysql.one_trip); with
        # `then_read`, that query also commits and reads them.
        if len(memories) == 1 and insert_together(
            connection,
            [(_MEMORY_INSERT, rows), (_CONTEXT_INSERT, contexts), (_VECTOR_INSERT, vectors)],
            then_read=then_read,
        ):
            return
        connection.execute(memory_table.insert(), rows)
        if contexts:
            connection.execute(memory_context.insert(), contexts)
        if vectors:
            connection.execute(memory_vector.insert(), vectors)

    def _vector_rows(self, memories: Sequence[Memory]) -> list[dict[str, Any]]:
        """The `memory_vector` rows of `memories` (none without an embedder, none for a retired memory: an
        imported one has nothing to be found by, as one a save retires)."""
        memories = [memory for memory in memories if not memory.retired]
        if self.embedder is None or not memories:
            return []
        model = self.embedder.model_id
        embeddings = self.embedder.embed([embedding_text(memory) for memory in memories])
        return [
            self.codec.vector_row(user_id=memory.user_id, memory_id=memory.id, model=model, embedding=embedding)
            for memory, embedding in zip(memories, embeddings, strict=True)
        ]

    def _memory_row(self, saved: Memory) -> dict[str, Any]:
        return self.codec.memory_row(saved, self._indexer.document(saved))

    def get_many(self, *, user_id: str, memory_ids: Sequence[str]) -> Mapping[str, Memory]:
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted:
            return {}
        # One round trip: each memory joined with its contexts (search loads its results here). One id goes with
        # an id no memory has: `id IN (:one)` makes the memory a constant table of the join, and a Spider head
        # (MariaDB 10.11) then returns that row's TEXT columns overwritten by the contexts read after it, for a
        # memory whose contexts fill a few of Spider's buffers (tests/clusters/test_spider.py); `IN (:one, '')`
        # is a range read on every server, as two ids are.
        ids = wanted if len(wanted) > 1 else [*wanted, ""]
        with unavailable_on_driver_error("load"), reading(self._engine) as connection:
            rows = self._reads.get_many.all(connection, {**owner_values(user_id), "ids": ids})
        return _joined_memories(self.codec, rows, self._reads.contexts_from)

    def list(
        self, *, user_id: str, limit: int, after: ListPosition | None, include_retired: bool = False
    ) -> Sequence[Memory]:
        parameters: dict[str, Any] = {**owner_values(user_id), "limit": limit}
        if after is not None:
            parameters.update(after_created_at=after.created_at, after_id=after.memory_id)
        reads = self._reads
        with unavailable_on_driver_error("list"), reading(self._engine) as connection:
            if include_retired:
                statement = reads.list_after_all if after is not None else reads.list_first_all
            else:
                statement = reads.list_after if after is not None else reads.list_first
            rows = statement.all(connection, parameters)
        page = list(_joined_memories(self.codec, rows, self._reads.contexts_from).values())
        page.sort(key=_newest_first, reverse=True)
        return page

    def delete(self, *, user_id: str, memory_id: str) -> bool:
        try:
            with unavailable_on_driver_error("delete"), writing(self._engine) as connection:
                # Contexts first, as the reference host does. No read before the writes: the
                # memory delete's row count says whether the owner had such a memory.
                delete_dependents(connection, user_id, memory_id)
                # The ledger before the row goes, reading the row's count in the same statement.
                counted = (
                    sa.select(memory_table.c.characters)
                    .where(owned_memories(user_id), memory_table.c.id == memory_id)
                    .scalar_subquery()
                )
                credit(connection, user_id=user_id, characters=counted)
                deleted = connection.execute(
                    memory_table.delete().where(owned_memories(user_id), memory_table.c.id == memory_id)
                ).rowcount
                if deleted != 1:
                    # Not the owner's personal memory: undo the context delete, report "none such".
                    raise _NothingDeleted
        except _NothingDeleted:
            return False
        return True

    def usage(self, *, user_id: str) -> Usage:
        return read_usage(self._engine, user_id)


def delete_dependents(connection: sa.Connection, user_id: str, memory_id: str) -> None:
    """Delete the owner's memory's contexts, vector and kept revisions: the rows that go before the memory itself."""
    connection.execute(
        memory_context.delete().where(memory_context.c.user_id == user_id, memory_context.c.memory_id == memory_id)
    )
    connection.execute(memory_vector.delete().where(owned_vectors(user_id), memory_vector.c.memory_id == memory_id))
    connection.execute(
        memory_revision.delete().where(memory_revision.c.user_id == user_id, memory_revision.c.memory_id == memory_id)
    )


class _NothingDeleted(Exception):
    """Rolls back a delete that found no memory of the owner's."""


def _joined_memories(codec: RowCodec, rows: Sequence[Any], contexts_from: int) -> dict[str, Memory]:
    """The memories of rows joined with their contexts (one row per context, or one without), by id.

    A memory that does not open is left out (`_open_or_none`).
    """
    memory_rows: dict[str, Any] = {}
    contexts: dict[str, list[Any]] = {}
    make_context = _ContextRow._make
    for row in rows:
        memory_rows.setdefault(row.id, row)
        if row.context_id is not None:
            contexts.setdefault(row.id, []).append(make_context(row[contexts_from:]))
    for found in contexts.values():
        found.sort(key=_context_order)
    opened = {
        memory_id: _open_or_none(codec, row, contexts.get(memory_id, [])) for memory_id, row in memory_rows.items()
    }
    return {memory_id: memory for memory_id, memory in opened.items() if memory is not None}


def _newest_first(memory: Memory) -> tuple[Any, str]:
    # The page's SQL order (created_at, id descending, with reverse=True): ids compare as bytes in Python
    # and in the database (utf8mb4_bin on MySQL, BINARY on SQLite).
    return (memory.created_at, memory.id)


def _open_or_none(codec: RowCodec, row: Any, context_rows: Sequence[Any]) -> Memory | None:
    """The memory of `row`, or None (logged by id) when it does not open: it is never shown, others still are."""
    try:
        return codec.memory(row, context_rows)
    except UnknownSealKeyError as error:
        # Not one broken row but a stale ring (a server not restarted after `keys add` while `keys rotate` ran):
        # answering without these memories would show a bank that looks empty. Refuse, and say what to do.
        _log.error(
            "memory %s is sealed under key %s, which this server's key ring does not hold: restart it with the "
            "current key ring",
            row.id,
            error.key_id or "-",
        )
        raise UnavailableError(f"this server's key ring lacks key {error.key_id}") from error
    except BrokenSealError as error:
        _log.warning("memory %s does not open (%s; key %s): treated as unavailable", row.id, error, error.key_id or "-")
        return None
