"""Fixtures for the SQL adapter tests: a storage of each dialect, and statement capture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from adapters_mysql import SqlStorage
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import MysqlFactory, SqliteFactory

#: Both SQL dialects; the MySQL one needs the server (fails, never skips, under CI=true).
DIALECTS = [pytest.param("sqlite"), pytest.param("mysql", marks=pytest.mark.mysql)]


@pytest.fixture(params=DIALECTS)
def new_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database of the parametrized dialect, dropped after the test."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bank.sqlite3'}"
        return
    database = ThrowawayDatabase()
    yield database.url
    database.drop()


@pytest.fixture(scope="session")
def sqlite_factory() -> Iterator[SqliteFactory]:
    """The session's SQLite database (a file, created by the fresh-install path)."""
    factory = SqliteFactory()
    yield factory
    factory.close()


@pytest.fixture(scope="session")
def mysql_factory() -> Iterator[MysqlFactory]:
    """The session's MySQL database (created by the migrate path). Tests using it carry `mysql`."""
    factory = MysqlFactory()
    yield factory
    factory.close()


@pytest.fixture(params=DIALECTS)
def sql_factory(request: pytest.FixtureRequest) -> SqliteFactory | MysqlFactory:
    """The session database of each dialect in turn."""
    factory: SqliteFactory | MysqlFactory = request.getfixturevalue(f"{request.param}_factory")
    return factory


@pytest.fixture
def sqlite_storage(sqlite_factory: SqliteFactory) -> SqlStorage:
    """The SQLite storage, with empty tables."""
    sqlite_factory.fresh()
    return sqlite_factory.storage


@pytest.fixture
def mysql_storage(mysql_factory: MysqlFactory) -> SqlStorage:
    """The MySQL storage, with empty tables."""
    mysql_factory.fresh()
    return mysql_factory.storage


@pytest.fixture
def storage(sql_factory: SqliteFactory | MysqlFactory) -> SqlStorage:
    """The session's storage of the parametrized dialect, with empty tables."""
    sql_factory.fresh()
    return sql_factory.storage


@attrs.frozen
class Statement:
    """One statement as the driver received it."""

    sql: str
    parameters: Any
    executemany: bool

    def parameter_rows(self) -> list[Any]:
        """The bound values, one sequence or mapping per executed row."""
        return list(self.parameters) if self.executemany else [self.parameters]

    def binds(self, value: object) -> bool:
        """True when every executed row binds `value`."""
        return all(_row_values(row).count(value) > 0 for row in self.parameter_rows())


def _row_values(row: Any) -> list[object]:
    return list(row.values()) if isinstance(row, dict) else list(row)


@pytest.fixture
def statements() -> Iterator[list[Statement]]:
    """Every statement any engine sends to a driver during the test."""
    captured: list[Statement] = []

    def capture(
        _connection: sa.Connection, _cursor: Any, sql: str, parameters: Any, _context: Any, executemany: bool
    ) -> None:
        captured.append(Statement(sql=sql, parameters=parameters, executemany=executemany))

    event.listen(sa.Engine, "before_cursor_execute", capture)
    yield captured
    event.remove(sa.Engine, "before_cursor_execute", capture)
