"""`memorybank compact` on both dialects: the entries of deleted and edited memories leave the search index, and every
search answers exactly as before (issue 32: InnoDB checks every search against every deleted document's id until
the table is rebuilt, ADR 0047)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql import CompactUnsupportedError, SqlStorage
from memorybank_core import JsonValue
from memorybank_search import OwnerIndexer
from memorybank_testing.backends import settled
from tests.conftest import User
from tests.sql.backends import MysqlFactory, SqliteFactory, services_on

QUESTIONS = ("harbor", "kestrel3", "kestrel7 harbor", "quixotiq4", "draft", "edited")


def _deleted_documents(storage: SqlStorage) -> int:
    """InnoDB's deleted document ids of the memory table, which every full-text query checks."""
    with storage.engine.connect() as connection:
        connection.exec_driver_sql(f"SET GLOBAL innodb_ft_aux_table = '{storage.engine.url.database}/memory'")
        try:
            return int(
                connection.exec_driver_sql("SELECT COUNT(*) FROM information_schema.INNODB_FT_DELETED").scalar_one()
            )
        finally:
            connection.exec_driver_sql("SET GLOBAL innodb_ft_aux_table = DEFAULT")  # the server as it was


def test_compact_drops_deleted_and_edited_entries_and_every_search_answers_the_same(
    storage: SqlStorage, sql_factory: SqliteFactory | MysqlFactory
) -> None:
    bank = services_on(storage).bank
    owner, neighbour = User(), User()
    kept = [bank.save(owner, JsonValue({"content": f"harbor note {n} kestrel{n}"})) for n in range(10)]
    gone = [bank.save(owner, JsonValue({"content": f"harbor draft {n} quixotiq{n}"})) for n in range(10)]
    bank.save(neighbour, JsonValue({"content": "harbor of the neighbour"}))
    for memory in gone:
        bank.delete(owner, memory_id=memory.id)
    for memory in kept[:3]:
        bank.edit(owner, memory_id=memory.id, request=JsonValue({"content": f"{memory.content} edited"}))

    def answers() -> dict[str, list[tuple[str, float]]]:
        return {
            question: [(result.memory.id, result.score) for result in bank.search(owner, query=question)]
            for question in QUESTIONS
        }

    # Exact about what is found, tolerant only about when (ADR 0046).
    before = settled(answers, lambda found: len(found["edited"]) == 3, sql_factory.index_lag)
    mysql = storage.engine.dialect.name == "mysql"
    if mysql:  # ten deletes and three edits: the check can see them (SQLite's merge: tests/sql/test_purge.py)
        assert _deleted_documents(storage) >= 13

    held = storage.compact_search_index()

    assert held == 11
    assert answers() == before
    assert [memory_id for memory_id, _score in before["harbor"]] != []
    assert before["quixotiq4"] == []
    if mysql:
        assert _deleted_documents(storage) == 0
    # The index still takes new memories and drops deleted ones.
    late = bank.save(owner, JsonValue({"content": "harbor kestrel99 after compacting"}))
    found = settled(lambda: bank.search(owner, query="kestrel99"), bool, sql_factory.index_lag)
    assert [result.memory.id for result in found] == [late.id]


def test_a_spider_head_refuses_to_compact_with_a_message(tmp_path: Path) -> None:
    # A Spider head's tables hold no rows: a rebuild there would report success and change nothing.
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'head.sqlite3'}")
    head = SqlStorage(engine=engine, indexer=OwnerIndexer(), display_url="head", spider_head=True)
    try:
        with pytest.raises(CompactUnsupportedError, match="against each data node"):
            head.compact_search_index()
    finally:
        head.close()


@pytest.mark.mysql
def test_a_save_during_compact_waits_for_the_rebuild_and_succeeds(mysql_storage: SqlStorage) -> None:
    bank = services_on(mysql_storage).bank
    owner = User()
    bank.save(owner, JsonValue({"content": "harbor before compacting"}))
    holder = mysql_storage.engine.connect()
    # A reader's open transaction holds the table's metadata lock: the rebuild waits for it, and saves queue behind.
    holder.execute(sa.text("SELECT COUNT(*) FROM memory")).scalar_one()
    compacting = threading.Thread(target=mysql_storage.compact_search_index)
    compacting.start()
    try:
        _wait_for_state(mysql_storage, "OPTIMIZE TABLE memory", "Waiting for table metadata lock")
        saved: list[str] = []
        saving = threading.Thread(
            target=lambda: saved.append(bank.save(owner, JsonValue({"content": "harbor kestrel"})).id)
        )
        saving.start()
        saving.join(0.3)
        assert saving.is_alive()  # waiting, not failed
        assert saved == []
    finally:
        holder.rollback()
        holder.close()
    compacting.join(30)
    saving.join(30)

    assert not compacting.is_alive()
    assert not saving.is_alive()
    assert len(saved) == 1
    assert [result.memory.id for result in bank.search(owner, query="kestrel")] == saved


def _wait_for_state(storage: SqlStorage, statement: str, state: str) -> None:
    """Until a connection to the storage's database runs `statement` in `state` (at most 10 s)."""
    deadline = time.monotonic() + 10
    query = sa.text(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO = :info AND STATE = :state"
    )
    while time.monotonic() < deadline:
        with storage.engine.connect() as connection:
            if connection.execute(query, {"info": statement, "state": state}).scalar_one():
                return
        time.sleep(0.01)
    pytest.fail(f"no connection ran {statement!r} in state {state!r}")
