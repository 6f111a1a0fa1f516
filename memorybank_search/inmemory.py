"""`InMemorySearch`: the reference search engine, over an `InMemoryStore`, ranking exactly as SQL does.

It indexes each memory with the same `OwnerIndexer` the SQL stores write with, takes as
candidates the owner's memories holding any query token (what a full-text index returns), and
ranks them with the same `rank_candidates`: same ids, same scores as the SQL engines.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from memorybank_core import Embedder, Embedding, InMemoryStore, SearchEngine, SearchHit, SearchHits, VectorStore
from memorybank_search.candidates import Candidate, rank_candidates
from memorybank_search.indexer import OwnerIndexer, SearchDocument, embedding_text


class InMemorySearch(SearchEngine):
    """BM25 over one owner's memories (content, tags and snippets), with that owner's own statistics."""

    def __init__(self, store: InMemoryStore, indexer: OwnerIndexer) -> None:
        self._store = store
        self._indexer = indexer
        # Memories never change once saved: each one's document is computed once, per owner and id,
        # and a search keeps only the owner's current memories (deleted ones leave the cache).
        self._lock = threading.Lock()
        self._documents: dict[str, dict[str, SearchDocument]] = {}

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        groups = self._indexer.query_token_groups(user_id, query)
        tokens = list(dict.fromkeys(token for group in groups for token in group))
        if not tokens:
            return SearchHits(candidate_count=0)
        with self._lock:
            known = self._documents.get(user_id, {})
        documents = {
            memory_id: known.get(memory_id) or self._indexer.document(memory)
            for memory_id, memory in self._store.owned(user_id).items()
        }
        with self._lock:
            self._documents[user_id] = documents
        wanted = set(tokens)
        candidates = [
            Candidate(memory_id, document.search_terms, document.doc_length)
            for memory_id, document in documents.items()
            if wanted.intersection(document.search_terms.split())
        ]
        return rank_candidates(
            tokens,
            candidates,
            document_count=len(documents),
            total_length=sum(document.doc_length for document in documents.values()),
            document_frequency=None,
            limit=limit,
            groups=groups,
        )


class InMemoryVectors(VectorStore):
    """The vectors of an `InMemoryStore`'s memories, embedded on first use and kept per owner and id."""

    def __init__(self, store: InMemoryStore, embedder: Embedder) -> None:
        self._store = store
        self._embedder = embedder
        self._lock = threading.Lock()
        self._vectors: dict[str, dict[str, Embedding]] = {}

    def vectors(self, *, user_id: str, model_id: str) -> Mapping[str, Embedding]:
        if model_id != self._embedder.model_id:
            return {}
        owned = self._store.owned(user_id)
        with self._lock:
            known = self._vectors.get(user_id, {})
        missing = [memory_id for memory_id in owned if memory_id not in known]
        fresh = dict(zip(missing, self._embedder.embed([embedding_text(owned[i]) for i in missing]), strict=True))
        # Deleted memories leave the cache with this owner's next search.
        current = {memory_id: known.get(memory_id) or fresh[memory_id] for memory_id in owned}
        with self._lock:
            self._vectors[user_id] = current
        return current
