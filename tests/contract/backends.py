"""The backends memorybank ships, registered for the contract suite (memorybank_testing).

A factory is made once per test session (it may create a database); `fresh()`
gives each test an empty backend. Every adapter registers one factory here and
must then pass the whole suite unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest

from memorybank_core import Embedder

# The shipped contract suite's names, re-exported for the adapter tests that build backends.
from memorybank_testing.backends import Backend, BackendFactory, InMemoryFactory

__all__ = ["FACTORIES", "Backend", "BackendFactory", "InMemoryFactory", "Registration"]


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
