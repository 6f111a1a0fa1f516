"""The MySQL/MariaDB server for tests: one throwaway database per use, and the CI rule.

The server URL comes from MEMORYBANK_TEST_MYSQL_URL (e.g. `mysql://root@127.0.0.1:3306`).
Unset, MySQL tests skip with a loud reason, except under CI=true, where a missing
variable or an unreachable server fails the run: CI never silently skips MySQL.

Registered as a pytest plugin by tests/conftest.py, so the `mysql_url` fixture is
available to every tier.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from harness.ci import in_ci

ENV_VAR = "MEMORYBANK_TEST_MYSQL_URL"
DATABASE_PREFIX = "memorybank_test_"


def server_url() -> sa.URL:
    """The configured server URL, driver kept, without a database; skips the calling test (fails it under CI)
    when there is none."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        if in_ci():
            pytest.fail(f"{ENV_VAR} is not set, and under CI=true MySQL tests must run, not skip", pytrace=False)
        pytest.skip(f"MYSQL TESTS SKIPPED: set {ENV_VAR}=mysql://root@127.0.0.1:3306 to run them")
    # URL.set() ignores None; _replace really drops the database.
    return sa.make_url(raw)._replace(database=None)


class ThrowawayDatabase:
    """A uniquely named, empty database on the test server; `drop()` removes it."""

    def __init__(self) -> None:
        self._server = sa.create_engine(server_url(), poolclass=sa.pool.NullPool)
        self.name = DATABASE_PREFIX + secrets.token_hex(6)
        try:
            with self._server.begin() as connection:
                # An identifier cannot be a bind parameter; the name is ours (prefix + hex), not input.
                connection.exec_driver_sql(
                    f"CREATE DATABASE `{self.name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
                )
        except sa.exc.OperationalError as error:
            self._server.dispose()
            pytest.fail(f"the MySQL server named by {ENV_VAR} cannot be reached: {error.orig}", pytrace=False)
        except BaseException:
            self._server.dispose()
            raise

    @property
    def url(self) -> str:
        """The database's URL, password included, with the configured driver (`mysql://`, `mysql+pymysql://`)."""
        return server_url().set(database=self.name).render_as_string(hide_password=False)

    def drop(self) -> None:
        """Drop the database and release the server connection."""
        try:
            with self._server.begin() as connection:
                connection.exec_driver_sql(f"DROP DATABASE IF EXISTS `{self.name}`")
        finally:
            self._server.dispose()


@pytest.fixture(scope="session")
def mysql_url() -> Iterator[str]:
    """The URL (`mysql://…/memorybank_test_<hex>`) of a fresh, empty database, dropped after the session."""
    database = ThrowawayDatabase()
    try:
        yield database.url
    finally:
        database.drop()


@pytest.fixture
def mariadb() -> Iterator[ThrowawayDatabase]:
    """A throwaway database of this test's own, dropped afterwards."""
    database = ThrowawayDatabase()
    try:
        yield database
    finally:
        database.drop()
