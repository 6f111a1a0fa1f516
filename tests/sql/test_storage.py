"""`open_storage`: URLs, drivers, search engine choice, SQLite connection settings, failures."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql import MysqlOwnerScopedSearch, SqliteOwnerScopedSearch, SqlStorage
from harness.ci import in_ci
from memorybank_core import InvalidInputError, UnavailableError
from memorybank_core.bodies import JsonValue
from memorybank_core.distribution import install_command
from tests.conftest import User
from tests.mysql_server import ThrowawayDatabase
from tests.sql.backends import bank_on, storage_at


@pytest.mark.parametrize(
    "url",
    [
        "",
        "   ",
        "not a url",
        "postgresql://user@localhost/memorybank",
        "mariadb://root@127.0.0.1:3306/memorybank",
        "mysql://root@127.0.0.1:3306",
        "mysql://root@127.0.0.1:3306/",
        "mysql://root@127.0.0.1:notaport/memorybank",
    ],
)
def test_a_bad_url_is_invalid_input_naming_db(url: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        storage_at(url)
    assert [problem.path for problem in raised.value.problems] == ["db"]


@pytest.mark.parametrize(
    ("url", "module", "hint"),
    [
        ("mysql://root@127.0.0.1:3306/memorybank", "MySQLdb", install_command("mysql")),
        ("mysql+pymysql://root@127.0.0.1:3306/memorybank", "pymysql", "pip install pymysql"),
    ],
)
def test_a_missing_driver_is_invalid_input_that_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, hint: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    with pytest.raises(InvalidInputError, match=re.escape(hint)) as raised:
        storage_at(url)
    assert raised.value.problems[0].path == "db"


def test_an_unreachable_mysql_server_is_unavailable() -> None:
    # Port 1 on localhost: nothing listens there, so the connection is refused at once.
    with pytest.raises(UnavailableError, match="cannot connect"):
        storage_at("mysql+pymysql://root@127.0.0.1:1/memorybank")


def test_a_sqlite_file_in_a_missing_directory_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="cannot connect"):
        storage_at(f"sqlite:///{tmp_path / 'missing' / 'bank.sqlite3'}")


def test_sqlite_connections_are_configured_for_a_threaded_server(tmp_path: Path) -> None:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    try:
        with storage.engine.connect() as connection:
            settings = {
                pragma: connection.exec_driver_sql(f"PRAGMA {pragma}").scalar_one()
                for pragma in ("journal_mode", "foreign_keys", "busy_timeout")
            }
        assert settings == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 5000}
        assert storage.dialect_name == "sqlite"
        assert isinstance(storage.search_engine.inner, SqliteOwnerScopedSearch)
    finally:
        storage.close()


def test_an_in_memory_sqlite_bank_is_one_database_shared_by_threads() -> None:
    storage = storage_at("sqlite://")
    try:
        storage.initialize()
        bank = bank_on(storage)
        alice = User()
        errors: list[BaseException] = []

        def save(n: int) -> None:
            try:
                bank.save(alice, JsonValue({"content": f"threaded memory number{n}"}))
            except BaseException as error:  # pragma: no cover - reported by the assertion below
                errors.append(error)

        threads = [threading.Thread(target=save, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(bank.list(alice, limit=20).memories) == 8
        assert len(bank.search(alice, query="threaded")) == 8
    finally:
        storage.close()


def test_a_sqlite_file_bank_serves_concurrent_writers(tmp_path: Path) -> None:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    try:
        storage.initialize()
        bank = bank_on(storage)
        users = [User() for _ in range(4)]

        def work(user: User) -> None:
            for n in range(10):
                saved = bank.save(user, JsonValue({"content": f"concurrent note{n}"}))
                if n % 3 == 0:
                    bank.delete(user, memory_id=saved.id)

        threads = [threading.Thread(target=work, args=(user,)) for user in users]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [len(bank.list(user, limit=20).memories) for user in users] == [6, 6, 6, 6]
    finally:
        storage.close()


@pytest.mark.mysql
@pytest.mark.parametrize("scheme", ["mysql", "mysql+mysqldb", "mysql+pymysql"])
def test_both_mysql_drivers_serve_the_bank(scheme: str) -> None:
    if scheme != "mysql+pymysql" and not in_ci():
        pytest.importorskip("MySQLdb", reason="mysql:// means mysqlclient: pip install -e '.[all,test]'")
    database = ThrowawayDatabase()
    storage: SqlStorage | None = None
    try:
        url = sa.make_url(database.url).set(drivername=scheme).render_as_string(hide_password=False)
        storage = storage_at(url)
        storage.initialize()
        storage.check_ready()
        assert storage.dialect_name == "mysql"
        assert isinstance(storage.search_engine.inner, MysqlOwnerScopedSearch)
        bank = bank_on(storage)
        alice = User()
        saved = bank.save(alice, JsonValue({"content": "emoji 🦜 survive the utf8mb4 connection"}))
        assert bank.list(alice).memories == (saved,)
        assert [r.memory.id for r in bank.search(alice, query="survive")] == [saved.id]
    finally:
        if storage is not None:
            storage.close()
        database.drop()


@pytest.mark.mysql
def test_the_mysql_url_fixture_gives_an_empty_database(mysql_url: str) -> None:
    storage = storage_at(mysql_url)
    try:
        assert sa.inspect(storage.engine).get_table_names() == []
    finally:
        storage.close()
