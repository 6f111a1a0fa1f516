"""Backend factories for the contract suite.

A factory is made once per test session (it may create a database); `fresh()`
gives each test an empty backend. Every adapter registers one factory here and
must then pass the whole suite unchanged.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Protocol

import attrs
import pytest

from memorybank_core import (
    ControlStore,
    Embedder,
    InMemoryControlStore,
    InMemoryStore,
    MemoryStore,
    SearchEngine,
)
from memorybank_search import InMemorySearch, InMemoryVectors, OwnerIndexer


@attrs.frozen
class Backend:
    """A store, the search engine that reads it, and the operators' controls beside them."""

    store: MemoryStore
    search_engine: SearchEngine
    controls: ControlStore = attrs.field(factory=InMemoryControlStore)


class BackendFactory(Protocol):
    """Makes empty backends of one kind."""

    @abstractmethod
    def fresh(self) -> Backend:
        """An empty backend, isolated from every earlier one."""

    @abstractmethod
    def close(self) -> None:
        """Release what the factory holds (connections, databases)."""

    def reference(self) -> BackendFactory:
        """The in-memory backend this one must rank exactly like: the lexical reference, unless hybrid."""
        return InMemoryFactory()


class InMemoryFactory(BackendFactory):
    """The in-memory reference adapter; with an `embedder`, its hybrid search."""

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


@attrs.frozen
class Registration:
    """How to build one kind's factory, and the pytest marks its tests carry (e.g. `mysql`)."""

    make: Callable[[], BackendFactory]
    marks: tuple[pytest.MarkDecorator, ...] = ()


#: Every backend kind the contract suite runs against. Adapters add themselves here.
FACTORIES: dict[str, Registration] = {
    "memory": Registration(InMemoryFactory),
    # Hybrid search (BM25 fused with vectors), with a tiny deterministic embedder: same contract, same scores.
    "memory-hybrid": Registration(lambda: InMemoryFactory(_test_embedder())),
    "sqlite-hybrid": Registration(lambda: _sql_factory("sqlite", hybrid=True)),
    "sqlite-sealed-hybrid": Registration(lambda: _sql_factory("sqlite", sealed=True, hybrid=True)),
    "mysql-hybrid": Registration(lambda: _sql_factory("mysql", hybrid=True), marks=(pytest.mark.mysql,)),
    "sqlite": Registration(lambda: _sql_factory("sqlite")),
    "mysql": Registration(lambda: _sql_factory("mysql"), marks=(pytest.mark.mysql,)),
    # Encryption at rest: sealed text and the blind index must return exactly what plaintext does.
    "sqlite-sealed": Registration(lambda: _sql_factory("sqlite", sealed=True)),
    "mysql-sealed": Registration(lambda: _sql_factory("mysql", sealed=True), marks=(pytest.mark.mysql,)),
    # A Spider head over three data nodes, sharded by user_id (the cluster tier: -m cluster).
    "spider": Registration(lambda: _spider_factory(), marks=(pytest.mark.cluster,)),
}


def _spider_factory() -> BackendFactory:
    from tests.clusters.spider_deployment import SpiderFactory  # imported on use, as below

    return SpiderFactory()


def _test_embedder() -> Embedder:
    from tests.contract.embedders import HashedTermsEmbedder

    return HashedTermsEmbedder()


def _sql_factory(kind: str, *, sealed: bool = False, hybrid: bool = False) -> BackendFactory:
    # Imported on use: the SQL factories import this module for Backend.
    from adapters_crypto import AesGcmSealer, new_key_ring
    from tests.sql.backends import MysqlFactory, SqliteFactory

    sealer = AesGcmSealer(new_key_ring()) if sealed else None
    embedder = _test_embedder() if hybrid else None
    if kind == "sqlite":
        return SqliteFactory(sealer=sealer, embedder=embedder)
    return MysqlFactory(sealer=sealer, embedder=embedder)
