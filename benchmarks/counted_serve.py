"""`memorybank` with its database round trips counted: how many a request costs, route by route.

    MEMORYBANK_COUNT_OUT=/tmp/count python -m benchmarks.counted_serve serve --db URL

Runs the real command line in this process (one worker: the patches do not cross a spawn) with
every call that reaches the database server counted: on MySQL/MariaDB each `query` (every
statement, SQLAlchemy's and raw cursors' alike), `commit`, `rollback` and `ping` of a mysqlclient
connection; on SQLite each top-level statement the library runs (its trace callback), BEGIN and COMMIT
included, FTS5's own inner statements not. The running total is kept in an 8-byte file the
benchmark reads before and after a batch of requests (`read_count`). Statements are counted, never
recorded.
"""

from __future__ import annotations

import mmap
import os
import sqlite3
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.pool import Pool

from memorybank.cli import main as memorybank_main

COUNT_ENV = "MEMORYBANK_COUNT_OUT"
_FORMAT = "<q"


class Counter:
    """A count shared with another process through a small mapped file."""

    def __init__(self, path: Path) -> None:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(descriptor, struct.calcsize(_FORMAT))
            self._map = mmap.mmap(descriptor, struct.calcsize(_FORMAT))
        finally:
            os.close(descriptor)
        self.value = 0

    def add(self) -> None:
        """Count one more round trip."""
        self.value += 1
        struct.pack_into(_FORMAT, self._map, 0, self.value)


def read_count(path: Path) -> int:
    """The total a counted server has written to `path` so far (0 before its first)."""
    raw = path.read_bytes() if path.exists() else b""
    return int(struct.unpack_from(_FORMAT, raw)[0]) if len(raw) >= struct.calcsize(_FORMAT) else 0


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
