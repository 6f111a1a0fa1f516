"""mysqlclient connections that make no round trip they can avoid: reads in autocommit, lazy transactions.

A request on MariaDB used to end with the pool's `ROLLBACK` (its reads had opened a REPEATABLE READ
snapshot that must not outlive the request, or the next one would miss a revocation) and, for a
save, an extra `COMMIT` that ended that snapshot before the write. `OneTripConnection` removes both:

- it is opened in autocommit mode, so a read outside a write transaction is its own snapshot and
  leaves nothing open: nothing to end, no reset to send when it goes back to the pool, and an idle
  pooled connection holds no read view or metadata lock;
- a write transaction (any transaction SQLAlchemy begins that is not marked as a read, see
  `engines`) starts lazily: `START TRANSACTION` travels in front of the transaction's first
  statement, in the same round trip (the connection allows several statements per query; every
  value is still bound by mysqlclient's escaping, never pasted in);
- `commit` and `rollback` go to the server only while a transaction is open there;
- writes whose results nobody reads (a save's memory and contexts) go as one query of several
  statements (`reading_every_result`, `compiled_reads.insert_together`): an error in any of them is
  raised by that query, as for one statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from MySQLdb.connections import Connection

_START = b"START TRANSACTION;"


class OneTripConnection(Connection):  # type: ignore[misc]  # mysqlclient ships no type hints
    """A mysqlclient connection in autocommit mode whose explicit transactions begin with their first statement."""

    _transaction_open = False
    """A transaction is open on the server (a `START TRANSACTION` went out, no `COMMIT`/`ROLLBACK` yet)."""
    _begin_pending = False
    """A transaction was begun and has sent nothing yet."""
    _read_every_result = False
    """The next query's statements are all writes: read every result (raising any error) before returning."""

    @contextmanager
    def reading_every_result(self) -> Iterator[None]:
        """Within the block, the query sent reads all its statements' results before it returns.

        For statements sent together whose results nobody reads (their row counts are the last one's);
        never for a query with a result set.
        """
        self._read_every_result = True
        try:
            yield
        finally:
            self._read_every_result = False

    def begin_lazily(self) -> None:
        """Begin a transaction with the next statement (nothing is sent now)."""
        if not self._transaction_open:
            self._begin_pending = True

    def query(self, query: Any) -> None:
        """Send `query`; the transaction's `START TRANSACTION` first when one is pending, in the same round trip."""
        read_every_result, self._read_every_result = self._read_every_result, False
        if self._begin_pending:
            self._begin_pending = False
            statement = query.encode(self.encoding) if isinstance(query, str) else bytes(query)
            super().query(_START + statement)
            self._transaction_open = True
            # The first result is START TRANSACTION's; the statement's own, or its error, is read next.
            self.next_result()
        else:
            super().query(query)
        if read_every_result:
            # Each further statement's result, raising the first error; the cursor then reads the last one.
            while self.next_result() == 0:
                pass

    def commit(self) -> None:
        """Commit the open transaction, if the server has one."""
        self._begin_pending = False
        if self._transaction_open:
            super().commit()
            self._transaction_open = False

    def rollback(self) -> None:
        """Roll the open transaction back, if the server has one."""
        self._begin_pending = False
        if self._transaction_open:
            super().rollback()
            self._transaction_open = False
