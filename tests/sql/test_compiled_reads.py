"""The hot reads on the DBAPI cursor (`CompiledRead`, ADR 0029): SQLAlchemy's rows, transaction and errors."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from adapters_mysql import SqlStorage, mysql_search, vector_store
from adapters_mysql.change_counters import _BOTH as _GENERATION
from adapters_mysql.compiled_reads import CompiledRead
from adapters_mysql.control_store import _FIND
from adapters_mysql.memory_store import _CHECKED_READS, _PLAIN_READS
from adapters_mysql.owner import owner_values
from adapters_mysql.schema import memory_vector
from memorybank_core import EVERYONE, Control, Embedding, SubjectKind
from memorybank_search import OwnerIndexer
from tests.sql.memories import SAVED_AT, make_memory, new_user


def _refuse_sqlalchemy(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> list[Any]:
        raise AssertionError("the read went through Connection.execute")

    monkeypatch.setattr(CompiledRead, "_through_sqlalchemy", refused)


def _both_ways(
    read: CompiledRead, connection: sa.Connection, parameters: Mapping[str, Any]
) -> tuple[list[Any], list[Any]]:
    cursor_rows = read.all(connection, parameters)
    sqlalchemy_rows = connection.execute(read.statement, dict(parameters)).all()
    return [tuple(row) for row in cursor_rows], [tuple(row) for row in sqlalchemy_rows]


def test_the_hot_reads_give_sqlalchemys_rows_on_the_cursor(
    storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = new_user()
    memories = [make_memory(owner, snippets=("a", "b"), created_at=SAVED_AT + timedelta(seconds=n)) for n in range(4)]
    for memory in memories:
        storage.store.add(user_id=owner, memory=memory)
    now = SAVED_AT + timedelta(days=1)
    storage.controls.set(Control(kind=SubjectKind.USER, subject_id=owner, max_memories=9, updated_at=now))
    storage.controls.set(Control(kind=SubjectKind.ALL, subject_id=EVERYONE, enabled=True, updated_at=now))
    storage.token_store.revoke("no such token", at=now)  # the generation row may be absent: both say so
    with storage.engine.begin() as connection:
        for number, memory in enumerate(memories):
            embedding = Embedding.quantize([1.0, -0.5, number / 4])
            connection.execute(
                memory_vector.insert(),
                storage.codec.vector_row(user_id=owner, memory_id=memory.id, model="m", embedding=embedding),
            )
    newest = max(memories, key=lambda m: m.created_at)
    reads: list[tuple[CompiledRead, dict[str, Any]]] = [
        (_GENERATION, {}),
        (_FIND, {"user_id": owner, "org_id": "org_none"}),
        (vector_store._OWNER_VECTORS, {"owner": owner, "model": "m"}),
    ]
    for statements in (_PLAIN_READS, _CHECKED_READS):
        reads += [
            (statements.get_many, {**owner_values(owner), "ids": [m.id for m in memories[:3]]}),
            (statements.list_first, {**owner_values(owner), "limit": 3}),
            (
                statements.list_after,
                {**owner_values(owner), "limit": 3, "after_created_at": newest.created_at, "after_id": newest.id},
            ),
        ]
    if storage.dialect_name == "mysql":
        tokens = " ".join(OwnerIndexer().query_tokens(owner, "lighthouse keeper"))
        reads.append((mysql_search._CANDIDATES, {**owner_values(owner), "tokens": tokens, "limit": 10}))
        reads.append((mysql_search._BEST_CANDIDATES, {**owner_values(owner), "tokens": tokens, "limit": 2}))
    _refuse_sqlalchemy(monkeypatch)
    with storage.engine.connect() as connection:
        for read, parameters in reads:
            on_the_cursor, through_sqlalchemy = _both_ways(read, connection, parameters)
            assert sorted(on_the_cursor, key=repr) == sorted(through_sqlalchemy, key=repr)
            assert on_the_cursor
        # Named like SQLAlchemy's rows, converted by the same types (UTC datetimes, JSON lists).
        row = _PLAIN_READS.list_first.all(connection, {**owner_values(owner), "limit": 1})[0]
        assert (row.id, row.created_at, row.tags, row.context_snippet) == (
            newest.id,
            newest.created_at,
            list(newest.tags),
            row.context_snippet,
        )
        assert row.created_at.tzinfo is not None


def test_a_cursor_read_begins_the_connections_transaction(storage: SqlStorage) -> None:
    with storage.engine.connect() as connection:
        assert not connection.in_transaction()
        _GENERATION.all(connection, {})
        # Ended by the unit of work's commit or close, as an autobegun one is.
        assert connection.in_transaction()


def test_a_driver_failure_takes_sqlalchemys_path(storage: SqlStorage) -> None:
    with storage.engine.connect() as connection:
        _GENERATION.all(connection, {})
        connection.connection.dbapi_connection.close()  # type: ignore[union-attr]
        # SQLAlchemy's wrapped error, which the retry layer and the error table know.
        with pytest.raises(sa.exc.DBAPIError):
            _GENERATION.all(connection, {})


def test_listeners_of_cursor_executions_see_the_hot_reads(storage: SqlStorage) -> None:
    seen: list[str] = []

    def capture(_c: Any, _cursor: Any, sql: str, *_: Any) -> None:
        seen.append(sql)

    owner = new_user()
    event.listen(storage.engine, "before_cursor_execute", capture)
    try:
        with storage.engine.connect() as connection:
            _PLAIN_READS.list_first.all(connection, {**owner_values(owner), "limit": 3})
    finally:
        event.remove(storage.engine, "before_cursor_execute", capture)
    assert [sql for sql in seen if sql.startswith("SELECT")] == [
        _PLAIN_READS.list_first.statement.compile(storage.engine).string
    ]
