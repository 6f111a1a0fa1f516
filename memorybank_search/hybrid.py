"""`HybridSearch`: the `SearchEngine` that fuses an owner's BM25 with their memories' vectors.

It wraps any lexical engine (the SQL ones, the in-memory reference) and a `VectorStore`, embeds
the query with the same `Embedder` that wrote the vectors, scores it exactly against every one of
the owner's vectors (no approximate index shared between owners: it would mix them), and ranks
with `memorybank_search.fusion`. numpy does the dot products (about 0.1 ms for 1,000 vectors), so
this module needs the `semantic` extra; nothing else in `memorybank_search` imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memorybank_core import Embedder, Embedding, PackedVectors, SearchEngine, SearchHit, SearchHits, VectorStore
from memorybank_core.embeddings import SCALE_SIZE
from memorybank_search.analyzer import TextAnalyzer
from memorybank_search.candidates import DEFAULT_CANDIDATE_LIMIT
from memorybank_search.fusion import Fusion


class HybridSearch(SearchEngine):
    """BM25 (`lexical`) and cosine (`vectors`, `embedder`) over one owner's memories, fused per owner.

    A query with no searchable word (only punctuation, say) finds nothing, as lexical search does.
    """

    similar_min_share = 0.96
    """The share of a new memory's own score another needs to be named `similar` on its save
    (`MemoryBank.similar`). Hybrid scores are a logistic of the standing (`fusion`), so every memory the
    inclusion rule returns scores near the new memory's own: the share sits near 1. benchmarks/similar.py, with
    `similar_min_cosine`: 62 % of replaced memories found, 1 of 120 unrelated saves flagged (docs/search.md)."""

    def __init__(
        self,
        lexical: SearchEngine,
        vectors: VectorStore,
        embedder: Embedder,
        *,
        fusion: Fusion | None = None,
        candidate_limit: int = DEFAULT_CANDIDATE_LIMIT,
    ) -> None:
        self.lexical = lexical
        self._vectors = vectors
        self.embedder = embedder
        self._fusion = fusion or Fusion()
        self._candidate_limit = candidate_limit
        self._analyzer = TextAnalyzer()

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        return self._ranked(user_id, query, limit, like=None)

    similar_min_cosine = 0.5
    """The cosine a memory's vector needs with the new memory's to be found by `search_like` (a save's `similar`):
    standing and the share above are relative to the bank, so in a bank of hundreds of memories some unrelated one
    always stands out as far as a replaced one does; a cosine is the two memories' own (ADR 0049).
    benchmarks/similar.py: replaced memories' cosine with their replacement has a median of 0.59; an unrelated
    save's nearest memory reaches 0.5 in 1-8 of 120 saves, in banks of 60 to 1,460 memories."""

    def search_like(self, *, user_id: str, memory_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        """`search`, with the stored vector of `memory_id` standing for the query's, and only the memories whose vector
        is at least `similar_min_cosine` from it (or that have none yet): a save's `similar` reuses the vector its save
        just embedded instead of embedding the same words again. A memory without one yet (its vector is written
        after the save, ADR 0045, or by the background fill) is compared by its words only, as every search compares
        it until then."""
        return self._ranked(user_id, query, limit, like=memory_id)

    def _ranked(self, user_id: str, query: str, limit: int, *, like: str | None) -> Sequence[SearchHit]:
        if not self._analyzer.query_terms(query):
            return SearchHits(candidate_count=0)
        lexical = (
            self.lexical.search(user_id=user_id, query=query, limit=self._candidate_limit)
            if like is None
            # A look-up's lexical side reads what the engine's own look-up reads (ADR 0048: its best candidates).
            else self.lexical.search_like(user_id=user_id, memory_id=like, query=query, limit=self._candidate_limit)
        )
        stored = self._vectors.vectors(user_id=user_id, model_id=self.embedder.model_id)
        if not stored or (like is not None and like not in stored):
            return self._fusion.rank(lexical, {}, limit)
        vector = stored[like] if like is not None else self.embedder.embed_query(query)
        similarities = cosines(vector, stored)
        if like is None:
            return self._fusion.rank(lexical, similarities, limit, centrality=centralities(stored))
        ranked = self._fusion.rank(
            lexical, similarities, len(similarities) + len(lexical), centrality=centralities(stored)
        )
        alike = [hit for hit in ranked if similarities.get(hit.memory_id, 1.0) >= self.similar_min_cosine]
        return SearchHits(alike[:limit], candidate_count=ranked.candidate_count)


def cosines(query: Embedding, stored: Mapping[str, Embedding]) -> dict[str, float]:
    """The cosine of `query` with each stored vector (all unit length, so their dot products), by memory id.

    The int8 dot products are computed in integers (exact, so every engine gets the very same scores),
    then scaled.
    """
    ids, matrix, scales = _rows(stored, query.dimension)
    if not ids:
        return {}
    products = matrix.astype(np.int32) @ np.frombuffer(query.values, dtype=np.int8).astype(np.int32)
    return dict(zip(ids, (products * (scales * query.scale)).tolist(), strict=True))


def centralities(stored: Mapping[str, Embedding]) -> dict[str, float]:
    """Each stored vector's mean cosine with the owner's *other* vectors, by memory id (0 for a lone vector).

    A memory close to the bank's centre (a phrasing many of the owner's memories share) scores high against
    any question; `Fusion` discounts it. The rows are summed in id order, so every engine, whatever order its
    storage returns them in, gets the very same numbers.
    """
    dimension = next(iter(stored.values())).dimension if stored else 0
    ids, matrix, scales = _rows(stored, dimension)
    count = len(ids)
    if count < 2:
        return dict.fromkeys(ids, 0.0)
    order = np.argsort(np.array(ids))
    values = matrix[order].astype(np.float64)  # small integers: every product below is exact until summed
    weights = scales[order]
    total = weights @ values
    own = np.einsum("ij,ij->i", values, values) * weights * weights
    leave_one_out = (weights * (values @ total) - own) / (count - 1)
    return dict(zip([ids[index] for index in order.tolist()], leave_one_out.tolist(), strict=True))


def _rows(stored: Mapping[str, Embedding], dimension: int) -> tuple[list[str], Any, Any]:
    """The ids, int8 matrix and float64 scales of the stored vectors of `dimension`."""
    if isinstance(stored, PackedVectors):
        if stored.dimension != dimension:
            return [], None, None
        # The stored records viewed in place: a float32 scale, then the int8 values, per row.
        record = np.dtype([("scale", "<f4"), ("values", np.int8, (dimension,))])
        assert record.itemsize == SCALE_SIZE + dimension  # noqa: S101 - the stored format, packed
        rows = np.frombuffer(stored.records, dtype=record)
        return list(stored.ids), rows["values"], rows["scale"].astype(np.float64)
    ids = [memory_id for memory_id, vector in stored.items() if vector.dimension == dimension]
    if not ids:
        return [], None, None
    matrix = np.frombuffer(b"".join(stored[memory_id].values for memory_id in ids), dtype=np.int8)
    scales = np.array([stored[memory_id].scale for memory_id in ids], dtype=np.float64)
    return ids, matrix.reshape(len(ids), dimension), scales
