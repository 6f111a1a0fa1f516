"""Storage errors, and the one place driver errors become core errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc

from memorybank_core import MemoryBankError, SchemaUnavailableError, UnavailableError

_log = logging.getLogger("memorybank.storage")

#: Driver failures that mean "the database cannot serve us right now": down, connection lost,
#: pool exhausted, lock wait timeout, deadlock. Retrying later may succeed.
_UNAVAILABLE = (exc.OperationalError, exc.InterfaceError, exc.DisconnectionError, exc.TimeoutError)
#: MySQL errors that mean the schema is gone under us (dropped while serving, or never migrated): no
#: database selected, unknown database, unknown column, no such table. Retrying cannot fix them.
_SCHEMA_GONE = frozenset({1046, 1049, 1054, 1146})
#: SQLite says the same in words only (its error code is the generic SQLITE_ERROR).
_SQLITE_SCHEMA_GONE = ("no such table:", "no such column:")


class SchemaNotReadyError(MemoryBankError, RuntimeError):
    """The database schema is not what this version of memorybank serves; the message names the fix."""


def driver_error_code(error: BaseException) -> int | None:
    """The numeric MySQL error code behind a SQLAlchemy error (1061, 2006, …), if there is one."""
    original = getattr(error, "orig", error)
    args = getattr(original, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def driver_error_detail(error: BaseException) -> str:
    """` (driver error 2003)` for a message, or nothing when the driver gives no code (SQLite)."""
    code = driver_error_code(error)
    return f" (driver error {code})" if code is not None else ""


@contextmanager
def unavailable_on_driver_error(operation: str) -> Iterator[None]:
    """Translate availability failures of the driver into `UnavailableError` at the boundary.

    The message names the operation and the driver's error code only: driver messages may
    quote statements, and statements carry memory content.

    Raises:
        SchemaUnavailableError: the database answers, but a table (or the database) is not there.
        UnavailableError: the database is down, the connection was lost, or a lock timed out.
    """
    try:
        yield
    except (exc.OperationalError, exc.ProgrammingError) as error:
        if not schema_gone(error):
            if isinstance(error, exc.ProgrammingError):
                raise  # bad SQL: a bug, answered as one
            raise _unavailable(operation, error) from error
        _log.warning("storage schema missing during %s%s", operation, driver_error_detail(error))
        raise SchemaUnavailableError(f"the database schema is missing during {operation}") from error
    except _UNAVAILABLE as error:
        raise _unavailable(operation, error) from error


def schema_gone(error: exc.DBAPIError) -> bool:
    """True when `error` says a table, column or the database itself does not exist."""
    if driver_error_code(error) in _SCHEMA_GONE:
        return True
    return str(getattr(error, "orig", "")).startswith(_SQLITE_SCHEMA_GONE)


def _unavailable(operation: str, error: BaseException) -> UnavailableError:
    detail = driver_error_detail(error)
    _log.warning("storage unavailable during %s (%s)%s", operation, type(error).__name__, detail)
    return UnavailableError(f"the database is unavailable during {operation}{detail}")
