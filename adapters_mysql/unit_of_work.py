"""One connection for a whole use case: `SqlUnitOfWork`, and how the store, search and tokens find it.

Inside `with unit_of_work():` every read and write of this storage's components runs on one
pooled connection, checked out (and pinged) once, instead of one checkout per call. Outside
one, each call checks out its own connection, as before. The current connection lives in a
context variable: each request's thread-pool call has its own context, so requests never share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import sqlalchemy as sa

from adapters_mysql.engines import WRITE_OPTION, for_writing
from adapters_mysql.errors import unavailable_on_driver_error
from memorybank_core import UnitOfWork

_CURRENT: ContextVar[tuple[sa.pool.Pool, sa.Connection] | None] = ContextVar("memorybank_sql_unit", default=None)


def _current(engine: sa.Engine) -> sa.Connection | None:
    current = _CURRENT.get()
    # Engines made with `for_writing` share the pool: the pool says which database it is.
    if current is not None and current[0] is engine.pool:
        return current[1]
    return None


class SqlUnitOfWork(UnitOfWork):
    """The `UnitOfWork` port over one SQLAlchemy engine; nested units share the outer one's connection."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if _current(self._engine) is not None:
            yield
            return
        with unavailable_on_driver_error("connect"), self._engine.connect() as connection:
            token = _CURRENT.set((self._engine.pool, connection))
            try:
                yield
            finally:
                _CURRENT.reset(token)


@contextmanager
def reading(engine: sa.Engine) -> Iterator[sa.Connection]:
    """The unit's connection, or a fresh one for this call alone."""
    current = _current(engine)
    if current is not None:
        yield current
        return
    with engine.connect() as connection:
        yield connection


@contextmanager
def writing(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A write transaction, committed at the end of the block (rolled back on error).

    On the unit's connection when one is open: its read snapshot (if any) ends first, and the
    transaction is marked as a write (SQLite takes its write lock at BEGIN, see `engines`).
    """
    current = _current(engine)
    if current is None:
        with for_writing(engine).begin() as connection:
            yield connection
        return
    if current.in_transaction():
        current.commit()  # only reads so far: end their snapshot
    current.execution_options(**{WRITE_OPTION: True})
    try:
        with current.begin():
            yield current
    finally:
        current.execution_options(**{WRITE_OPTION: False})
