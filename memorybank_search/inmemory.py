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
        # A memory's document is computed once per version (owner, id and revision), and a search keeps only
        # the owner's memories as they are now (deleted ones and older versions leave the cache).
        self._lock = threading.Lock()
        self._documents: dict[str, dict[tuple[str, int], SearchDocument]] = {}

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        groups = self._indexer.query_token_groups(user_id, query)
        tokens = list(dict.fromkeys(token for group in groups for token in group))
        if not tokens:
            return SearchHits(candidate_count=0)
        with self._lock:
            known = self._documents.get(user_id, {})
        # Retired memories too, as the SQL engines count every row of the owner (their documents are empty).
        versions = {
            (memory_id, memory.revision): known.get((memory_id, memory.revision)) or self._indexer.document(memory)
            for memory_id, memory in self._store.owned(user_id, include_retired=True).items()
        }
        with self._lock:
            self._documents[user_id] = versions
        documents = {memory_id: document for (memory_id, _), document in versions.items()}
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
        self._vectors: dict[str, dict[tuple[str, int], Embedding]] = {}

    def vectors(self, *, user_id: str, model_id: str) -> Mapping[str, Embedding]:
        if model_id != self._embedder.model_id:
            return {}
        # Current memories only: a retired one has no vector, as in SQL storage, so no query finds it.
        owned = {(memory_id, m.revision): m for memory_id, m in self._store.owned(user_id).items()}
        with self._lock:
            known = self._vectors.get(user_id, {})
        missing = [version for version in owned if version not in known]
        fresh = dict(zip(missing, self._embedder.embed([embedding_text(owned[v]) for v in missing]), strict=True))
        # Deleted memories and older versions leave the cache with this owner's next search.
        current = {version: known.get(version) or fresh[version] for version in owned}
        with self._lock:
            self._vectors[user_id] = current
        return {memory_id: vector for (memory_id, _), vector in current.items()}
