"""`SqlStorage`: everything the bank needs from one SQL database; `open_storage(url)` opens one.

A host with its own SQLAlchemy engine builds `SqlStorage(engine=…, indexer=…)` directly; the
owner-scoped search engine of the engine's dialect comes with it. With a `sealer` (encryption at
rest, docs/security.md) the store seals what it writes and the indexer must write its blind index.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.control_store import SqlControlStore
from adapters_mysql.embedding_reindex import (
    DEFAULT_EMBEDDING_BATCH,
    EmbeddingReport,
    count_to_embed,
    embed_missing,
    reseal_vectors,
)
from adapters_mysql.engines import for_writing, mysql_engine, sqlite_engine
from adapters_mysql.errors import driver_error_code, unavailable_on_driver_error
from adapters_mysql.failover import Host, HostRing, display_hosts, fail_over_between, split_hosts
from adapters_mysql.memory_store import SqlMemoryStore
from adapters_mysql.mysql_search import MysqlOwnerScopedSearch
from adapters_mysql.owner_search import OwnerScopedSearch
from adapters_mysql.panel_session_store import SqlPanelSessionStore
from adapters_mysql.purge_store import PurgeUnsupportedError, SqlPurgeStore
from adapters_mysql.readiness import check_ready, ensure_search_index
from adapters_mysql.reindex import DEFAULT_BATCH_SIZE, ReindexReport, count_to_reindex, reindex
from adapters_mysql.retrying import (
    ResilientControlStore,
    ResilientMemoryStore,
    ResilientPurgeStore,
    ResilientSearch,
    ResilientTokenStore,
)
from adapters_mysql.revisions import (
    current_revision,
    head_revision,
    revisions_after,
    stamp_head,
    stamped_revision,
    upgrade_to_head,
)
from adapters_mysql.schema import memory, metadata
from adapters_mysql.seal_keys import (
    POLICIES,
    SealStatus,
    check_values,
    forget_unused,
    read_status,
    register_primary,
    tighten,
    verify,
)
from adapters_mysql.sealed_rows import RowCodec
from adapters_mysql.spider import is_spider_head, refuse_a_spider_head
from adapters_mysql.spider_store import SpiderMemoryStore
from adapters_mysql.sqlite_search import SqliteOwnerScopedSearch, purge_rewritten_text
from adapters_mysql.token_store import SqlTokenStore
from adapters_mysql.unit_of_work import SqlUnitOfWork
from adapters_mysql.usage import backfill_characters
from adapters_mysql.vector_store import SqlVectorStore
from memorybank_core import (
    BlindIndex,
    Embedder,
    InvalidInputError,
    MemoryBankError,
    Sealer,
    SearchEngine,
    UnavailableError,
)
from memorybank_core.distribution import install_command
from memorybank_core.offboarding import PurgeStore
from memorybank_search import Fusion, OwnerIndexer

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

#: MySQL error codes: the database named in the URL does not exist; the account may not create it.
_UNKNOWN_DATABASE = 1049
_DATABASE_ACCESS_DENIED = 1044
_ACCESS_DENIED = frozenset({1044, 1045, 1142, 1227})

#: A database name we can quote safely in CREATE DATABASE (an identifier cannot be a bind parameter).
_DATABASE_NAME = re.compile(r"^[A-Za-z0-9_$]{1,64}$")

#: How to get each driver that is not part of the standard library: memorybank's extra, or the package.
_DRIVER_EXTRAS = {"mysqldb": "mysql"}
_DRIVER_PACKAGES = {"pymysql": "pip install pymysql"}


#: Reads no row, but fails once the table is gone (the readiness probe).
_MEMORY_TABLE_PROBE = sa.select(memory.c.id).limit(0)

#: The owner-scoped search engine of each dialect.
_SEARCH_ENGINES: dict[str, type[OwnerScopedSearch]] = {
    "mysql": MysqlOwnerScopedSearch,
    "sqlite": SqliteOwnerScopedSearch,
}


class SpiderSealingError(InvalidInputError):
    """A key ring was configured for a sharded (Spider) deployment, which cannot seal yet: refused at startup."""

    def __init__(self) -> None:
        super().__init__(
            "key-file",
            "is set, but encryption at rest is not supported on a sharded (Spider) deployment yet: each data "
            "node would need its own key checks and re-sealing walks. Run the head without a key ring "
            "(no --key-file, MEMORYBANK_KEY_FILE or MEMORYBANK_KEYS), or seal an unsharded database "
            "(docs/security.md)",
        )


class DatabaseMissingError(UnavailableError):
    """The server answers but the database the URL names does not exist, or is closed to the account (1049, 1044)."""


class CreateDatabaseRefusedError(MemoryBankError, RuntimeError):
    """The account may not create the missing database; the message holds the statement to run instead."""


@attrs.frozen(kw_only=True)
class MigrationReport:
    """What `SqlStorage.migrate` did; all empty or zero when the schema was already up to date."""

    revision: str
    """The revision the database is at now (head)."""
    applied: tuple[str, ...]
    """The revisions run, oldest first."""
    created_search_structures: bool
    """True when the FULLTEXT indexes or FTS5 tables were missing and have been created."""
    reindexed: int
    """Memories whose search document was rewritten."""
    measured: int = 0
    """Memories from before revision 0010 whose quota characters were counted."""

    @property
    def changed(self) -> bool:
        """True when anything was done."""
        return bool(self.applied) or self.created_search_structures or self.reindexed > 0 or self.measured > 0


class SqlStorage:
    """Everything the bank needs from one SQL database: store, search, token and panel session stores, schema."""

    def __init__(
        self,
        *,
        engine: sa.Engine,
        indexer: OwnerIndexer,
        display_url: str,
        sealer: Sealer | None = None,
        spider_head: bool = False,
    ) -> None:
        """Storage on `engine` (MySQL/MariaDB or SQLite); `display_url` names it in messages.

        With `sealer`, `indexer` must write that sealer's blind index (`OwnerIndexer(blind_index=sealer.index)`).
        `spider_head`: the database is a Spider head (adapters_mysql.spider), whose deletes
        report no row counts (adapters_mysql.spider_store).

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
        self._ready_at: str | None = None
        """The revision the last full `check_ready` passed at; None until one passes, and after a probe fails."""
        self.indexer = indexer
        self.sealer = sealer
        if sealer is not None and spider_head:
            raise SpiderSealingError
        self.codec = RowCodec(sealer)
        store = (SpiderMemoryStore if spider_head else SqlMemoryStore)(engine, indexer, self.codec)
        # Every port is retried after a lost connection or a conflict (adapters_mysql.retrying).
        self.store = ResilientMemoryStore(store)
        self.lexical_search: SearchEngine = search_engine(engine, indexer)
        """The owner-scoped BM25 engine of the dialect (what `search_engine` is, until `use_embedder`)."""
        self.search_engine = ResilientSearch(self.lexical_search)
        self.vectors = SqlVectorStore(engine, self.codec)
        """The owners' memory vectors (`memory_vector`), for hybrid search."""
        self.embedder: Embedder | None = None
        self.token_store = ResilientTokenStore(SqlTokenStore(engine))
        self.controls = ResilientControlStore(SqlControlStore(engine))
        self.unit_of_work = SqlUnitOfWork(engine)
        self.panel_sessions = SqlPanelSessionStore(engine)
        self._display_url = display_url
        self._spider_head = spider_head

    def use_embedder(self, embedder: Embedder, *, fusion: Fusion | None = None) -> None:
        """Turn on hybrid search: saves also write each memory's vector, and search fuses BM25 with it
        (weighed by `fusion`, default `Fusion()`).

        `memorybank_search.hybrid` (numpy, the `semantic` extra) is imported here, not with the module:
        lexical storage needs neither.
        """
        from memorybank_search.hybrid import HybridSearch

        self.embedder = embedder
        self.store.inner.embedder = embedder
        self.search_engine = ResilientSearch(HybridSearch(self.lexical_search, self.vectors, embedder, fusion=fusion))

    def count_to_embed(self) -> int:
        """How many memories lack a vector of the configured embedder's model (under the current seal).

        Raises:
            UnavailableError: the database cannot be reached.
        """
        return count_to_embed(self.engine, self.codec, self._require_embedder())

    def embed_missing(
        self, *, batch_size: int = DEFAULT_EMBEDDING_BATCH, progress: Callable[[int], None] | None = None
    ) -> EmbeddingReport:
        """`memorybank reindex --embeddings`: write the vector of every memory lacking a current one, online.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        inner = self.store.inner
        return embed_missing(
            self.engine,
            self.codec,
            self._require_embedder(),
            lambda user_id, ids: inner.get_many(user_id=user_id, memory_ids=ids),
            batch_size=batch_size,
            progress=progress,
        )

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise ValueError("no embedder: call use_embedder first")
        return self.embedder

    @property
    def purge_store(self) -> PurgeStore:
        """The storage side of an offboarding purge (`memorybank_core.offboarding`), retried like every port.

        Raises:
            PurgeUnsupportedError: the database is a Spider head, where a batch's deletes and its
                record would commit on different nodes (docs/operations.md says what to do).
        """
        if self._spider_head:
            raise PurgeUnsupportedError(
                "purge does not run through a Spider head yet: its batches would commit on several nodes at once; "
                "run `memorybank purge --db URL` against each data node instead (docs/operations.md, Offboarding)"
            )
        return ResilientPurgeStore(SqlPurgeStore(self.engine))

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

    def migrate(self, *, progress: Callable[[int], None] | None = None) -> MigrationReport:
        """The migrate path (`memorybank migrate`): run pending migrations, repair the search index, re-index.

        Re-indexing covers rows whose search document an older scheme wrote (all rows, after
        upgrading from revision 0001) and, with a key ring, rows not yet sealed under its keys;
        `progress` gets each batch's count.

        Raises:
            KeyRingError: the database holds sealed memories the configured key ring cannot open.
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("migrate"), for_writing(self.engine).begin() as connection:
            refuse_a_spider_head(connection, self.fix_command)
            applied = revisions_after(current_revision(connection))
            upgrade_to_head(connection)
            created = ensure_search_index(connection)
        self._adopt_sealing()
        reindexed = self.reindex(progress=progress).rewritten
        measured = self.measure_usage()
        return MigrationReport(
            revision=head_revision(),
            applied=applied,
            created_search_structures=created,
            reindexed=reindexed,
            measured=measured,
        )

    def measure_usage(self) -> int:
        """Count the quota characters of memories saved before revision 0010, through the key ring; how many.

        Raises:
            UnavailableError: the database cannot be reached; counted batches stay counted.
        """
        inner = self.store.inner
        return backfill_characters(self.engine, lambda user_id, ids: inner.get_many(user_id=user_id, memory_ids=ids))

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
        its own transaction, beside a live server; `progress` gets each batch's count. Hybrid search's
        vectors are re-sealed too (`reseal_vectors`). At the end,
        key-check values of keys no row needs are dropped, and a database whose rows are now all
        sealed refuses plaintext rows from its next start on.

        Raises:
            UnavailableError: the database cannot be reached; committed batches stay done.
        """
        report = reindex(
            self.engine, self.indexer, self.codec, everything=everything, batch_size=batch_size, progress=progress
        )
        # Hybrid search's vectors are sealed like the text they come from (no model needed to re-seal them).
        reseal_vectors(self.engine, self.codec)
        if self.sealer is not None and not report.broken:
            with unavailable_on_driver_error("reindex"), for_writing(self.engine).begin() as connection:
                policy = read_status(connection).strictest_policy()
                if policy != "open":
                    tighten(connection, self.sealer, policy)
                forget_unused(connection, self.sealer)
        if self.dialect_name == "sqlite":
            with unavailable_on_driver_error("reindex"):
                purge_rewritten_text(self.engine)
        return report

    def memory_owners(self) -> list[str]:
        """Every user id that owns at least one memory, in order: for operator walks across users
        (`memorybank secrets scan`), which then read each owner's memories through `store`.

        Raises:
            UnavailableError: the database cannot be reached.
        """
        with unavailable_on_driver_error("memory owners"), self.engine.connect() as connection:
            query = sa.select(memory.c.user_id).distinct().order_by(memory.c.user_id)
            return list(connection.execute(query).scalars())

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
            recorded = verify(status, self.sealer, check_values(connection))
            # Only ever stricter: what a key check records, or what the rows now allow.
            policy = max(recorded, status.strictest_policy(), key=POLICIES.index)
            if self.sealer is not None:
                register_primary(connection, self.sealer, policy=policy)
        _log.info("database mode: %s", status.describe(self.codec.state))
        if self.sealer is None:
            return
        plaintext_allowed = bool(status.plaintext_rows) and policy == "open"
        schemes: list[BlindIndex | None] = [None] if plaintext_allowed else []
        schemes += [
            index
            for key_id, token_format in status.token_schemes()
            if (index := self.sealer.index_for(key_id, token_format)) is not None
        ]
        self.indexer.also_search(schemes)
        self.codec.plaintext_allowed = plaintext_allowed
        self.codec.unauthenticated_tokens_allowed = bool(status.unauthenticated_rows) and policy != "bound"

    def check_ready(self) -> None:
        """Refuse to serve a database that is not at head or lacks its search index.

        Also checks the key ring against the database (and logs which mode it is in).

        Raises:
            SchemaNotReadyError: with a message naming `fix_command`.
            KeyRingError: the database holds sealed memories the configured key ring (or none) cannot open.
            UnavailableError: the database cannot be reached.
        """
        self._ready_at = None
        with unavailable_on_driver_error("readiness check"), self.engine.connect() as connection:
            check_ready(connection, fix_command=self.fix_command)
        self._adopt_sealing()
        self._ready_at = head_revision()

    def probe_ready(self) -> None:
        """The readiness probe's check (`/readyz`): cheap and silent while nothing changed, the full check otherwise.

        Once `check_ready` passed, a probe is one connection and two reads: the version stamp, still
        the revision checked, and the `memory` table, still there. When either fails the full
        `check_ready` runs again and raises what it finds (and passes again once the database is back).

        Raises:
            SchemaNotReadyError, KeyRingError, UnavailableError: as `check_ready`.
        """
        checked = self._ready_at
        if checked is not None:
            try:
                with self.engine.connect() as connection:
                    if stamped_revision(connection) == checked:
                        connection.execute(_MEMORY_TABLE_PROBE)
                        return
            except sa.exc.DBAPIError:
                pass  # the full check below says what is wrong
        self.check_ready()

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_storage(url: str, *, indexer: OwnerIndexer, sealer: Sealer | None = None) -> SqlStorage:
    """Open SQL storage at `url` and check that the database answers.

    `url` is `mysql://user:pw@host:port/db` (mysqlclient), `mysql+pymysql://…`, for a
    cluster `mysql://user:pw@host1:port1,host2:port2/db` (adapters_mysql.failover),
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
    given, hosts = _parse_url(url)
    engine = _open(given, hosts)
    try:
        spider_head = _is_spider_head(engine)
    except UnavailableError:
        engine.dispose()
        raise
    return SqlStorage(
        engine=engine, indexer=indexer, display_url=display_hosts(given, hosts), sealer=sealer, spider_head=spider_head
    )


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
                f"this account may not use the database {engine.url.database} (driver error {code}): it does not "
                "exist yet (`memorybank migrate` creates it) or the account lacks privileges on it"
            ) from error
        raise UnavailableError(f"cannot connect to the database (driver error {code}): {reason}") from error


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
                f"create it (driver error {code}); ask an administrator to run: {statement}; and to grant this "
                "account ALL PRIVILEGES on it; then run `memorybank migrate` again"
            ) from error
        raise UnavailableError(
            f"cannot create the database (driver error {code}): {getattr(error, 'orig', error)}"
        ) from error
    finally:
        engine.dispose()
