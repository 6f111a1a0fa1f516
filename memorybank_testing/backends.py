"""What the contract suite runs against: a store, its search engine, and the other storage ports beside them.

A host implements `BackendFactory` for its own `MemoryStore` and `SearchEngine` (and whichever other
ports it brings); the suite asks it for a fresh, empty backend before each test.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Protocol, TypeVar

import attrs

from memorybank_core import (
    BulkMemoryWriter,
    ControlStore,
    Embedder,
    InMemoryControlStore,
    InMemoryPanelSessionStore,
    InMemoryStore,
    InMemoryTokenStore,
    MemoryOwners,
    MemoryStore,
    NoUnitOfWork,
    PanelSessionStore,
    RevisionEraser,
    SearchEngine,
    TokenStore,
    UnitOfWork,
    VectorStore,
)
from memorybank_core.inmemory_purge import InMemoryPurgeStore
from memorybank_core.offboarding import PurgeStore
from memorybank_search import InMemorySearch, InMemoryVectors, OwnerIndexer

_Port = TypeVar("_Port")
_Found = TypeVar("_Found")


@attrs.frozen
class Backend:
    """The storage ports of one fresh, empty storage: they share it (a purge removes what the store saved).

    `store` and `search_engine` are what every host brings; each other port is None when the host brings
    none, and a contract of that port then refuses to run (`require`) rather than pass on nothing.
    """

    store: MemoryStore
    search_engine: SearchEngine
    controls: ControlStore = attrs.field(factory=InMemoryControlStore)
    unit_of_work: UnitOfWork = attrs.field(factory=NoUnitOfWork)
    token_store: TokenStore | None = None
    panel_sessions: PanelSessionStore | None = None
    purge_store: PurgeStore | None = None
    bulk_writer: BulkMemoryWriter | None = None
    """What `memorybank import` writes with: the store itself, usually."""
    memory_owners: MemoryOwners | None = None
    revision_eraser: RevisionEraser | None = None
    """What `memorybank secrets scan --drop-revisions` deletes kept versions with: the store itself, usually."""
    vectors: VectorStore | None = None
    """The vectors hybrid search reads, written by `store` with `embedder`'s model."""
    embedder: Embedder | None = None

    def require(self, port: _Port | None, name: str) -> _Port:
        """`port`, or a clear failure naming it: a contract of a port the backend does not bring cannot pass."""
        if port is None:
            raise LookupError(f"this backend brings no {name}: give it to Backend({name}=...) or drop its contract")
        return port


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

    #: Seconds a committed memory may take to be found by its words from another connection: 0 where the search
    #: index is written in the save's transaction (SQLite, in memory). InnoDB adds a committed row's words to its
    #: full-text cache moments after the commit returned (docs/storage.md): a contract asking right after a save
    #: asks again until then (`settled`).
    index_lag: float = 0.0


def settled(look: Callable[[], _Found], done: Callable[[_Found], bool], within: float) -> _Found:
    """`look()`, then again every few milliseconds until `done` holds of what it found or `within` seconds passed;
    what it found last. A backend whose index shows a commit moments later is judged on what it shows then, and one
    that never shows it still fails."""
    deadline = time.monotonic() + within
    found = look()
    while not done(found) and time.monotonic() < deadline:
        time.sleep(0.005)
        found = look()
    return found


class InMemoryFactory(BackendFactory):
    """The in-memory reference adapters: the model the ranking contract compares every engine with;
    with an `embedder`, the reference hybrid search."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder

    def fresh(self) -> Backend:
        store, tokens, sessions = InMemoryStore(), InMemoryTokenStore(), InMemoryPanelSessionStore()
        lexical = InMemorySearch(store, OwnerIndexer())
        backend = Backend(
            store=store,
            search_engine=lexical,
            token_store=tokens,
            panel_sessions=sessions,
            purge_store=InMemoryPurgeStore(store, tokens, sessions),
            bulk_writer=store,
            memory_owners=store,
            revision_eraser=store,
        )
        if self.embedder is None:
            return backend
        from memorybank_search.hybrid import HybridSearch  # the semantic extra (numpy), only here

        vectors = InMemoryVectors(store, self.embedder)
        hybrid = HybridSearch(lexical, vectors, self.embedder)
        return attrs.evolve(backend, search_engine=hybrid, vectors=vectors, embedder=self.embedder)

    def reference(self) -> BackendFactory:
        return InMemoryFactory(self.embedder)

    def close(self) -> None:
        pass
