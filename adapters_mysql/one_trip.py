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
  raised by that query, as for one statement;
- such a query may end its transaction and then read (`committing_then_reading`: a save's `COMMIT`,
  then the candidates of its `similar` look-up, ADR 0042): the writes' and the commit's errors are
  raised as before; a read that fails after the commit only leaves its rows unread, never fails the
  committed write.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from MySQLdb import Error
from MySQLdb.connections import Connection

_START = b"START TRANSACTION;"
_log = logging.getLogger("memorybank.storage")

RawRows = tuple[tuple[Any, ...], ...]
"""A result set as the driver returns it (mysqlclient's own conversions applied)."""


class CommitThenRead:
    """What a query sent under `OneTripConnection.committing_then_reading` holds: `statements` statements whose
    results are only checked, the last of them the `COMMIT`, then `reads` SELECTs; `rows` gets each read's
    result set, or None for one that failed (and every one after it)."""

    __slots__ = ("reads", "rows", "statements")

    def __init__(self, statements: int, reads: int) -> None:
        self.statements = statements
        self.reads = reads
        self.rows: list[RawRows | None] = []


class OneTripConnection(Connection):  # type: ignore[misc]  # mysqlclient ships no type hints
    """A mysqlclient connection in autocommit mode whose explicit transactions begin with their first statement."""

    _transaction_open = False
    """A transaction is open on the server (a `START TRANSACTION` went out, no `COMMIT`/`ROLLBACK` yet)."""
    _begin_pending = False
    """A transaction was begun and has sent nothing yet."""
    _read_every_result = False
    """The next query's statements are all writes: read every result (raising any error) before returning."""
    _commit_then_read: CommitThenRead | None = None
    """The next query's writes end with a `COMMIT`, then reads (`committing_then_reading`)."""

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

    @contextmanager
    def committing_then_reading(self, statements: int, reads: int) -> Iterator[CommitThenRead]:
        """Within the block, the query sent is `statements` statements, the last a `COMMIT`, then `reads` SELECTs.

        The query checks each statement's result up to the commit (raising the first error: the transaction
        is then still open, to be rolled back) and, once the commit succeeded, the transaction is over; it
        then reads each SELECT's rows into the plan it yields. A read that fails after the commit is logged by
        type and leaves None for itself and those after it: the committed write stands.
        """
        plan = CommitThenRead(statements, reads)
        self._commit_then_read = plan
        try:
            yield plan
        finally:
            self._commit_then_read = None

    def begin_lazily(self) -> None:
        """Begin a transaction with the next statement (nothing is sent now)."""
        if not self._transaction_open:
            self._begin_pending = True

    def query(self, query: Any) -> None:
        """Send `query`; the transaction's `START TRANSACTION` first when one is pending, in the same round trip."""
        read_every_result, self._read_every_result = self._read_every_result, False
        plan, self._commit_then_read = self._commit_then_read, None
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
        elif plan is not None:
            self._commit_and_read(plan)

    def _commit_and_read(self, plan: CommitThenRead) -> None:
        # The first statement's result was read by `query`; each next one up to the COMMIT raises its error.
        for _ in range(plan.statements - 1):
            self.next_result()
        self._transaction_open = False
        try:
            for _ in range(plan.reads):
                if self.next_result() != 0:
                    break
                result = self.store_result()
                plan.rows.append(result.fetch_row(0) if result is not None else ())
        except Error as error:
            _log.warning("a read after a commit failed (%s): read again when asked", type(error).__name__)
            # The server ran nothing after the failed statement; this clears the driver's error, so the cursor
            # that sent the query finds no result left (rather than that error again).
            with suppress(Error):
                self.next_result()
        plan.rows += [None] * (plan.reads - len(plan.rows))

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
