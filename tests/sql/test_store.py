"""SqlMemoryStore on both dialects: owner scoping of every statement, atomicity, exact round-trips."""

from __future__ import annotations

import functools
import sqlite3
from datetime import timedelta
from typing import Any

import attrs
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from adapters_mysql import SqlStorage, retrying
from adapters_mysql.schema import memory as memory_table
from adapters_mysql.schema import memory_context
from memorybank_core import (
    ListPosition,
    Quota,
    Scope,
    UnavailableError,
    limits,
)
from memorybank_testing.backends import settled
from tests.sql.backends import MysqlFactory, SqliteFactory, storage_at
from tests.sql.conftest import Statement
from tests.sql.memories import SAVED_AT, make_memory, new_user
from tests.sql.owner_statements import (
    SEARCH_MODES,
    check_every_statement_carries_one_owner,
    queries,
    searching,
    vector_statement_kinds,
)


class InjectedFault(Exception):
    """Raised by a test between two statements of one transaction."""


def rows_of(storage: SqlStorage, user_id: str) -> tuple[int, int]:
    """How many memory and memory_context rows the user has, read straight from the tables."""
    with storage.engine.connect() as connection:
        memories = connection.execute(
            sa.select(sa.func.count()).select_from(memory_table).where(memory_table.c.user_id == user_id)
        ).scalar_one()
        contexts = connection.execute(
            sa.select(sa.func.count()).select_from(memory_context).where(memory_context.c.user_id == user_id)
        ).scalar_one()
    return memories, contexts


@pytest.mark.parametrize("search", SEARCH_MODES)
def test_every_statement_on_the_memory_tables_carries_the_owner(
    storage: SqlStorage, statements: list[Statement], search: str
) -> None:
    with searching(storage, search) as searched:
        check_every_statement_carries_one_owner(searched, statements)
    if search == "hybrid":
        # Hybrid search's vectors were written, read and deleted under the same check.
        assert {"INSERT", "SELECT", "DELETE"} <= vector_statement_kinds(statements)


def test_get_many_and_list_each_load_in_one_query(storage: SqlStorage, statements: list[Statement]) -> None:
    owner = new_user()
    memories = [
        make_memory(owner, snippets=("a", "b", "c"), created_at=SAVED_AT + timedelta(seconds=n)) for n in range(8)
    ]
    for memory in memories:
        storage.store.add(user_id=owner, memory=memory)
    statements.clear()
    found = storage.store.get_many(user_id=owner, memory_ids=[m.id for m in memories])
    assert found == {m.id: m for m in memories}
    # Memories joined with their contexts: search loads its results in one round trip.
    assert len(queries(statements)) == 1
    statements.clear()
    # A page of ids, joined with those memories and their contexts: newest first, contexts in save order.
    page = storage.store.list(user_id=owner, limit=5, after=None)
    assert list(page) == sorted(memories, key=lambda m: m.created_at, reverse=True)[:5]
    assert len(queries(statements)) == 1
    statements.clear()
    after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)
    assert (
        list(storage.store.list(user_id=owner, limit=5, after=after))
        == sorted(memories, key=lambda m: m.created_at, reverse=True)[5:]
    )
    assert len(queries(statements)) == 1
    statements.clear()
    assert storage.store.get_many(user_id=owner, memory_ids=[]) == {}
    assert queries(statements) == []


