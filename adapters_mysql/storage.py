"""`open_storage`: the one entry point the composition root calls to get SQL storage."""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.bootstrap import bootstrap, check_ready
from adapters_mysql.engines import for_writing, mysql_engine, sqlite_engine
from adapters_mysql.errors import driver_error_code, unavailable_on_driver_error
from adapters_mysql.mysql_fulltext import MysqlFulltextSearch
from adapters_mysql.owner_fulltext import MysqlOwnerScopedSearch
from adapters_mysql.owner_index import OwnerIndexer
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
from adapters_mysql.sqlite_fts5 import Fts5Search
from adapters_mysql.sqlite_owner_fts5 import Fts5OwnerScopedSearch, purge_rewritten_text
from adapters_mysql.store import SqlMemoryStore
from adapters_mysql.token_store import SqlTokenStore
from memorybank_core import BlindIndex, InvalidInputError, Sealer, SearchEngine, UnavailableError

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


@attrs.frozen
class _SearchKind:
    make: Callable[[sa.Engine, OwnerIndexer], SearchEngine]
    dialects: frozenset[str]


def _owner_scoped(engine: sa.Engine, indexer: OwnerIndexer) -> SearchEngine:
    if engine.dialect.name == "mysql":
        return MysqlOwnerScopedSearch(engine, indexer)
    return Fts5OwnerScopedSearch(engine, indexer)


#: Search engines by name: `owner` (owner-scoped tagged tokens, exact per-owner BM25; the default)
#: on both dialects, and the seed-literal engines `fulltext` (MySQL) and `fts5` (SQLite).
SEARCH_ENGINES: dict[str, _SearchKind] = {
    "owner": _SearchKind(_owner_scoped, frozenset({"mysql", "sqlite"})),
    "fulltext": _SearchKind(lambda engine, _indexer: MysqlFulltextSearch(engine), frozenset({"mysql"})),
    "fts5": _SearchKind(lambda engine, _indexer: Fts5Search(engine), frozenset({"sqlite"})),
}
DEFAULT_SEARCH: dict[str, str] = {"mysql": "owner", "sqlite": "owner"}
#: The engines that search the blind index, so they work on sealed text.
SEARCHES_SEALED_TEXT = frozenset({"owner"})


class SqlStorage:
    """Everything the bank needs from one SQL database: store, search engine, token store, schema tools."""

    def __init__(
        self,
        *,
        engine: sa.Engine,
        search_engine: SearchEngine,
        display_url: str,
        indexer: OwnerIndexer | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        self.engine = engine
        self.dialect_name: str = engine.dialect.name
        self.sealer = sealer
        self.indexer = indexer or OwnerIndexer(blind_index=sealer.index if sealer is not None else None)
        self.codec = RowCodec(sealer, index_key_id=sealer.index.key_id if sealer is not None else None)
        self.store = SqlMemoryStore(engine, self.indexer, self.codec)
        self.search_engine = search_engine
        self.token_store = SqlTokenStore(engine)
        self._display_url = display_url

    @property
    def fix_command(self) -> str:
        """The command that brings this database's schema up to date (no password in it)."""
        return f"memorybank migrate --db {self._display_url}"

    def initialize(self) -> None:
        """The fresh-install path: create missing tables and stamp head, then bootstrap. Idempotent.

        A database that already carries a revision is not migrated here (that is `migrate`):
        `check_ready` reports it if it is behind.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("initialize"), for_writing(self.engine).begin() as connection:
            if current_revision(connection) is None:
                metadata.create_all(connection)
                stamp_head(connection)
            bootstrap(connection)
        self._adopt_sealing()

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> None:
        """The migrate path (`memorybank migrate`): run pending migrations, bootstrap, then re-index.

        Re-indexing covers rows whose search document an older scheme wrote (all rows, after
        upgrading from revision 0001) and, with a key ring, rows not yet sealed under its keys;
        `progress` gets each batch's count.

        Raises:
            KeyRingError: the database holds sealed memories the configured key ring cannot open.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("migrate"), for_writing(self.engine).begin() as connection:
            upgrade_to_head(connection)
            bootstrap(connection)
        self._adopt_sealing()
        self.reindex(progress=progress)

    def count_to_reindex(self, *, everything: bool = False) -> int:
        """How many memories `reindex` would rewrite: indexed by an older scheme or sealed by older keys (or all).

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
        its own transaction, beside a live server; `progress` gets each batch's count. Key-check
        values of keys no row needs any more are dropped at the end.

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
        key) until they are re-sealed; a plaintext row is refused once every row is sealed.
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


def open_storage(url: str, *, search: str | None = None, sealer: Sealer | None = None) -> SqlStorage:
    """Open SQL storage at `url` and check that the database answers.

    `url` is `mysql://user:pw@host:port/db` (mysqlclient), `mysql+pymysql://…`,
    `sqlite:///path/file.sqlite3`, or `sqlite://` (in memory, for tests). `search` names the
    search engine: `owner` (both dialects; the default), or the seed-literal `fulltext` (MySQL)
    or `fts5` (SQLite). The store always writes the owner-scoped search document, so the
    engine can be switched at any time without re-indexing.
    With a `sealer` (encryption at rest) every stored user text is sealed and the search tokens
    are its blind index; only the owner-scoped engine can search that.
    The schema is not touched: call `initialize`, `migrate` or `check_ready` next (they also
    check the key ring against the database).

    Raises:
        InvalidInputError: ("db") a malformed URL, an unsupported scheme, a missing database
            name or a missing driver; ("search") an unknown engine or one the dialect lacks.
        UnavailableError: the database cannot be reached.
    """
    given = _parse_url(url)
    engine = _create_engine(given)
    try:
        indexer = OwnerIndexer(blind_index=sealer.index if sealer is not None else None)
        search_engine = _search_engine(engine, search, indexer, sealed=sealer is not None)
        _ping(engine)
    except (InvalidInputError, UnavailableError):
        engine.dispose()
        raise
    # URL.set() ignores None, so the password is dropped with the NamedTuple's _replace.
    display_url = given._replace(password=None).render_as_string(hide_password=False)
    return SqlStorage(
        engine=engine, search_engine=search_engine, display_url=display_url, indexer=indexer, sealer=sealer
    )


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


def _search_engine(engine: sa.Engine, name: str | None, indexer: OwnerIndexer, *, sealed: bool) -> SearchEngine:
    dialect = engine.dialect.name
    chosen = DEFAULT_SEARCH[dialect] if name is None else name
    kind = SEARCH_ENGINES.get(chosen)
    if kind is None or dialect not in kind.dialects:
        usable = ", ".join(sorted(key for key, value in SEARCH_ENGINES.items() if dialect in value.dialects))
        raise InvalidInputError("search", f"must name a search engine {dialect} supports: {usable}")
    if sealed and chosen not in SEARCHES_SEALED_TEXT:
        raise InvalidInputError(
            "search", f"{chosen} cannot search sealed text (encryption at rest is on): use owner, the default"
        )
    return kind.make(engine, indexer)


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
