"""`SqlStorage` as a context manager: its block's end closes the engine, a use after it fails clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage, StorageClosedError
from memorybank_core import MemoryBank
from memorybank_core.bodies import JsonValue
from tests.conftest import User
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import bank_on, storage_at


def _save_one(storage: SqlStorage) -> MemoryBank:
    bank = bank_on(storage)
    bank.save(User(), JsonValue({"content": "kept while the storage is open"}))
    return bank


def test_the_with_block_gives_the_storage_and_closes_it_at_its_end(tmp_path: Path) -> None:
    opened = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    with opened as storage:
        assert storage is opened
        storage.initialize()
        bank = _save_one(storage)

    # A disposed SQLAlchemy engine would quietly open a new pool; a closed storage refuses instead.
    with pytest.raises(StorageClosedError, match="this storage is closed"):
        bank.save(User(), JsonValue({"content": "after the block"}))
    with pytest.raises(StorageClosedError), storage.engine.connect():
        pass  # pragma: no cover - the connection is refused


def _fail_inside(storage: SqlStorage) -> None:
    with storage:
        raise LookupError


def test_the_with_block_closes_the_storage_when_its_body_raises(tmp_path: Path) -> None:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    with pytest.raises(LookupError):
        _fail_inside(storage)

    with pytest.raises(StorageClosedError):
        storage.check_ready()


def test_closing_twice_is_harmless_and_the_storage_stays_closed(tmp_path: Path) -> None:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    storage.initialize()
    storage.close()
    storage.close()
    with storage:  # entering a closed storage gives it back; its end closes it once more
        pass

    with pytest.raises(StorageClosedError):
        storage.sealing_status()


def test_closing_one_storage_leaves_another_on_the_same_file_open(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    with storage_at(url) as first:
        first.initialize()
    with storage_at(url) as second:
        second.check_ready()
        _save_one(second)


@pytest.mark.mysql
def test_a_closed_mysql_storage_holds_no_connection_and_refuses_use(mariadb: ThrowawayDatabase) -> None:
    with storage_at(mariadb.url) as storage:
        storage.initialize()
        _save_one(storage)
        pool = storage.engine.pool

    assert pool.checkedout() == 0  # type: ignore[attr-defined]  # QueuePool's count
    with pytest.raises(StorageClosedError):
        storage.memory_owners()
    with pytest.raises(StorageClosedError), storage.engine.connect() as connection:
        connection.execute(sa.select(1))  # pragma: no cover - the connection is refused
