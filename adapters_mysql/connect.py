"""Opening a database from its URL: the scheme's driver, the engine, one ping; creating a missing MySQL database.

`open_engine(url)` is what `open_storage` and the alembic CLI connect with; `create_database(url)` is
what `memorybank migrate` runs when the server answers but the database is missing.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.engines import mysql_engine, sqlite_engine
from adapters_mysql.errors import driver_error_code, driver_error_detail, unavailable_on_driver_error
from adapters_mysql.failover import Host, HostRing, display_hosts, fail_over_between, split_hosts
from adapters_mysql.spider import is_spider_head
from memorybank_core import InvalidInputError, MemoryBankError, UnavailableError
from memorybank_core.distribution import install_command

_EXAMPLE_URLS = "sqlite:///memorybank.sqlite3 or mysql://user:password@host:3306/memorybank"

#: Accepted URL schemes and the SQLAlchemy driver each one means. `mysql://` is mysqlclient.
_DRIVERS = {
    "mysql": "mysql+mysqldb",
    "mysql+mysqldb": "mysql+mysqldb",
    "mysql+pymysql": "mysql+pymysql",
    "sqlite": "sqlite+pysqlite",
    "sqlite+pysqlite": "sqlite+pysqlite",
}

#: MySQL error codes: the database named in the URL does not exist; the account may not create it.
_UNKNOWN_DATABASE = 1049
_DATABASE_ACCESS_DENIED = 1044
_ACCESS_DENIED = frozenset({1044, 1045, 1142, 1227})

#: A database name we can quote safely in CREATE DATABASE (an identifier cannot be a bind parameter).
_DATABASE_NAME = re.compile(r"^[A-Za-z0-9_$]{1,64}$")

#: How to get each driver that is not part of the standard library: memorybank's extra, or the package.
_DRIVER_EXTRAS = {"mysqldb": "mysql"}
_DRIVER_PACKAGES = {"pymysql": "pip install pymysql"}


class DatabaseMissingError(UnavailableError):
    """The server answers but the database the URL names does not exist, or is closed to the account (1049, 1044)."""


class CreateDatabaseRefusedError(MemoryBankError, RuntimeError):
    """The account may not create the missing database; the message holds the statement to run instead."""


class OpenedDatabase(NamedTuple):
    """A database `open_database` reached."""

    engine: sa.Engine
    display_url: str
    """The URL to name it by in messages: every host, no password."""
    spider_head: bool
    """True for a Spider head (adapters_mysql.spider)."""


def open_database(url: str) -> OpenedDatabase:
    """The engine for `url` (see `open_storage`), checked to answer, and what it is.

    Raises:
        InvalidInputError: ("db") a malformed URL, an unsupported scheme, a missing database
            name or a missing driver.
        UnavailableError: the database cannot be reached.
    """
    given, hosts = _parse_url(url)
    engine = _open(given, hosts)
    try:
        spider_head = _is_spider_head(engine)
    except UnavailableError:
        engine.dispose()
        raise
    return OpenedDatabase(engine, display_hosts(given, hosts), spider_head)


def open_engine(url: str) -> sa.Engine:
    """The SQLAlchemy engine `open_storage` would use for `url`, checked to answer (for the alembic CLI).

    Raises:
        InvalidInputError: ("db") as for `open_storage`.
        UnavailableError: the database cannot be reached.
    """
    return _open(*_parse_url(url))


def _open(given: URL, hosts: tuple[Host, ...]) -> sa.Engine:
    engine = _create_engine(given)
    if hosts:
        fail_over_between(engine, HostRing(hosts))
    try:
        _ping(engine)
    except UnavailableError:
        engine.dispose()
        raise
    return engine


def _parse_url(url: object) -> tuple[URL, tuple[Host, ...]]:
    """The URL with its first host, and every host when it names several (one cluster)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError("db", f"must be a database URL such as {_EXAMPLE_URLS}")
    single_host, hosts = split_hosts(url.strip())
    try:
        parsed = sa.make_url(single_host)
    except (sa.exc.ArgumentError, ValueError) as error:
        raise InvalidInputError("db", f"is not a database URL; use one such as {_EXAMPLE_URLS}") from error
    if parsed.drivername not in _DRIVERS:
        accepted = ", ".join(f"{scheme}://" for scheme in _DRIVERS)
        raise InvalidInputError("db", f"uses the unsupported scheme {parsed.drivername}://; use one of {accepted}")
    if parsed.get_backend_name() == "mysql" and not parsed.database:
        raise InvalidInputError("db", "must name the database, as in mysql://user:password@host:3306/memorybank")
    if hosts and parsed.get_backend_name() != "mysql":
        raise InvalidInputError("db", "names several hosts, which only a mysql:// URL may")
    return parsed, hosts


