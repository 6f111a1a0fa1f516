"""SQL backend factories: SQLite (fresh-install path) and MySQL (migrate path).

Each factory builds its database once per session, through the composition root (`bootstrap.build`), so the
storage is the one `memorybank serve` opens; `fresh()` empties the tables. The contract suite and the adapter
tests share them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from adapters_mysql import SqlStorage
from adapters_mysql.schema import TABLES
from memorybank import bootstrap
from memorybank.settings import Settings
from memorybank_core import Embedder, MemoryBank, Sealer
from memorybank_testing import start_clock
from tests.contract.backends import Backend, BackendFactory, InMemoryFactory
from tests.mysql_server import ThrowawayDatabase


def storage_at(url: str, sealer: Sealer | None = None, *, embedder: Embedder | None = None) -> SqlStorage:
    """Storage at `url` as the composition root opens it (one indexer, the sealer's blind index if sealed, hybrid
    with `embedder`), with no schema check: `initialize`, `migrate` or `check_ready` it next, and close it."""
    return bootstrap.build(Settings.for_database(url), migrating=True, sealer=sealer, embedder=embedder).storage


def services_on(storage: SqlStorage, settings: Settings | None = None, **overrides: Any) -> bootstrap.Services:
    """The services over `storage`'s ports as the composition root wires them, on the suite's clock; `overrides`
    are `bootstrap.build`'s (e.g. `store=` a wrapper, `events=`)."""
    built = bootstrap.build(
        settings, ports=bootstrap.Ports.of_database(storage), **{"clock": start_clock(), **overrides}
    )
    return built.services  # it opened nothing: `storage` is the caller's to close


def bank_on(storage: SqlStorage, settings: Settings | None = None, **overrides: Any) -> MemoryBank:
    """The bank of `services_on`."""
    return services_on(storage, settings, **overrides).bank


def url_of(storage: SqlStorage) -> str:
    """The URL `storage` was opened at, password included: to open the same database a second time."""
    return storage.engine.url.render_as_string(hide_password=False)


def backend_of(storage: SqlStorage, *, purges: bool = True) -> Backend:
    """Every storage port of `storage`, for the contract suite (`purges=False`: a Spider head, which cannot)."""
    return Backend(
        store=storage.store,
        search_engine=storage.search_engine,
        controls=storage.controls,
        unit_of_work=storage.unit_of_work,
        token_store=storage.token_store,
        panel_sessions=storage.panel_sessions,
        purge_store=storage.purge_store if purges else None,
        bulk_writer=storage.store,
        memory_owners=storage,
        revision_eraser=storage.store,
        vectors=storage.vectors if storage.embedder is not None else None,
        embedder=storage.embedder,
    )


class SqliteFactory(BackendFactory):
    """A SQLite file in a temporary directory, created by the fresh-install path (`initialize`)."""

    def __init__(self, *, sealer: Sealer | None = None, embedder: Embedder | None = None) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix="memorybank-test-")
        self.path = Path(self._directory.name) / "memorybank.sqlite3"
        self.url = f"sqlite:///{self.path}"
        self.storage: SqlStorage = storage_at(self.url, sealer, embedder=embedder)
        self.storage.initialize()
        self.embedder = embedder

    def fresh(self) -> Backend:
        with self.storage.engine.begin() as connection:
            # Deleting through the memory table fires the FTS5 triggers, so the index empties too.
            for table in reversed(TABLES):
                connection.execute(table.delete())
        return backend_of(self.storage)

    def reference(self) -> BackendFactory:
        return InMemoryFactory(self.embedder)

    def close(self) -> None:
        self.storage.close()
        self._directory.cleanup()


class MysqlFactory(BackendFactory):
    """A throwaway MySQL/MariaDB database, created by the migrate path (`migrate`)."""

    #: InnoDB shows a committed row's words within a few milliseconds (docs/storage.md); a second is the wait's bound.
    index_lag = 1.0

    def __init__(self, *, sealer: Sealer | None = None, embedder: Embedder | None = None) -> None:
        self._database = ThrowawayDatabase()
        self.url = self._database.url
        self.embedder = embedder
        try:
            self.storage: SqlStorage = storage_at(self.url, sealer, embedder=embedder)
            try:
                self.storage.migrate()
            except BaseException:
                self.storage.close()
                raise
        except BaseException:
            # A failed setup must not leave its database behind on the shared server.
            self._database.drop()
            raise

    def fresh(self) -> Backend:
        with self.storage.engine.begin() as connection:
            # TRUNCATE rather than DELETE: it also resets the FULLTEXT statistics (deleted rows
            # would otherwise keep counting until OPTIMIZE TABLE), so each test ranks alone.
            for table in TABLES:
                connection.execute(sa.text(f"TRUNCATE TABLE {table.name}"))
        return backend_of(self.storage)

    def reference(self) -> BackendFactory:
        return InMemoryFactory(self.embedder)

    def close(self) -> None:
        self.storage.close()
        self._database.drop()
