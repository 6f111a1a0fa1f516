"""`memorybank reindex --embeddings`: give every memory a vector of the configured model, online.

A memory needs one when it has no `memory_vector` row, or one written by another model, or one
sealed under another seal state than the storage writes now (after `encrypt` or `keys rotate`).
The walk reads such memories by primary key in batches, loads them through the store (so sealed
text opens with the key ring), embeds them outside any transaction, then writes each batch in
one transaction that first locks the batch's memory rows (`FOR UPDATE`): a memory deleted since
it was read gets no vector, and a delete racing the write waits for it. Stop it at any point and
run it again: it resumes with the memories still without a current vector. A server keeps
serving beside it; until a memory's batch commits, hybrid search finds it by its words only.

`reseal_vectors` is the part of `encrypt` and `keys rotate` that concerns vectors: it seals them
under the ring's current key without the model; `reseal_revisions` does the same for the kept earlier
versions of memories (`memory_revision`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import sqlalchemy as sa

from adapters_mysql.engines import for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import memory_row, owned_vectors, vector_row, vectors_after
from adapters_mysql.schema import memory, memory_revision, memory_vector
from adapters_mysql.sealed_rows import RowCodec
from memorybank_core import BrokenSealError, Embedder, Memory
from memorybank_search import embedding_text

_log = logging.getLogger("memorybank.storage")

#: Memories per batch: one embedding call (about 20 ms each on one core) and one transaction.
DEFAULT_EMBEDDING_BATCH = 64

LoadMemories = Callable[[str, Sequence[str]], Mapping[str, Memory]]
"""The store's `get_many(user_id=..., memory_ids=...)`, as a plain function of owner and ids."""


@attrs.frozen
class EmbeddingReport:
    """What an embedding walk did: vectors written, and memories skipped because they do not open."""

    embedded: int
    skipped: int


@attrs.frozen
class ResealReport:
    """What `reseal_vectors` did: vectors re-sealed, and vectors left as they were because they do not open."""

    resealed: int
    broken: int


def _vector_join(model: str, codec: RowCodec) -> sa.Select[str, str]:
    current = memory.outerjoin(
        memory_vector,
        sa.and_(
            owned_vectors(memory.c.user_id),
            memory_vector.c.memory_id == memory.c.id,
            memory_vector.c.model == model,
            memory_vector.c.seal_state.is_not_distinct_from(codec.state),
        ),
    )
    return (
        sa.select(memory.c.id, memory.c.user_id)
        .select_from(current)
        # Every bank's memories, a person's and an organization's (each keyed by its own owner, `memory.user_id`).
        # A retired memory has no vector (no query finds it) until it is restored.
        .where(memory.c.retired_by.is_(None), memory_vector.c.memory_id.is_(None))
    )


def count_to_embed(engine: sa.Engine, codec: RowCodec, embedder: Embedder) -> int:
    """How many memories lack a current vector of `embedder`'s model."""
    pending = _vector_join(embedder.model_id, codec).subquery()
    with unavailable_on_driver_error("reindex"), engine.connect() as connection:
        return int(connection.execute(sa.select(sa.func.count()).select_from(pending)).scalar_one())


def embed_missing(
    engine: sa.Engine,
    codec: RowCodec,
    embedder: Embedder,
    load: LoadMemories,
    *,
    batch_size: int = DEFAULT_EMBEDDING_BATCH,
    progress: Callable[[int], None] | None = None,
) -> EmbeddingReport:
    """Write a current vector for every memory lacking one; `progress` gets each committed batch's count.

    Raises:
        UnavailableError: the database cannot be reached; committed batches stay done.
    """
    writer = for_writing(engine)
    pending = _vector_join(embedder.model_id, codec)
    after = ""
    embedded = skipped = 0
    while True:
        with unavailable_on_driver_error("reindex"), engine.connect() as connection:
            rows = connection.execute(pending.where(memory.c.id > after).order_by(memory.c.id).limit(batch_size)).all()
        if not rows:
            return EmbeddingReport(embedded=embedded, skipped=skipped)
        memories = _load(rows, load)
        skipped += len(rows) - len(memories)
        vectors = embedder.embed([embedding_text(found) for found in memories])
        with unavailable_on_driver_error("reindex"), writer.begin() as connection:
            embedded += _write(connection, codec, embedder.model_id, memories, vectors)
        after = rows[-1].id
        if progress is not None:
            progress(len(rows))


def embed_memories(engine: sa.Engine, codec: RowCodec, embedder: Embedder, memories: Sequence[Memory]) -> int:
    """Write the vectors of `memories` as given (saves that answered before their vector, ADR 0045), in one
    transaction; each only while the stored memory is still that version. Returns how many were written.

    Raises:
        UnavailableError: the database cannot be reached; nothing was written.
    """
    vectors = embedder.embed([embedding_text(found) for found in memories])
    with unavailable_on_driver_error("reindex"), for_writing(engine).begin() as connection:
        return _write(connection, codec, embedder.model_id, memories, vectors)


def _load(rows: Sequence[Any], load: LoadMemories) -> list[Memory]:
    by_owner: dict[str, list[str]] = {}
    for row in rows:
        by_owner.setdefault(row.user_id, []).append(row.id)
    loaded: list[Memory] = []
    for owner, ids in by_owner.items():
        found = load(owner, ids)
        for memory_id in ids:
            if memory_id in found:
                loaded.append(found[memory_id])
            else:
                _log.warning("memory %s does not open or was deleted: not embedded", memory_id)
    return loaded


