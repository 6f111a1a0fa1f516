"""`SqlStorage`: everything the bank needs from one SQL database; `open_storage(url)` opens one.

A host with its own SQLAlchemy engine builds `SqlStorage(engine=…, indexer=…)` directly; the
owner-scoped search engine of the engine's dialect comes with it. With a `sealer` (encryption at
rest, docs/security.md) the store seals what it writes and the indexer must write its blind index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.engines import for_writing, mysql_engine, sqlite_engine
from adapters_mysql.errors import driver_error_code, unavailable_on_driver_error
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.mysql_search import MysqlOwnerScopedSearch
from adapters_mysql.owner_search import OwnerScopedSearch
from adapters_mysql.readiness import check_ready, ensure_search_index
from adapters_mysql.reindex import DEFAULT_BATCH_SIZE, ReindexReport, count_to_reindex, reindex
from adapters_mysql.revisions import current_revision, stamp_head, upgrade_to_head
from adapters_mysql.schema import metadata
from adapters_mysql.seal_keys import (
    SealStatus,
    check_values,
    close_plaintext,
    forget_unused,
    read_status,
    register_primary,
    verify,
)
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.sqlite_search import SqliteOwnerScopedSearch, purge_rewritten_text
from adapters_mysql.token_store import SqlTokenStore
from memorybank_core import BlindIndex, InvalidInputError, Sealer, UnavailableError
from memorybank_search import OwnerIndexer

_log = logging.getLogger("memorybank.storage")

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
    """Everything the bank needs from one SQL database: store, search engine, token store, schema tools."""

    def __init__(
        self, *, engine: sa.Engine, indexer: OwnerIndexer, display_url: str, sealer: Sealer | None = None
    ) -> None:
        """Storage on `engine` (MySQL/MariaDB or SQLite); `display_url` names it in messages.

        With `sealer`, `indexer` must write that sealer's blind index (`OwnerIndexer(blind_index=sealer.index)`).

        Raises:
            InvalidInputError: ("db") the engine's dialect is neither MySQL nor SQLite.
            ValueError: the indexer does not write the sealer's blind index (or writes one without a sealer).
        """
        search_engine = _SEARCH_ENGINES.get(engine.dialect.name)
        if search_engine is None:
            raise InvalidInputError(
                "db", f"uses the {engine.dialect.name} dialect; memorybank stores in MySQL or SQLite"
            )
        written = indexer.blind_index.key_id if indexer.blind_index is not None else None
        if written != (sealer.index.key_id if sealer is not None else None):
            # Sealed text with readable search tokens (or the reverse) would defeat the point.
            raise ValueError("the indexer must write the sealer's blind index, and only with a sealer")
        self.engine = engine
        self.dialect_name: str = engine.dialect.name
        self.indexer = indexer
        self.sealer = sealer
        self.codec = RowCodec(sealer, index_key_id=written)
        self.store = SqlMemoryStore(engine, indexer, self.codec)
        self.search_engine: OwnerScopedSearch = search_engine(engine, indexer)
        self.token_store = SqlTokenStore(engine)
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
        self._adopt_sealing()

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> None:
        """The migrate path (`memorybank migrate`): run pending migrations, repair the search index, re-index.

        Re-indexing covers rows whose search document an older scheme wrote (all rows, after
        upgrading from revision 0001) and, with a key ring, rows not yet sealed under its keys;
        `progress` gets each batch's count.

        Raises:
            KeyRingError: the database holds sealed memories the configured key ring cannot open.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("migrate"), for_writing(self.engine).begin() as connection:
            upgrade_to_head(connection)
            ensure_search_index(connection)
        self._adopt_sealing()
        self.reindex(progress=progress)

    def count_to_reindex(self, *, everything: bool = False) -> int:
        """How many memories `reindex` would rewrite: indexed by an older scheme or sealed by other keys (or all).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return count_to_reindex(self.engine, self.codec, everything=everything)

    def reindex(
        self,
        *,
        everything: bool = False,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> ReindexReport:
        """Rewrite memories indexed by an older scheme or sealed by other keys (or all) under the current ones.

        This is `memorybank reindex`, `encrypt` and `keys rotate`: batches of `batch_size` rows, each
        its own transaction, beside a live server; `progress` gets each batch's count. At the end,
        key-check values of keys no row needs are dropped, and a database whose rows are now all
        sealed refuses plaintext rows from its next start on.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        report = reindex(
            self.engine, self.indexer, self.codec, everything=everything, batch_size=batch_size, progress=progress
        )
        if self.sealer is not None and not report.broken:
            with unavailable_on_driver_error("reindex"), for_writing(self.engine).begin() as connection:
                if not read_status(connection).plaintext_rows:
                    close_plaintext(connection, self.sealer)
                forget_unused(connection, self.sealer)
        if self.dialect_name == "sqlite":
            with unavailable_on_driver_error("reindex"):
                purge_rewritten_text(self.engine)
        return report

    def sealing_status(self) -> SealStatus:
        """The database's key-check ids and how many memories carry each seal state.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("sealing status"), self.engine.connect() as connection:
            return read_status(connection)

    def describe_mode(self) -> str:
        """One line saying whether this database is plaintext or sealed at rest, and what is left to do.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return self.sealing_status().describe(self.codec.state)

    def _adopt_sealing(self) -> None:
        """Check the key ring against the database, register its primary key, and learn the rows' schemes.

        Queries then also match rows still tokenized under an older scheme (plaintext, an old index
        key) until they are re-sealed; a plaintext row is refused once every row was sealed.
        """
        with unavailable_on_driver_error("key check"), for_writing(self.engine).begin() as connection:
            status = read_status(connection)
            closed = verify(status, self.sealer, check_values(connection))
            if self.sealer is not None:
                register_primary(connection, self.sealer, closed=closed or not status.plaintext_rows)
        _log.info("database mode: %s", status.describe(self.codec.state))
        if self.sealer is None:
            return
        allowed = bool(status.plaintext_rows) and not closed
        schemes: list[BlindIndex | None] = [None] if allowed else []
        schemes += [index for key_id in status.index_key_ids() if (index := self.sealer.index_for(key_id)) is not None]
        self.indexer.also_search(schemes)
        self.codec.plaintext_allowed = allowed

    def check_ready(self) -> None:
        """Refuse to serve a database that is not at head or lacks its search index.

        Also checks the key ring against the database (and logs which mode it is in).

        Raises:
            SchemaNotReadyError: with a message naming `fix_command`.
            KeyRingError: the database holds sealed memories the configured key ring (or none) cannot open.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("readiness check"), self.engine.connect() as connection:
            check_ready(connection, fix_command=self.fix_command)
        self._adopt_sealing()

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_storage(url: str, *, indexer: OwnerIndexer, sealer: Sealer | None = None) -> SqlStorage:
    """Open SQL storage at `url` and check that the database answers.

    `url` is `mysql://user:pw@host:port/db` (mysqlclient), `mysql+pymysql://…`,
    `sqlite:///path/file.sqlite3`, or `sqlite://` (in memory, for tests). Search is the
    dialect's owner-scoped engine, with `indexer`'s search documents. With a `sealer`
    (encryption at rest) every stored user text is sealed and `indexer` must write its blind index.
    The schema is not touched: call `initialize`, `migrate` or `check_ready` next (they also
    check the key ring against the database).

    Raises:
        InvalidInputError: ("db") a malformed URL, an unsupported scheme, a missing database
            name or a missing driver.
        UnavailableError: the database cannot be reached.
    """
    given = _parse_url(url)
    engine = _open(given)
    # URL.set() ignores None, so the password is dropped with the NamedTuple's _replace.
    display_url = given._replace(password=None).render_as_string(hide_password=False)
    return SqlStorage(engine=engine, indexer=indexer, display_url=display_url, sealer=sealer)


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
