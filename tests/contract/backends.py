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

__all__ = ["FACTORIES", "Backend", "BackendFactory", "InMemoryFactory", "Registration", "on_kinds_with"]


#: The ports besides the store and search whose contracts run on a backend kind (`on_kinds_with`). A kind
#: lists a port when it brings its own implementation of it: a sealed or hybrid twin keeps tokens, panel
#: sessions, the unit of work and purge runs exactly as its plain kind does (hashes and ids, no sealed
#: text), so those contracts run once per implementation; its bulk writes seal or embed, so that one runs
#: on it. Vectors exist only with hybrid search (whose contract purges too); a Spider head cannot purge
#: (docs/operations.md).
PLAIN = frozenset({"token_store", "panel_sessions", "unit_of_work", "purge_store", "bulk_writer"})
SEALED = frozenset({"bulk_writer"})
HYBRID = frozenset({"vectors", "bulk_writer"})
SPIDER = frozenset({"token_store", "panel_sessions", "unit_of_work", "bulk_writer"})


@attrs.frozen
class Registration:
    """How to build one kind's factory, the pytest marks its tests carry (e.g. `mysql`), and the ports whose
    contracts it runs besides the store's and the search engine's (see `PLAIN`)."""

    make: Callable[[], BackendFactory]
    marks: tuple[pytest.MarkDecorator, ...] = ()
    ports: frozenset[str] = PLAIN


#: Every backend kind the contract suite runs against. Adapters add themselves here.
FACTORIES: dict[str, Registration] = {
    "memory": Registration(InMemoryFactory),
    # Hybrid search (BM25 fused with vectors), with a tiny deterministic embedder: same contract, same scores.
    "memory-hybrid": Registration(lambda: InMemoryFactory(_test_embedder()), ports=HYBRID),
    "sqlite-hybrid": Registration(lambda: _sql_factory("sqlite", hybrid=True), ports=HYBRID),
    "sqlite-sealed-hybrid": Registration(lambda: _sql_factory("sqlite", sealed=True, hybrid=True), ports=HYBRID),
    "mysql-hybrid": Registration(lambda: _sql_factory("mysql", hybrid=True), marks=(pytest.mark.mysql,), ports=HYBRID),
    "sqlite": Registration(lambda: _sql_factory("sqlite")),
    "mysql": Registration(lambda: _sql_factory("mysql"), marks=(pytest.mark.mysql,)),
    # Encryption at rest: sealed text and the blind index must return exactly what plaintext does.
    "sqlite-sealed": Registration(lambda: _sql_factory("sqlite", sealed=True), ports=SEALED),
    "mysql-sealed": Registration(lambda: _sql_factory("mysql", sealed=True), marks=(pytest.mark.mysql,), ports=SEALED),
    # A Spider head over three data nodes, sharded by user_id (the cluster tier: -m cluster).
    "spider": Registration(lambda: _spider_factory(), marks=(pytest.mark.cluster,), ports=SPIDER),
}


def on_kinds_with(port: str) -> pytest.MarkDecorator:
    """Runs a contract class of `port` on the backend kinds that list it, in place of every kind."""
    kinds = [pytest.param(name, marks=entry.marks, id=name) for name, entry in FACTORIES.items() if port in entry.ports]
    return pytest.mark.parametrize("backend_factory", kinds, indirect=True, scope="session")


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