def test_a_failure_after_the_memory_insert_leaves_nothing_behind(storage: SqlStorage) -> None:
    owner = new_user()
    memory = make_memory(owner, snippets=("one", "two"))

    def fail_on_contexts(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.startswith("INSERT INTO memory_context"):
            raise InjectedFault

    event.listen(storage.engine, "before_cursor_execute", fail_on_contexts)
    try:
        with pytest.raises(InjectedFault):
            storage.store.add(user_id=owner, memory=memory)
    finally:
        event.remove(storage.engine, "before_cursor_execute", fail_on_contexts)
    assert rows_of(storage, owner) == (0, 0)
    assert storage.store.get_many(user_id=owner, memory_ids=[memory.id]) == {}
    assert storage.search_engine.search(user_id=owner, query="lighthouse keeper", limit=5) == []


def test_a_memory_added_under_another_owner_is_refused(storage: SqlStorage) -> None:
    with pytest.raises(ValueError, match="own owner"):
        storage.store.add(user_id=new_user(), memory=make_memory(new_user()))


def test_org_scoped_rows_are_invisible_to_every_read_and_to_delete(storage: SqlStorage) -> None:
    owner = new_user()
    shared = make_memory(owner, "lighthouse org wide note", scope=Scope.ORG)
    storage.store.add(user_id=owner, memory=shared)
    assert storage.store.get_many(user_id=owner, memory_ids=[shared.id]) == {}
    assert storage.store.list(user_id=owner, limit=10, after=None) == []
    assert storage.search_engine.search(user_id=owner, query="lighthouse", limit=10) == []
    assert storage.store.delete(user_id=owner, memory_id=shared.id) is False
    # The context delete ran first and was rolled back with the refused memory delete.
    assert rows_of(storage, owner) == (1, 1)


def test_delete_removes_the_memory_and_its_contexts_and_nothing_else(storage: SqlStorage) -> None:
    owner, other = new_user(), new_user()
    doomed, kept = make_memory(owner, snippets=("x", "y")), make_memory(owner, snippets=("z",))
    theirs = make_memory(other)
    for memory in (doomed, kept, theirs):
        storage.store.add(user_id=memory.user_id, memory=memory)
    assert storage.store.delete(user_id=other, memory_id=doomed.id) is False
    assert storage.store.delete(user_id=owner, memory_id=doomed.id) is True
    assert storage.store.delete(user_id=owner, memory_id=doomed.id) is False
    assert rows_of(storage, owner) == (1, 1)
    assert rows_of(storage, other) == (1, 1)


def test_keyset_listing_breaks_time_ties_by_id_and_starts_strictly_after_the_position(storage: SqlStorage) -> None:
    owner = new_user()
    same_time = [make_memory(owner, f"tied {n}", created_at=SAVED_AT) for n in range(5)]
    older = make_memory(owner, "older", created_at=SAVED_AT - timedelta(microseconds=1))
    newer = make_memory(owner, "newer", created_at=SAVED_AT + timedelta(microseconds=1))
    for memory in [*same_time, older, newer]:
        storage.store.add(user_id=owner, memory=memory)
    expected = [newer.id, *sorted((m.id for m in same_time), reverse=True), older.id]
    walked: list[str] = []
    after: ListPosition | None = None
    while True:
        page = storage.store.list(user_id=owner, limit=2, after=after)
        if not page:
            break
        walked.extend(m.id for m in page)
        after = ListPosition(created_at=page[-1].created_at, memory_id=page[-1].id)
    assert walked == expected


#: Text that has broken SQL layers before; each must come back byte for byte.
HOSTILE = [
    "'); DROP TABLE memory;--",
    "100% of the_underscore% wildcards _ %",
    r"C:\Users\léa\notes \\server\share \n not a newline \' \"",
    "it's a \"quoted\" 'thing' with `backticks` and ''doubled''",
    "bell\x07 tab\t vertical\x0b escape\x1b[31m red\x1b[0m formfeed\x0c del\x7f end",
    "  leading and trailing whitespace, CRLF\r\nline two\n  ",
    "parrot 🦜 mountain 🏔️ family 👩‍👩‍👧 flag 🇫🇷",
    "東京タワー 北京市 서울특별시 ひらがな",
    "combining e\u0301 and precomposed \u00e9, zero\u200bwidth, rtl \u202eabc\u202c",
    "astral plane \U0001d518\U0001d52b\U0001d526 and noncharacters \ufffe\uffff",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_round_trips_byte_for_byte(storage: SqlStorage, text: str) -> None:
    owner = new_user()
    memory = make_memory(owner, text, snippets=(text,), tags=(text[: limits.TAG.max],))
    storage.store.add(user_id=owner, memory=memory)
    loaded = storage.store.get_many(user_id=owner, memory_ids=[memory.id])[memory.id]
    assert loaded == memory
    assert loaded.content.encode() == text.encode()
    assert storage.store.list(user_id=owner, limit=1, after=None) == [memory]
    # Searching with the hostile text itself never raises, whatever the engine makes of it.
    storage.search_engine.search(user_id=owner, query=text, limit=5)


def test_the_largest_values_the_bounds_allow_fit_their_columns(storage: SqlStorage) -> None:
    # Four-byte characters at every maximum: the column types must hold bytes, not just characters.
    owner = "u" * limits.ID_MAX_LENGTH
    memory = attrs.evolve(
        make_memory(
            owner,
            "😀" * limits.CONTENT.max,
            snippets=("🦜" * limits.SNIPPET.max,) * limits.CONTEXTS_MAX,
            tags=tuple(f"{n:02d}" + "🏔" * (limits.TAG.max - 2) for n in range(limits.TAGS_MAX)),
        ),
        id="m" * limits.ID_MAX_LENGTH,
    )
    memory = attrs.evolve(memory, contexts=[attrs.evolve(c, memory_id=memory.id) for c in memory.contexts])
    storage.store.add(user_id=owner, memory=memory)
    assert storage.store.get_many(user_id=owner, memory_ids=[memory.id]) == {memory.id: memory}


def test_timestamps_round_trip_with_microseconds_as_utc(storage: SqlStorage) -> None:
    owner = new_user()
    memory = make_memory(owner, created_at=SAVED_AT.replace(microsecond=999_999))
    storage.store.add(user_id=owner, memory=memory)
    loaded = storage.store.get_many(user_id=owner, memory_ids=[memory.id])[memory.id]
    assert loaded.created_at == memory.created_at
    assert loaded.created_at.utcoffset() == timedelta(0)
    assert loaded.contexts[0].created_at == memory.created_at


def test_a_committed_save_is_found_by_its_words_from_another_connection_within_the_engines_lag(
    sql_factory: SqliteFactory | MysqlFactory,
) -> None:
    """SQLite writes its index in the save's transaction: found at once (`index_lag` 0). InnoDB adds a committed
    row's words to its full-text cache moments after the commit returned: found within its lag (docs/storage.md)."""
    sql_factory.fresh()
    writer = sql_factory.storage
    reader = storage_at(sql_factory.url)
    try:
        owner = new_user()
        for n in range(25):
            memory = make_memory(owner, f"zeppelin voyage number{n}")
            writer.store.add(user_id=owner, memory=memory)
            look = functools.partial(found_ids, reader, owner, f"number{n}")
            assert settled(look, [memory.id].__eq__, sql_factory.index_lag) == [memory.id]
    finally:
        reader.close()


def found_ids(storage: SqlStorage, owner: str, query: str) -> list[str]:
    """The ids `storage`'s search finds for `query` in `owner`'s memories, best first."""
    return [hit.memory_id for hit in storage.search_engine.search(user_id=owner, query=query, limit=5)]


@pytest.mark.mysql
def test_a_connection_lost_mid_save_is_unavailable_and_writes_nothing(
    mysql_factory: MysqlFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every attempt is made, without the 7 s of pauses between them: what all of them failing leaves is the point.
    monkeypatch.setattr(retrying, "PAUSES", (0.0,) * len(retrying.PAUSES))
    mysql_factory.fresh()
    storage = mysql_factory.storage
    owner = new_user()
    killer = sa.create_engine(storage.engine.url, poolclass=sa.pool.NullPool)

    def kill_own_connection(connection: sa.Connection, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.startswith("INSERT INTO memory_context"):
            thread_id = connection.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
            with killer.connect() as other:
                other.execute(sa.text("KILL :thread_id"), {"thread_id": thread_id})

    event.listen(storage.engine, "before_cursor_execute", kill_own_connection)
    try:
        with pytest.raises(UnavailableError, match="save"):
            storage.store.add(user_id=owner, memory=make_memory(owner))
    finally:
        event.remove(storage.engine, "before_cursor_execute", kill_own_connection)
        killer.dispose()
    assert rows_of(storage, owner) == (0, 0)
    # The pool dropped the dead connection: the next save works.
    storage.store.add(user_id=owner, memory=make_memory(owner))
    assert rows_of(storage, owner) == (1, 1)


@pytest.mark.mysql
def test_a_connection_lost_mid_save_inside_a_unit_of_work_is_replaced_and_the_save_lands_once(
    mysql_factory: MysqlFactory,
) -> None:
    # A request's token check, save and answer share one unit of work: the retry of a save whose
    # connection died must get a fresh connection, not the unit's dead one.
    mysql_factory.fresh()
    storage = mysql_factory.storage
    owner = new_user()
    killer = sa.create_engine(storage.engine.url, poolclass=sa.pool.NullPool)
    kills: list[int] = []

    def kill_once(connection: sa.Connection, _cursor: Any, sql: str, *_args: Any) -> None:
        if sql.startswith("INSERT INTO memory_context") and not kills:
            thread_id = connection.connection.dbapi_connection.thread_id()  # type: ignore[union-attr]
            with killer.connect() as other:
                other.execute(sa.text("KILL :thread_id"), {"thread_id": thread_id})
            kills.append(thread_id)

    event.listen(storage.engine, "before_cursor_execute", kill_once)
    try:
        with storage.unit_of_work():
            storage.token_store.revocation_generation()  # the request's first statement, as in the server
            storage.store.add(user_id=owner, memory=make_memory(owner, snippets=("one", "two")))
            listed = storage.store.list(user_id=owner, limit=5, after=None)
    finally:
        event.remove(storage.engine, "before_cursor_execute", kill_once)
        killer.dispose()
    assert kills
    assert rows_of(storage, owner) == (1, 2)
    assert [len(found.contexts) for found in listed] == [2]


@pytest.mark.mysql
def test_connections_killed_by_the_server_are_replaced_before_use(mysql_factory: MysqlFactory) -> None:
    mysql_factory.fresh()
    storage = mysql_factory.storage
    # One pooled connection only: the one killed is the one the read gets (and none is left dead in the
    # session's pool for a later test to trip over).
    storage.engine.dispose()
    with storage.engine.connect() as connection:
        thread_id = connection.execute(sa.text("SELECT CONNECTION_ID()")).scalar_one()
    with sa.create_engine(storage.engine.url, poolclass=sa.pool.NullPool).connect() as other:
        other.execute(sa.text("KILL :thread_id"), {"thread_id": thread_id})
    # The pooled connection is dead: the read fails on it, and the retry reconnects instead of failing.
    assert storage.store.list(user_id=new_user(), limit=5, after=None) == []


def test_a_locked_sqlite_database_is_unavailable_not_a_traceback(sqlite_storage: SqlStorage) -> None:
    database = sqlite_storage.engine.url.database
    assert database is not None
    storage = storage_at(f"sqlite:///{database}")

    @event.listens_for(storage.engine, "connect")
    def impatient(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA busy_timeout=50")

    storage.engine.dispose()
    blocker = sqlite3.connect(database, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        owner = new_user()
        with pytest.raises(UnavailableError, match="save"):
            storage.store.add(user_id=owner, memory=make_memory(owner))
        blocker.execute("ROLLBACK")
        assert rows_of(storage, owner) == (0, 0)
    finally:
        blocker.close()
        storage.close()


def test_a_database_that_is_gone_is_unavailable(tmp_path: Any) -> None:
    storage = storage_at(f"sqlite:///{tmp_path / 'bank.sqlite3'}")
    storage.initialize()
    storage.close()
    (tmp_path / "bank.sqlite3").unlink()
    (tmp_path / "bank.sqlite3").mkdir()  # a directory where the database was: SQLite cannot open it
    owner = new_user()
    with pytest.raises(UnavailableError, match="list"):
        storage.store.list(user_id=owner, limit=5, after=None)


def test_a_released_unit_hands_its_connection_back_and_takes_one_again_on_the_next_call(storage: SqlStorage) -> None:
    # Issue 27: the secret screen runs with no connection held, even inside a facade's unit of work.
    user = new_user()
    pool = storage.engine.pool
    with storage.unit_of_work():
        storage.store.list(user_id=user, limit=1, after=None)
        held = pool.checkedout()  # type: ignore[attr-defined]
        with storage.unit_of_work.released():
            released = pool.checkedout()  # type: ignore[attr-defined]
        storage.store.add(user_id=user, memory=make_memory(user), quota=Quota())
        again = pool.checkedout()  # type: ignore[attr-defined]

    assert (held, released, again) == (1, 0, 1)
    assert rows_of(storage, user) == (1, 1)
