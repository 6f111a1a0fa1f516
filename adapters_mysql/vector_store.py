"""`SqlVectorStore`: one owner's memory vectors for hybrid search, read in one owner-scoped statement.

`memory_vector` is keyed by (user_id, memory_id): the read is a primary-key range of the owner's
rows (one Spider data node), never another owner's. A sealed vector that does not open is logged
by memory id and left out: that memory is then found by its words only.

The read is hybrid search's hot path (a quarter of a search at 1,000 memories): it runs on the DBAPI
cursor (`CompiledRead`, ADR 0029) and answers `PackedVectors`, the rows' stored bytes joined, which
hybrid search scores as one matrix; sealed rows are still opened and authenticated one by one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import sqlalchemy as sa

from adapters_mysql.compiled_reads import CompiledRead, PlannedRead
from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.owner import owned_vectors, owner_parameter
from adapters_mysql.schema import memory_vector
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.unit_of_work import reading
from memorybank_core import BrokenSealError, Embedding, PackedVectors, VectorStore
from memorybank_core.embeddings import SCALE_SIZE

_log = logging.getLogger("memorybank.storage")

_OWNER_VECTORS = CompiledRead(
    sa.select(memory_vector).where(owned_vectors(owner_parameter()), memory_vector.c.model == sa.bindparam("model"))
)


class SqlVectorStore(VectorStore):
    """The `VectorStore` port over `memory_vector`, opening sealed vectors with the storage's codec."""

    def __init__(self, engine: sa.Engine, codec: RowCodec) -> None:
        self._engine = engine
        self._codec = codec

    def read_of(self, *, user_id: str, model_id: str) -> PlannedRead:
        """`vectors`' read, to send ahead in another round trip (a lexical search's, a save's: ADR 0042)."""
        return PlannedRead(_OWNER_VECTORS, {"owner": user_id, "model": model_id})

    def vectors(self, *, user_id: str, model_id: str) -> Mapping[str, Embedding]:
        with unavailable_on_driver_error("search"), reading(self._engine) as connection:
            # The rows, or those read ahead with the owner's search candidates (`read_of`).
            planned = self.read_of(user_id=user_id, model_id=model_id)
            rows = planned.read.all(connection, planned.parameters)
        ids: list[str] = []
        records: list[bytes] = []
        vector = self._codec.vector_bytes
        for row in rows:
            try:
                records.append(vector(row))
            except BrokenSealError as error:
                _log.warning(
                    "the vector of memory %s does not open (%s): found by its words only", row.memory_id, error
                )
                continue
            ids.append(row.memory_id)
        if not records:
            return {}
        size = len(records[0])
        if any(len(record) != size for record in records):
            # Vectors of several dimensions under one model (never written so): each as its own.
            return {memory_id: Embedding.from_bytes(record) for memory_id, record in zip(ids, records, strict=True)}
        return PackedVectors(ids, b"".join(records), size - SCALE_SIZE)
