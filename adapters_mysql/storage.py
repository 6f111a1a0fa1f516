"""`SqlStorage`: everything the bank needs from one SQL database; `open_storage(url)` opens one.

A host with its own SQLAlchemy engine builds `SqlStorage(engine=…, indexer=…)` directly; the
owner-scoped search engine of the engine's dialect comes with it.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.engines import for_writing, mysql_engine, sqlite_engine
from adapters_mysql.errors import driver_error_code, unavailable_on_driver_error
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.mysql_search import MysqlOwnerScopedSearch
from adapters_mysql.owner_search import OwnerScopedSearch
from adapters_mysql.panel_session_store import SqlPanelSessionStore
from adapters_mysql.readiness import check_ready, ensure_search_index
from adapters_mysql.reindex import DEFAULT_BATCH_SIZE, count_to_reindex, reindex
from adapters_mysql.revisions import current_revision, stamp_head, upgrade_to_head
from adapters_mysql.schema import metadata
from adapters_mysql.sqlite_search import SqliteOwnerScopedSearch
from adapters_mysql.token_store import SqlTokenStore
from memorybank_core import InvalidInputError, UnavailableError
from memorybank_search import OwnerIndexer

_EXAMPLE_URLS = "sqlite:///memorybank.sqlite3 or mysql://user:password@host:3306/memorybank"

#: Accepted URL schemes and the SQLAlchemy driver each one means. `mysql://` is mysqlclient.
_DRIVERS = {
    "mysql": "mysql+mysqldb",
    "mysql+mysqldb": "mysql+mysqldb",
    "mysql+pymysql": "mysql+pymysql",
    "sqlite": "sqlite+pysqlite",
    "sqlite+pysqlite": "sqlite+pysqlite",
}

#: How to get each driver that is not part of the standard library.
_INSTALL_HINTS = {"mysqldb": "pip install 'memorybank[mysql]'", "pymysql": "pip install pymysql"}


#: The owner-scoped search engine of each dialect.
_SEARCH_ENGINES: dict[str, type[OwnerScopedSearch]] = {
    "mysql": MysqlOwnerScopedSearch,
    "sqlite": SqliteOwnerScopedSearch,
}


class SqlStorage:
    """Everything the bank needs from one SQL database: store, search, token and panel session stores, schema."""

    def __init__(self, *, engine: sa.Engine, indexer: OwnerIndexer, display_url: str) -> None:
        """Storage on `engine` (MySQL/MariaDB or SQLite); `display_url` names it in messages.

        Raises:
            InvalidInputError: ("db") the engine's dialect is neither MySQL nor SQLite.
        """
        search_engine = _SEARCH_ENGINES.get(engine.dialect.name)
        if search_engine is None:
            raise InvalidInputError(
                "db", f"uses the {engine.dialect.name} dialect; memorybank stores in MySQL or SQLite"
            )
        self.engine = engine
        self.dialect_name: str = engine.dialect.name
        self.indexer = indexer
        self.store = SqlMemoryStore(engine, indexer)
        self.search_engine: OwnerScopedSearch = search_engine(engine, indexer)
        self.token_store = SqlTokenStore(engine)
        self.panel_sessions = SqlPanelSessionStore(engine)
        self._display_url = display_url

    @property
    def fix_command(self) -> str:
        """The command that brings this database's schema up to date (no password in it)."""
        return f"memorybank migrate --db {self._display_url}"

    def initialize(self) -> None:
        """The fresh-install path: create missing tables and stamp head, then the search index. Idempotent.

        A database that already carries a revision is not migrated here (that is `migrate`):
        `check_ready` reports it if it is behind.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("initialize"), for_writing(self.engine).begin() as connection:
            if current_revision(connection) is None:
                metadata.create_all(connection)
                stamp_head(connection)
            ensure_search_index(connection)

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> None:
        """The migrate path (`memorybank migrate`): run pending migrations, repair the search index, re-index.

        Re-indexing covers rows whose search document an older scheme wrote (all rows, after
        upgrading from revision 0001); `progress` gets each batch's count.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("migrate"), for_writing(self.engine).begin() as connection:
            upgrade_to_head(connection)
            ensure_search_index(connection)
        self.reindex(progress=progress)

    def count_to_reindex(self, *, everything: bool = False) -> int:
        """How many memories `reindex` would rewrite: those indexed by an older scheme (or all).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return count_to_reindex(self.engine, everything=everything)

    def reindex(
        self,
        *,
        everything: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Rewrite the search document of memories indexed by an older scheme (or of all); the count.

        Batches of `batch_size` rows, each its own transaction; `progress` gets each batch's count.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        return reindex(self.engine, self.indexer, everything=everything, batch_size=batch_size, progress=progress)

    def check_ready(self) -> None:
        """Refuse to serve a database that is not at head or lacks its search index.

        Raises:
            SchemaNotReadyError: with a message naming `fix_command`.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("readiness check"), self.engine.connect() as connection:
            check_ready(connection, fix_command=self.fix_command)

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_storage(url: str, *, indexer: OwnerIndexer) -> SqlStorage:
    """Open SQL storage at `url` and check that the database answers.

    `url` is `mysql://user:pw@host:port/db` (mysqlclient), `mysql+pymysql://…`,
    `sqlite:///path/file.sqlite3`, or `sqlite://` (in memory, for tests). Search is the
    dialect's owner-scoped engine, with `indexer`'s search documents.
    The schema is not touched: call `initialize`, `migrate` or `check_ready` next.

    Raises:
        InvalidInputError: ("db") a malformed URL, an unsupported scheme, a missing database
            name or a missing driver.
        UnavailableError: the database cannot be reached.
    """
    given = _parse_url(url)
    engine = _open(given)
    # URL.set() ignores None, so the password is dropped with the NamedTuple's _replace.
    display_url = given._replace(password=None).render_as_string(hide_password=False)
    return SqlStorage(engine=engine, indexer=indexer, display_url=display_url)


