"""What the contract suite runs against: a store, its search engine and the operators' controls.

A host implements `BackendFactory` for its own `MemoryStore` and `SearchEngine`; the suite asks it
for a fresh, empty backend before each test.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

import attrs

from memorybank_core import ControlStore, InMemoryControlStore, InMemoryStore, MemoryStore, SearchEngine
from memorybank_search import InMemorySearch, OwnerIndexer


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


class InMemoryFactory(BackendFactory):
    """The in-memory reference adapters: the model the ranking contract compares every engine with."""

    def fresh(self) -> Backend:
        store = InMemoryStore()
        return Backend(store=store, search_engine=InMemorySearch(store, OwnerIndexer()))

    def close(self) -> None:
        pass
