"""One connection for a whole use case: `SqlUnitOfWork`, and how the store, search and tokens find it.

Inside `with unit_of_work():` every read and write of this storage's components runs on one
pooled connection, checked out once, on first use, instead of one checkout per call. Outside
one, each call checks out its own connection. The current connection lives in a
context variable: each request's thread-pool call has its own context, so requests never share.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from typing import Any, TypeVar

import sqlalchemy as sa

from adapters_mysql.engines import READ_OPTION, WRITE_OPTION, for_writing
from memorybank_core import UnitOfWork

_log = logging.getLogger("memorybank.storage")
T = TypeVar("T")


class _Unit:
    """The open unit of work of one engine's pool: its connection, checked out on first use."""

    __slots__ = ("ahead", "connection", "engine", "memo", "nested")

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.connection: sa.Connection | None = None
        self.memo: dict[object, Any] = {}
        """What the unit read once for all its callers (`per_unit`); forgotten on every write."""
        self.ahead: dict[object, Any] = {}
        """Rows read ahead, in a round trip that was going to the server anyway, for a read the unit runs next
        (`read_ahead`): each taken once; forgotten when a write begins."""
        self.nested = False
        """A use case opened a unit inside this one: the caller that opened it (a facade) holds it around
        the use case, so what the use case reads ahead outlives it (`kept_after_the_use_case`)."""

    def connect(self) -> sa.Connection:
        """The unit's connection: checked out on the first call, replaced when it was lost.

        Lazily, so a failing checkout happens inside the store call that needed it, where its
        retry (adapters_mysql.retrying) catches it. A connection lost mid-unit ends invalidated
        (or, lost inside a write transaction, closed); the retry of the failed call then gets a
        fresh one here, on the next host of a cluster.
        """
        current = self.connection
        if current is not None and not (current.invalidated or current.closed):
            return current
        if current is not None and not current.closed:
            current.close()
        # Reads until a write marks it (`writing`): on MySQL they run in autocommit, nothing left to end.
        self.connection = self.engine.connect().execution_options(**{READ_OPTION: True})
        return self.connection

    def close(self) -> None:
        """Return the connection, if one was checked out, to the pool.

        The use case is over and its answer stands (a save is committed): a connection that fails
        to end its read transaction now is dropped from the pool, not reported as a failure.
        """
        connection, self.connection = self.connection, None
        if connection is None:
            return
        try:
            connection.close()
        except sa.exc.DBAPIError as error:
            _log.warning("dropping a connection that failed to close (%s)", type(error.orig).__name__)
            with suppress(sa.exc.SQLAlchemyError):
                connection.invalidate()


_CURRENT: ContextVar[_Unit | None] = ContextVar("memorybank_sql_unit", default=None)


def _current(engine: sa.Engine) -> _Unit | None:
    unit = _CURRENT.get()
    # Engines made with `for_writing` share the pool: the pool says which database it is.
    if unit is not None and unit.engine.pool is engine.pool:
        return unit
    return None


class SqlUnitOfWork(UnitOfWork):
    """The `UnitOfWork` port over one SQLAlchemy engine; nested units share the outer one's connection."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    @contextmanager
    def __call__(self) -> Iterator[None]:
        outer = _current(self._engine)
        if outer is not None:
            outer.nested = True
            yield
            return
        unit = _Unit(self._engine)
        token = _CURRENT.set(unit)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            unit.close()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Hand the open unit's connection (if one was checked out) back to the pool for a block of CPU work.

        Only between storage calls, never inside a write: its read snapshot ends. The next call in the unit
        checks a connection out again, lazily, as the first one did.
        """
        unit = _current(self._engine)
        if unit is not None:
            unit.close()
        yield


def per_unit(engine: sa.Engine, key: object, read: Callable[[], T]) -> T:
    """`read()`, once per unit of work (kept under `key` until the unit writes), or on each call outside one."""
    unit = _current(engine)
    if unit is None:
        return read()
    if key not in unit.memo:
        unit.memo[key] = read()
    value: T = unit.memo[key]
    return value


def kept_after_the_use_case(engine: sa.Engine) -> bool:
    """Whether the open unit outlives the use case running in it: a caller (a facade's request) opened it
    around the use case's own, so rows read ahead now can serve that caller's next use case (a save's
    `similar` look-up, ADR 0042). Outside a unit, or in the use case's own unit alone, False."""
    unit = _current(engine)
    return unit is not None and unit.nested


def keep_ahead(engine: sa.Engine, key: object, rows: Any) -> None:
    """Keep `rows`, read ahead, for the unit's next read under `key` (`take_ahead`); nothing outside a unit."""
    unit = _current(engine)
    if unit is not None:
        unit.ahead[key] = rows


def take_ahead(engine: sa.Engine, key: object) -> Any | None:
    """The rows read ahead under `key` in the open unit, once (taken, not copied); None when there are none."""
    unit = _current(engine)
    if unit is None or not unit.ahead:
        return None
    return unit.ahead.pop(key, None)


@contextmanager
def reading(engine: sa.Engine) -> Iterator[sa.Connection]:
    """The unit's connection, or a fresh one for this call alone."""
    unit = _current(engine)
    if unit is not None:
        yield unit.connect()
        return
    with engine.connect() as connection:
        yield connection.execution_options(**{READ_OPTION: True})


@contextmanager
def writing(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A write transaction, committed at the end of the block (rolled back on error).

    On the unit's connection when one is open: its read snapshot (if any) ends first, and the
    transaction is marked as a write (SQLite takes its write lock at BEGIN, see `engines`).
    """
    unit = _current(engine)
    if unit is None:
        with for_writing(engine).begin() as connection:
            yield connection
        return
    current = unit.connect()
    unit.memo.clear()  # a write may change what was read
    unit.ahead.clear()
    if current.in_transaction():
        current.commit()  # only reads so far: end their snapshot
    current.execution_options(**{WRITE_OPTION: True})
    try:
        with current.begin():
            yield current
    finally:
        unit.memo.clear()
        current.execution_options(**{WRITE_OPTION: False})
