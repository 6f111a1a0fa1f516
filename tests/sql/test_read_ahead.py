"""A save's last query commits and reads ahead for its `similar` look-up (ADR 0042): what fails where.

The writes and the commit fail as one statement does (nothing written); a read after the commit never
fails the save, and the look-up then reads for itself. On mysqlclient only (`OneTripConnection`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs
import pytest
import sqlalchemy as sa

from adapters_mysql import SqlStorage
from adapters_mysql.compiled_reads import CompiledRead, PlannedRead
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.unit_of_work import reading, take_ahead
from memorybank_core import Memory
from tests.sql.memories import make_memory, new_user

pytestmark = pytest.mark.mysql

_NO_SUCH_TABLE = CompiledRead(sa.select(sa.literal_column("x")).select_from(sa.table("no_such_table")))


def _inner(storage: SqlStorage) -> SqlMemoryStore:
    inner = storage.store.inner
    assert isinstance(inner, SqlMemoryStore)
    return inner


def _reading_ahead(
    storage: SqlStorage, monkeypatch: pytest.MonkeyPatch, extra: Sequence[PlannedRead]
) -> list[PlannedRead]:
    """Make the store read what the look-up reads, then `extra`; returns what it was asked to read, per save."""
    inner = _inner(storage)
    reads_for = inner._similar_reads
    assert reads_for is not None
    asked: list[PlannedRead] = []

    def with_extra(memory: Memory) -> Sequence[PlannedRead]:
        planned = [*reads_for(memory), *extra]
        asked.extend(planned)
        return planned

    monkeypatch.setattr(inner, "_similar_reads", with_extra)
    return asked


def test_a_read_failing_after_the_commit_leaves_the_save_standing_and_the_reads_before_it_kept(
    mysql_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    owner = new_user()
    mysql_storage.store.add(user_id=owner, memory=make_memory(owner, "the lighthouse keeper wrote about the storm"))
    asked = _reading_ahead(mysql_storage, monkeypatch, [PlannedRead(_NO_SUCH_TABLE, {})])
    saved = make_memory(owner, "the lighthouse keeper's notes")

    with caplog.at_level(logging.WARNING, "memorybank.storage"), mysql_storage.unit_of_work():
        with mysql_storage.unit_of_work():  # the use case's, inside the request's
            mysql_storage.store.add(user_id=owner, memory=saved)
        candidates, failed = asked
        assert take_ahead(mysql_storage.engine, candidates.read.key(candidates.parameters)) is not None
        assert take_ahead(mysql_storage.engine, failed.read.key(failed.parameters)) is None
        # The connection goes on serving the unit: the look-up, then a read of what was saved.
        hits = mysql_storage.search_engine.search_like(
            user_id=owner, memory_id=saved.id, query=saved.similar_query, limit=4
        )
        assert saved.id in mysql_storage.store.get_many(user_id=owner, memory_ids=[saved.id])

    assert {hit.memory_id for hit in hits} >= {saved.id}
    assert [record.getMessage() for record in caplog.records] == [
        "a read after a commit failed (ProgrammingError): read again when asked"
    ]


def test_an_insert_failing_in_the_query_that_commits_writes_nothing(
    mysql_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = new_user()
    first = make_memory(owner, "the lighthouse keeper wrote about the storm")
    mysql_storage.store.add(user_id=owner, memory=first)
    asked = _reading_ahead(mysql_storage, monkeypatch, [])
    # The memory row goes in, then its context clashes with the first memory's: the query stops before its COMMIT.
    clashing = make_memory(owner, "the lighthouse keeper's notes")
    clashing = attrs.evolve(clashing, contexts=(attrs.evolve(first.contexts[0], memory_id=clashing.id),))

    with mysql_storage.unit_of_work():
        with mysql_storage.unit_of_work(), pytest.raises(sa.exc.IntegrityError):
            _inner(mysql_storage).add(user_id=owner, memory=clashing)
        assert asked  # the failed query was the one that commits and reads ahead
        assert mysql_storage.store.get_many(user_id=owner, memory_ids=[clashing.id]) == {}
        assert mysql_storage.store.usage(user_id=owner).memories == 1
        later = make_memory(owner, "a later note")
        mysql_storage.store.add(user_id=owner, memory=later)  # the connection still writes

    stored = mysql_storage.store.get_many(user_id=owner, memory_ids=[first.id, clashing.id, later.id])
    assert set(stored) == {first.id, later.id}
    assert mysql_storage.store.usage(user_id=owner).memories == 2


def test_a_read_sent_along_that_fails_leaves_the_first_reads_rows_and_the_connection_serving(
    mysql_storage: SqlStorage, caplog: pytest.LogCaptureFixture
) -> None:
    owner = new_user()
    saved = make_memory(owner, "the lighthouse keeper wrote about the storm")
    mysql_storage.store.add(user_id=owner, memory=saved)
    (candidates,) = mysql_storage.lexical_search.reads_for(owner, "lighthouse")
    failing = PlannedRead(_NO_SUCH_TABLE, {})

    with (
        caplog.at_level(logging.WARNING, "memorybank.storage"),
        mysql_storage.unit_of_work(),
        reading(mysql_storage.engine) as connection,
    ):
        rows = candidates.read.all(connection, candidates.parameters, along=[failing])
        assert take_ahead(mysql_storage.engine, failing.read.key(failing.parameters)) is None
        assert [row.id for row in candidates.read.all(connection, candidates.parameters)] == [saved.id]

    assert [row.id for row in rows] == [saved.id]
    assert [record.getMessage() for record in caplog.records] == [
        "a read sent along failed (ProgrammingError): read again when asked"
    ]


def test_a_save_in_its_own_unit_alone_reads_nothing_ahead(
    mysql_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = new_user()
    asked = _reading_ahead(mysql_storage, monkeypatch, [])

    mysql_storage.store.add(user_id=owner, memory=make_memory(owner))  # no unit: its own connection
    with mysql_storage.unit_of_work():  # the use case's unit, with no request's around it: nobody asks next
        mysql_storage.store.add(user_id=owner, memory=make_memory(owner))
    assert asked == []
    with mysql_storage.unit_of_work(), mysql_storage.unit_of_work():
        mysql_storage.store.add(user_id=owner, memory=make_memory(owner))
    assert asked != []
