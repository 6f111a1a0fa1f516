"""The MariaDB canary: a private server's dump and tablespace files hold no sealed memory's text.

A plaintext control database on the same server proves the scan finds what is there.
Runs its own `mariadbd` (tests/private_mariadb.py), never reading the shared server's files.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_crypto import AesGcmSealer, new_key_ring
from memorybank_core import SaveRequest
from tests.conftest import User
from tests.private_mariadb import PrivateMariadb
from tests.sql.backends import bank_on, storage_at

CANARY = "qjvcanaryterm"
CONTROL = "plaincontrolterm"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PrivateMariadb]:
    # The README's test command runs this test wherever a MariaDB server is installed, after
    # `pip install -e ".[server,test]"`: without mysqlclient. Importing it here fails the test, as it would there.
    monkeypatch.setitem(sys.modules, "MySQLdb", None)
    private = PrivateMariadb(tmp_path)
    yield private
    private.stop()


def _fill(url: str, word: str, *, sealed: bool) -> None:
    storage = storage_at(url, AesGcmSealer(new_key_ring()) if sealed else None)
    try:
        storage.migrate()
        bank = bank_on(storage)
        alice = User()
        for number in range(30):
            body = {
                "content": f"{word} number {number}: {word}{number} stays private",
                "tags": [f"{word}tag{number}"],
                "contexts": [
                    {
                        "snippet": f"the user said {word}snippet{number}",
                        "conversation_id": f"{word}conv{number}",
                        "message_id": f"{word}msg{number}",
                    }
                ],
            }
            bank.save(alice, SaveRequest.parse(body))
        assert len(bank.search(alice, query=word, limit=50)) == 30
    finally:
        storage.close()


def _dump(server: PrivateMariadb, database: str) -> bytes:
    dump = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    assert dump is not None, "mariadb-dump is installed with the server"
    return subprocess.run(  # noqa: S603 - fixed arguments
        [dump, "-h127.0.0.1", f"-P{server.port}", "-uroot", "--skip-extended-insert", database],
        check=True,
        capture_output=True,
    ).stdout


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(root)) for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()
    )


def test_no_canary_in_mysqldump_or_the_innodb_files_of_a_sealed_database(server: PrivateMariadb) -> None:
    _fill(server.url, CANARY, sealed=True)
    control_url = server.url.replace("/canary", "/control")
    engine = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{server.port}", poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE DATABASE control CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    engine.dispose()
    _fill(control_url, CONTROL, sealed=False)

    sealed_dump = _dump(server, "canary")
    assert b"INSERT INTO `memory`" in sealed_dump
    assert CANARY.encode() not in sealed_dump
    assert CONTROL.encode() in _dump(server, "control")

    server.stop()  # a clean shutdown writes every page to the tablespace files
    assert _files_holding(server.data, CANARY.encode()) == []
    assert any(name.startswith("control/") for name in _files_holding(server.data, CONTROL.encode()))
