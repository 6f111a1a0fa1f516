"""SQLAlchemy engines for each dialect, with the connection settings the bank relies on."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL
from sqlalchemy.pool import QueuePool

#: Execution option that marks a write transaction. SQLite then opens it with BEGIN IMMEDIATE;
#: other dialects ignore it.
WRITE_OPTION = "memorybank_write"
#: Execution option that marks a connection whose transactions only read (the unit of work's, `reading`'s):
#: on MySQL through mysqlclient its statements run in autocommit, no transaction begun (`one_trip`).
READ_OPTION = "memorybank_read"

#: How long a SQLite connection waits for another writer before giving up, in milliseconds.
SQLITE_BUSY_TIMEOUT_MS = 5000
#: A SQLite file memorybank creates is readable by its owner only: by default its memories are plaintext.
PRIVATE_FILE_MODE = 0o600


#: Connections a MySQL engine keeps open: about the concurrent requests of one worker under load.
MYSQL_POOL_SIZE = 20
#: Connections opened beyond the pool when more requests run at once (closed when returned), up to
#: the thread pool's 40 concurrent calls.
MYSQL_POOL_OVERFLOW = 20
#: Seconds after which a pooled MySQL connection is replaced rather than reused.
MYSQL_POOL_RECYCLE_SECONDS = 3600


def for_writing(engine: sa.Engine) -> sa.Engine:
    """The same engine and pool, with transactions marked as writes.

    A SQLite transaction that starts as a read and then writes fails at once with
    "database is locked" if another connection committed meanwhile (its snapshot is
    stale, so waiting cannot help). Taking the write lock at BEGIN waits instead.
    """
    return engine.execution_options(**{WRITE_OPTION: True})


def mysql_engine(url: URL) -> sa.Engine:
    """An engine for MySQL/MariaDB through mysqlclient or PyMySQL."""
    if "charset" not in url.query:
        # 4-byte UTF-8 (emoji) needs utf8mb4 on the connection, not just on the tables.
        url = url.update_query_dict({"charset": "utf8mb4"})
    # No pre-ping: it is a round trip on every checkout, that is on every request. A pooled
    # connection the server dropped fails its first statement instead; SQLAlchemy then
    # invalidates the whole pool and the caller's retry (adapters_mysql.retrying) reconnects.
    # `pool_recycle` replaces connections before a default `wait_timeout` (8 h) drops them.
    # The pool holds as many connections as requests run at once (one unit of work each), so
    # a busy server does not open and close overflow connections. hide_parameters: bound
    # values (memory content) never reach logs or exception messages.
    options: dict[str, Any] = {}
    one_trip = url.get_driver_name() == "mysqldb"
    if one_trip:
        from MySQLdb.constants import CLIENT

        options["connect_args"] = {
            "conv": _mysqldb_conversions(),
            # FOUND_ROWS as SQLAlchemy sets it (rowcount counts matched rows); several statements per
            # query so a transaction's START TRANSACTION rides with its first statement (`one_trip`).
            "client_flag": CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS,
            "autocommit": True,
        }
    engine = sa.create_engine(
        url,
        **options,
        pool_size=MYSQL_POOL_SIZE,
        max_overflow=MYSQL_POOL_OVERFLOW,
        pool_recycle=MYSQL_POOL_RECYCLE_SECONDS,
        hide_parameters=True,
    )
    if one_trip:
        _one_trip_transactions(engine)
    return engine


def open_dbapi_connection(dialect: sa.Dialect, cargs: Any, cparams: Any) -> Any:
    """A new DBAPI connection for `dialect`: a `OneTripConnection` through mysqlclient (every way we connect)."""
    if dialect.driver == "mysqldb":
        from adapters_mysql.one_trip import OneTripConnection

        return OneTripConnection(*cargs, **cparams)
    return dialect.loaded_dbapi.connect(*cargs, **cparams)


def one_trip_connect(dialect: sa.Dialect, _record: Any, cargs: Any, cparams: Any) -> Any:
    """The engine's `do_connect`: its one host through `open_dbapi_connection` (failover replaces it)."""
    return open_dbapi_connection(dialect, cargs, cparams)


def _one_trip_transactions(engine: sa.Engine) -> None:
    """Connect through `OneTripConnection`; begin a transaction (lazily) unless the connection only reads."""
    from adapters_mysql.one_trip import OneTripConnection

    event.listen(engine, "do_connect", one_trip_connect)

    @event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        options = connection.get_execution_options()
        if options.get(WRITE_OPTION) or not options.get(READ_OPTION):
            dbapi_connection = connection.connection.dbapi_connection
            if isinstance(dbapi_connection, OneTripConnection):
                dbapi_connection.begin_lazily()


def _mysqldb_conversions() -> dict[Any, Any]:
    """mysqlclient's result converters, with DATETIME parsed by the C `datetime.fromisoformat`.

    mysqlclient parses each DATETIME in Python (about 3 µs); a page of 20 memories with their
    contexts carries over a hundred of them. Values it parses differently (zero dates) still go
    to its own converter.
    """
    from MySQLdb.constants import FIELD_TYPE
    from MySQLdb.converters import conversions
    from MySQLdb.times import DateTime_or_None

    def datetime_or_none(value: str) -> datetime | None:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            converted: datetime | None = DateTime_or_None(value)
            return converted

    return {**conversions, FIELD_TYPE.DATETIME: datetime_or_none, FIELD_TYPE.TIMESTAMP: datetime_or_none}


def sqlite_engine(url: URL) -> sa.Engine:
    """An engine for a SQLite file, or for an in-memory database when the URL names no file."""
    in_memory = url.database in (None, "", ":memory:")
    options: dict[str, Any] = {
        "hide_parameters": True,
        # The HTTP facade calls the store from a thread pool.
        "connect_args": {"check_same_thread": False},
    }
    if in_memory:
        # Exactly one connection, handed to one thread at a time: every other connection would
        # see its own empty database, and a connection shared by threads at once (StaticPool)
        # interleaves their transactions.
        options.update(poolclass=QueuePool, pool_size=1, max_overflow=0)
    if not in_memory and url.database is not None and not url.database.startswith("file:"):
        create_private_file(Path(url.database))
    engine = sa.create_engine(url, **options)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let the "begin" listener below open transactions instead of pysqlite's own
        # heuristics, which do not cover reads and DDL.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # Freed pages are zeroed: a deleted memory, or the plaintext a row had before
        # `memorybank encrypt` sealed it, does not linger in the file.
        cursor.execute("PRAGMA secure_delete=ON")
        if not in_memory:
            # Readers do not block the writer, and the writer does not block readers.
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: sa.Connection) -> None:
        writing = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")

    return engine


def create_private_file(path: Path) -> None:
    """Create an empty database file readable by its owner only (0600), unless it exists already.

    SQLite would create it with the umask's mode (0644 usually); its `-wal` and `-shm` files take
    the database file's mode, so they are private too. An existing file's mode is left as it is.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass
    except OSError:
        # A directory that does not exist, or cannot be written: SQLite's own error says it better.
        return
