"""The embedding ports: turning texts into vectors, and reading one owner's stored vectors.

Hybrid search (memorybank_search.hybrid) fuses a user's BM25 scores with the cosine of the query's
vector against each of the user's memories' vectors. The core holds only the shapes: an
`Embedder` (a local model, adapters_embedding) and a `VectorStore` (storage, owner-scoped).

A vector is stored as an `Embedding`: one signed byte per dimension plus one scale, so the
vector is `values[i] * scale`. The embedders return unit-length vectors, so the dot product of two
of them is their cosine; int8 changes a search's recall by at most 0.003 (docs/search.md).
"""

from __future__ import annotations

import struct
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

import attrs

#: The scale's encoding in front of the values: one little-endian float32.
_SCALE = struct.Struct("<f")
SCALE_SIZE = _SCALE.size
"""The bytes of the scale in front of a stored embedding's values."""
_INT8_MAX = 127


def _float32(value: float) -> float:
    """`value` as the float32 it is stored as, so a stored and a fresh embedding score the same."""
    result: float = _SCALE.unpack(_SCALE.pack(value))[0]
    return result


@attrs.frozen
class Embedding:
    """A text's vector as int8 values and one scale: component i is `values[i] * scale` (signed bytes)."""

    values: bytes = attrs.field(repr=lambda values: f"<{len(values)} int8>")
    scale: float = attrs.field(converter=_float32)

    @property
    def dimension(self) -> int:
        """How many components the vector has."""
        return len(self.values)

    def to_bytes(self) -> bytes:
        """The stored form: the scale (float32, little-endian), then the values."""
        return _SCALE.pack(self.scale) + self.values

    @classmethod
    def from_bytes(cls, data: bytes) -> Embedding:
        """What `to_bytes` wrote.

        Raises:
            ValueError: `data` is too short to hold a scale and one value.
        """
        if len(data) <= SCALE_SIZE:
            raise ValueError("a stored embedding holds a scale and at least one value")
        (scale,) = _SCALE.unpack_from(data)
        return cls(bytes(data[SCALE_SIZE:]), scale)

    @classmethod
    def quantize(cls, vector: Sequence[float]) -> Embedding:
        """`vector` as int8: the largest component in magnitude becomes ±127 (an all-zero vector stays zero)."""
        largest = max((abs(component) for component in vector), default=0.0)
        if largest == 0.0:
            return cls(bytes(len(vector)), 0.0)
        scale = largest / _INT8_MAX
        values = bytes(round(component / scale) & 0xFF for component in vector)
        return cls(values, scale)


class PackedVectors(Mapping[str, Embedding]):
    """One owner's vectors of one dimension as a `Mapping[str, Embedding]` kept in their stored form.

    `records` joins each vector's `Embedding.to_bytes()` in the order of `ids` (a scale, then
    `dimension` int8 values, per record), so a scorer can view them all as one matrix without an
    object per vector; `Embedding`s are built only when an item is read.
    """

    __slots__ = ("_index", "dimension", "ids", "records")

    def __init__(self, ids: Sequence[str], records: bytes, dimension: int) -> None:
        """Raises ValueError when `records` is not one record of `dimension` values per id."""
        if dimension < 1 or len(records) != len(ids) * (SCALE_SIZE + dimension):
            raise ValueError("packed vectors hold one record of a scale and `dimension` values per id")
        self.ids: tuple[str, ...] = tuple(ids)
        self.records = records
        self.dimension = dimension
        self._index = {memory_id: position for position, memory_id in enumerate(self.ids)}
        if len(self._index) != len(self.ids):
            raise ValueError("packed vectors hold each memory id once")

    @property
    def record_size(self) -> int:
        """The bytes of one record: the float32 scale and the values."""
        return SCALE_SIZE + self.dimension

    def __getitem__(self, memory_id: str) -> Embedding:
        start = self._index[memory_id] * self.record_size
        return Embedding.from_bytes(self.records[start : start + self.record_size])

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._index

    def __repr__(self) -> str:
        return f"PackedVectors(<{len(self.ids)} vectors of {self.dimension} int8>)"


class Embedder(Protocol):
    """A sentence-embedding model: texts in, unit-length vectors out, the same text always the same vector."""

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the model (and its pooling): vectors of different models are never compared."""

    @property
    @abstractmethod
    def dimension(self) -> int:
        """How many components each vector has."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        """One unit-length vector per text, in order (a text with nothing to embed gives the zero vector)."""

    def embed_query(self, query: str) -> Embedding:
        """The vector a search compares memories with. A model may read less of a query than of a memory (a
        query is a question, not a paragraph), so a long query costs no more than a search may (ADR 0045). By
        default, `embed`."""
        return self.embed([query])[0]

    def token_count(self, text: str) -> int:
        """How many of the model's tokens `embed` reads of `text`, at most the model's bound: what embedding it
        costs, counted without embedding it (ADR 0045). By default its words, an estimate for a model that reads
        whole words."""
        return len(text.split())


class VectorStore(Protocol):
    """Storage of memories' vectors, always scoped to one owner."""

    @abstractmethod
    def vectors(self, *, user_id: str, model_id: str) -> Mapping[str, Embedding]:
        """Every vector of the owner's memories written by `model_id`, keyed by memory id.

        A store may answer with `PackedVectors` (still this mapping), which hybrid search scores
        without an object per vector. Memories without one (saved before hybrid search was on, not
        yet re-indexed) are absent.

        Raises:
            UnavailableError: storage cannot be reached.
        """