def _create_engine(given: URL) -> sa.Engine:
    url = given.set(drivername=_DRIVERS[given.drivername])
    try:
        if url.get_backend_name() == "mysql":
            return mysql_engine(url)
        return sqlite_engine(url)
    except ImportError as error:
        driver = url.get_driver_name()
        extra = _DRIVER_EXTRAS.get(driver)
        install = install_command(extra) if extra else _DRIVER_PACKAGES.get(driver, "install its driver")
        raise InvalidInputError("db", f"needs the {driver} driver: {install}") from error


def _is_spider_head(engine: sa.Engine) -> bool:
    if engine.dialect.name != "mysql":
        return False
    with unavailable_on_driver_error("open"), engine.connect() as connection:
        return is_spider_head(connection)


def _ping(engine: sa.Engine) -> None:
    try:
        with engine.connect() as connection:
            connection.execute(sa.select(1))
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        # A connection failure's message names the host and the reason, never memory content.
        reason = getattr(error, "orig", error)
        code = driver_error_code(error)
        if code == _UNKNOWN_DATABASE:
            raise DatabaseMissingError(
                f"the database {engine.url.database} does not exist on the server: "
                "`memorybank migrate` creates it (utf8mb4)"
            ) from error
        if code == _DATABASE_ACCESS_DENIED:
            # The server says this, not 1049, to an account without rights on the database, whether it exists or not.
            raise DatabaseMissingError(
                f"this account may not use the database {engine.url.database}{driver_error_detail(error)}: it does not "
                "exist yet (`memorybank migrate` creates it) or the account lacks privileges on it"
            ) from error
        raise UnavailableError(f"cannot connect to the database{driver_error_detail(error)}: {reason}") from error


def create_database_statement(url: str) -> str:
    """The CREATE DATABASE statement for the MySQL database `url` names (utf8mb4, as the schema needs).

    Raises:
        InvalidInputError: ("db") a URL `open_storage` refuses, not MySQL, or a database name
            outside `[A-Za-z0-9_$]`.
    """
    parsed, _hosts = _parse_url(url)
    if parsed.get_backend_name() != "mysql":
        raise InvalidInputError("db", "must be a mysql:// URL to create its database")
    name = parsed.database or ""
    if not _DATABASE_NAME.match(name):
        raise InvalidInputError("db", "must name a database of letters, digits, _ and $ to be created by memorybank")
    return f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"


def create_database(url: str) -> None:
    """Create the MySQL database `url` names, on the server it names, if it does not exist.

    Raises:
        InvalidInputError: see `create_database_statement`.
        CreateDatabaseRefusedError: the account lacks the privilege; the message holds the statement.
        UnavailableError: the server cannot be reached.
    """
    statement = create_database_statement(url)
    # URL.set() ignores None; _replace really drops the database, so we connect to the server alone.
    engine = _create_engine(_parse_url(url)[0]._replace(database=None))
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(statement)
    except (sa.exc.OperationalError, sa.exc.ProgrammingError, sa.exc.InterfaceError) as error:
        code = driver_error_code(error)
        if code in _ACCESS_DENIED:
            raise CreateDatabaseRefusedError(
                f"the database {_parse_url(url)[0].database} is missing or not open to this account, which may not "
                f"create it{driver_error_detail(error)}; ask an administrator to run: {statement}; and to grant this "
                "account ALL PRIVILEGES on it; then run `memorybank migrate` again"
            ) from error
        raise UnavailableError(
            f"cannot create the database{driver_error_detail(error)}: {getattr(error, 'orig', error)}"
        ) from error
    finally:
        engine.dispose()