def _write(connection: sa.Connection, codec: RowCodec, model: str, memories: Sequence[Memory], vectors: Any) -> int:
    """Write `vectors` of `memories` in the caller's transaction, in three statements whatever the batch's size: lock
    the memories still at the version embedded, delete their vectors, insert the new ones."""
    if not memories:
        return 0
    # Lock the memories: one deleted or changed since it was read gets no vector of the text read (the change wrote
    # its own, or left it to be written); a racing delete or change waits for us.
    alive = {
        (row.user_id, row.id)
        for row in connection.execute(
            sa.select(memory.c.user_id, memory.c.id)
            .where(
                sa.or_(
                    *(
                        sa.and_(memory_row(found.user_id, found.id), memory.c.revision == found.revision)
                        for found in memories
                    )
                )
            )
            .with_for_update()
        )
    }
    kept = [
        (found, vector) for found, vector in zip(memories, vectors, strict=True) if (found.user_id, found.id) in alive
    ]
    if not kept:
        return 0
    connection.execute(
        memory_vector.delete().where(sa.or_(*(vector_row(found.user_id, found.id) for found, _ in kept)))
    )
    connection.execute(
        memory_vector.insert(),
        [
            codec.vector_row(user_id=found.user_id, memory_id=found.id, model=model, embedding=vector)
            for found, vector in kept
        ],
    )
    return len(kept)


def reseal_vectors(
    engine: sa.Engine, codec: RowCodec, *, batch_size: int = DEFAULT_EMBEDDING_BATCH * 16
) -> ResealReport:
    """Re-seal every vector whose seal state is not the one `codec` writes (`encrypt`, `keys rotate`).

    No model is needed: each vector is opened and sealed again, in batches of `batch_size`, one
    transaction each, in key order. A vector that does not open is logged, left and counted (its
    memory is then found by its words until `reindex --embeddings` writes it again; until then its
    key stays in use).

    Raises:
        UnavailableError: the database cannot be reached; committed batches stay done.
    """

    def resealed(row: sa.Row[Any]) -> dict[str, Any]:
        fresh = codec.vector_row(
            user_id=row.user_id, memory_id=row.memory_id, model=row.model, embedding=codec.vector(row)
        )
        return {"vector": fresh["vector"], "seal_state": fresh["seal_state"]}

    return _reseal(
        engine,
        codec,
        memory_vector,
        key=(memory_vector.c.user_id, memory_vector.c.memory_id),
        after=lambda row: vectors_after(row.user_id, row.memory_id),
        resealed=resealed,
        name=lambda row: f"the vector of memory {row.memory_id}",
        batch_size=batch_size,
    )


def reseal_revisions(
    engine: sa.Engine, codec: RowCodec, *, batch_size: int = DEFAULT_EMBEDDING_BATCH * 16
) -> ResealReport:
    """Re-seal every kept revision whose seal state is not the one `codec` writes (`encrypt`, `keys rotate`).

    Each body is opened and sealed again under the ring's current key, in batches of `batch_size`, one
    transaction each, in key order. A revision that does not open is logged, left and counted (its key then
    stays in use).

    Raises:
        UnavailableError: the database cannot be reached; committed batches stay done.
    """
    key = (memory_revision.c.user_id, memory_revision.c.memory_id, memory_revision.c.revision)

    def resealed(row: sa.Row[Any]) -> dict[str, Any]:
        body = codec.revision_body(row)
        sealed = codec.seal_revision_body(body, user_id=row.user_id, memory_id=row.memory_id, revision=row.revision)
        return {"body": sealed, "seal_state": codec.state}

    return _reseal(
        engine,
        codec,
        memory_revision,
        key=key,
        after=lambda row: sa.tuple_(*key) > sa.tuple_(*(sa.literal(row._mapping[column]) for column in key)),
        resealed=resealed,
        name=lambda row: f"revision {row.revision} of memory {row.memory_id}",
        batch_size=batch_size,
    )


def _reseal(
    engine: sa.Engine,
    codec: RowCodec,
    table: sa.Table,
    *,
    key: Sequence[sa.Column[Any]],
    after: Callable[[sa.Row[Any]], sa.ColumnElement[bool]],
    resealed: Callable[[sa.Row[Any]], dict[str, Any]],
    name: Callable[[sa.Row[Any]], str],
    batch_size: int,
) -> ResealReport:
    """The walk both re-seals share: stale rows in key order, a batch a transaction, each row written back only
    while its seal state is still the one read (a concurrent writer's newer row is left alone)."""
    writer = for_writing(engine)
    stale = table.c.seal_state.is_distinct_from(codec.state)
    last: sa.Row[Any] | None = None
    written = broken = 0
    while True:
        with unavailable_on_driver_error("reindex"), writer.begin() as connection:
            walk = stale if last is None else sa.and_(stale, after(last))
            rows = connection.execute(sa.select(table).where(walk).order_by(*key).limit(batch_size)).all()
            if not rows:
                return ResealReport(resealed=written, broken=broken)
            for row in rows:
                try:
                    values = resealed(row)
                except BrokenSealError as error:
                    _log.warning("%s does not open (%s): not re-sealed", name(row), error)
                    broken += 1
                    continue
                this_row = [column == row._mapping[column] for column in key]
                written += connection.execute(
                    table.update()
                    .where(*this_row, table.c.seal_state.is_not_distinct_from(row.seal_state))
                    .values(**values)
                ).rowcount
        last = rows[-1]
