"""Storage errors, and the one place driver errors become core errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc

from memorybank_core import MemoryBankError, UnavailableError

_log = logging.getLogger("memorybank.storage")

#: Driver failures that mean "the database cannot serve us right now": down, connection lost,
#: pool exhausted, lock wait timeout, deadlock. Retrying later may succeed.
_UNAVAILABLE = (exc.OperationalError, exc.InterfaceError, exc.DisconnectionError, exc.TimeoutError)


class SchemaNotReadyError(MemoryBankError, RuntimeError):
    """The database schema is not what this version of memorybank serves; the message names the fix."""


def driver_error_code(error: BaseException) -> int | None:
    """The numeric MySQL error code behind a SQLAlchemy error (1061, 2006, …), if there is one."""
    original = getattr(error, "orig", error)
    args = getattr(original, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


@contextmanager
def unavailable_on_driver_error(operation: str) -> Iterator[None]:
    """Translate availability failures of the driver into `UnavailableError` at the boundary.

    The message names the operation and the driver's error code only: driver messages may
    quote statements, and statements carry memory content.

    Raises:
        UnavailableError: the database is down, the connection was lost, or a lock timed out.
    """
    try:
        yield
    except _UNAVAILABLE as error:
        code = driver_error_code(error)
        _log.warning("storage unavailable during %s (%s, code %s)", operation, type(error).__name__, code)
        detail = f" (driver error {code})" if code is not None else ""
        raise UnavailableError(f"the database is unavailable during {operation}{detail}") from error
