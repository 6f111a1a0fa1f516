"""`memorybank` with its database round trips counted: how many a request costs, route by route.

    MEMORYBANK_COUNT_OUT=/tmp/count python -m benchmarks.counted_serve serve --db URL

Runs the real command line in this process (one worker: the patches do not cross a spawn) with
every call that reaches the database server counted: on MySQL/MariaDB each `query` (every
statement, SQLAlchemy's and raw cursors' alike), `commit`, `rollback` and `ping` of a mysqlclient
connection; on SQLite each top-level statement the library runs (its trace callback), BEGIN and COMMIT
included, FTS5's own inner statements not. The running totals are kept in a 16-byte file the
benchmark reads before and after a batch of requests (`read_count`, `read_counts`): the requests' own, and
those of the thread that writes long saves' vectors after they answered (ADR 0045), apart. Statements are
counted, never recorded.
"""

from __future__ import annotations

import mmap
import os
import sqlite3
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.pool import Pool

from adapters_mysql.deferred_vectors import THREAD_NAME as VECTOR_THREAD
from memorybank.cli import main as memorybank_main

COUNT_ENV = "MEMORYBANK_COUNT_OUT"
_FORMAT = "<qq"


class Counter:
    """Two counts shared with another process through a small mapped file: the requests' round trips, and the
    vector thread's."""

    def __init__(self, path: Path) -> None:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(descriptor, struct.calcsize(_FORMAT))
            self._map = mmap.mmap(descriptor, struct.calcsize(_FORMAT))
        finally:
            os.close(descriptor)
        self.values = [0, 0]

    def add(self) -> None:
        """Count one more round trip, in the slot of the thread making it."""
        slot = 1 if threading.current_thread().name == VECTOR_THREAD else 0
        self.values[slot] += 1
        struct.pack_into(_FORMAT, self._map, 0, *self.values)


def read_counts(path: Path) -> tuple[int, int]:
    """The totals a counted server has written to `path` so far: the requests', then the vector thread's."""
    raw = path.read_bytes() if path.exists() else b""
    if len(raw) < struct.calcsize(_FORMAT):
        return 0, 0
    requests, vectors = struct.unpack_from(_FORMAT, raw)
    return int(requests), int(vectors)


def read_count(path: Path) -> int:
    """The requests' total a counted server has written to `path` so far (0 before its first)."""
    return read_counts(path)[0]


def _counted(original: Callable[..., Any], counter: Counter) -> Callable[..., Any]:
    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counter.add()
        return original(self, *args, **kwargs)

    return counted


def install(counter: Counter) -> None:
    """Count every round trip of mysqlclient connections and every SQLite statement from now on."""
    try:
        # Imported here: an install without the `mysql` extra still counts SQLite (and collects the tests).
        import MySQLdb.connections
    except ImportError:
        pass
    else:
        connection_class = MySQLdb.connections.Connection
        for name in ("query", "commit", "rollback", "ping"):
            setattr(connection_class, name, _counted(getattr(connection_class, name), counter))

    def count_top_level(statement: str) -> None:
        # SQLite reports the statements a virtual table (FTS5) runs inside one of ours with a leading "--".
        if not statement.startswith("--"):
            counter.add()

    def trace(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.set_trace_callback(count_top_level)

    event.listen(Pool, "connect", trace)


def run() -> int:
    """Run `memorybank` with this command line's arguments, counting round trips into $MEMORYBANK_COUNT_OUT."""
    install(Counter(Path(os.environ[COUNT_ENV])))
    return memorybank_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