def open_engine(url: str) -> sa.Engine:
    """The SQLAlchemy engine `open_storage` would use for `url`, checked to answer (for the alembic CLI).

    Raises:
        InvalidInputError: ("db") as for `open_storage`.
        UnavailableError: the database cannot be reached.
    """
    return _open(_parse_url(url))


def _open(given: URL) -> sa.Engine:
    engine = _create_engine(given)
    try:
        _ping(engine)
    except UnavailableError:
        engine.dispose()
        raise
    return engine


def _parse_url(url: object) -> URL:
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError("db", f"must be a database URL such as {_EXAMPLE_URLS}")
    try:
        parsed = sa.make_url(url.strip())
    except (sa.exc.ArgumentError, ValueError) as error:
        raise InvalidInputError("db", f"is not a database URL; use one such as {_EXAMPLE_URLS}") from error
    if parsed.drivername not in _DRIVERS:
        accepted = ", ".join(f"{scheme}://" for scheme in _DRIVERS)
        raise InvalidInputError("db", f"uses the unsupported scheme {parsed.drivername}://; use one of {accepted}")
    if parsed.get_backend_name() == "mysql" and not parsed.database:
        raise InvalidInputError("db", "must name the database, as in mysql://user:password@host:3306/memorybank")
    return parsed


def _create_engine(given: URL) -> sa.Engine:
    url = given.set(drivername=_DRIVERS[given.drivername])
    try:
        if url.get_backend_name() == "mysql":
            return mysql_engine(url)
        return sqlite_engine(url)
    except ImportError as error:
        install = _INSTALL_HINTS.get(url.get_driver_name(), "install its driver")
        raise InvalidInputError("db", f"needs the {url.get_driver_name()} driver: {install}") from error


def _ping(engine: sa.Engine) -> None:
    try:
        with engine.connect() as connection:
            connection.execute(sa.select(1))
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        # A connection failure's message names the host and the reason, never memory content.
        reason = getattr(error, "orig", error)
        raise UnavailableError(
            f"cannot connect to the database (driver error {driver_error_code(error)}): {reason}"
        ) from error
