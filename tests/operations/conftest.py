"""Fixtures for the operations tier: a database as `memorybank serve` finds it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.served import run_memorybank
from tests.mysql_server import ThrowawayDatabase


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A ready database: an SQLite file, or a migrated throwaway MariaDB database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bank.sqlite3'}"
        return
    database = ThrowawayDatabase()
    try:
        assert run_memorybank(["migrate", "--db", database.url]).returncode == 0
        yield database.url
    finally:
        database.drop()
