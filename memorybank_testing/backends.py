"""What the contract suite runs against: a store, its search engine and the operators' controls.

A host implements `BackendFactory` for its own `MemoryStore` and `SearchEngine`; the suite asks it
for a fresh, empty backend before each test.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

import attrs

from memorybank_core import ControlStore, Embedder, InMemoryControlStore, InMemoryStore, MemoryStore, SearchEngine
from memorybank_search import InMemorySearch, InMemoryVectors, OwnerIndexer


@attrs.frozen
class Backend:
    """A store, the search engine that reads it, and the operators' controls beside them."""

    store: MemoryStore
    search_engine: SearchEngine
    controls: ControlStore = attrs.field(factory=InMemoryControlStore)


class BackendFactory(Protocol):
    """Makes empty backends of one kind (it may hold a database for the whole test session)."""

    @abstractmethod
    def fresh(self) -> Backend:
        """An empty backend, isolated from every earlier one."""

    @abstractmethod
    def close(self) -> None:
        """Release what the factory holds (connections, databases)."""

    def reference(self) -> BackendFactory:
        """The in-memory backend this one must rank exactly like: the lexical reference, unless overridden
        (a hybrid engine's reference is the in-memory hybrid engine with the same embedder)."""
        return InMemoryFactory()


class InMemoryFactory(BackendFactory):
    """The in-memory reference adapters: the model the ranking contract compares every engine with;
    with an `embedder`, the reference hybrid search."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder

    def fresh(self) -> Backend:
        store = InMemoryStore()
        lexical = InMemorySearch(store, OwnerIndexer())
        if self.embedder is None:
            return Backend(store=store, search_engine=lexical)
        from memorybank_search.hybrid import HybridSearch  # the semantic extra (numpy), only here

        return Backend(
            store=store, search_engine=HybridSearch(lexical, InMemoryVectors(store, self.embedder), self.embedder)
        )

    def reference(self) -> BackendFactory:
        return InMemoryFactory(self.embedder)

    def close(self) -> None:
        pass
