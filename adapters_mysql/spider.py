"""A sharded deployment on MariaDB Spider: data nodes hold the rows, a head routes by `user_id`.

Every data node is an ordinary memorybank database, migrated by alembic like a single server.
The head holds no rows: for every table of the data nodes it has a Spider table of the same
columns and indexes (FULLTEXT included: `MATCH` needs them declared on the head too), derived
from the first data node's `SHOW CREATE TABLE`, so every revision carries over unchanged.

- A table with a `user_id` column is *sharded*: `PARTITION BY KEY (user_id)`, one partition per
  data node. Its primary and unique keys gain `user_id` on the head (Spider requires the
  partitioning column in every unique key); on the data nodes they stay as they are, and ids
  remain globally unique because they are UUIDv7 TypeIDs, not because an index says so.
- Every other table, and `api_token` and `panel_credential` (looked up by secret hash before
  the user is known), is *unsharded*: it lives on the first data node, and the head links to it. Like Vitess's
  unsharded keyspace, that node is then needed by every request (token lookup).
- The head also links to each data node's revision table (`memorybank_shard_version_N`), so
  `check_ready` on the head verifies that every node is reachable and at head.

`apply_to_head` is idempotent: a table whose derived definition did not change is left alone
(`memorybank_spider_table` records a hash of each definition); a changed one is dropped and
recreated, which loses nothing because the head stores no rows. The DDL is applied to the data
nodes first and to the head second (`migrate_sharded`), as Spider requires.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import URL

from adapters_mysql.errors import SchemaNotReadyError

_log = logging.getLogger("memorybank.storage")

#: The sharding key of every sharded table.
SHARD_KEY = "user_id"
#: Tables with a `user_id` that are not sharded: their lookups by secret hash (API tokens, panel
#: sessions) run before the user is known.
UNSHARDED_TABLES = frozenset({"api_token", "panel_credential"})
#: The head's own bookkeeping table: one row per Spider table, with its definition's hash.
BOOKKEEPING_TABLE = "memorybank_spider_table"
#: On the head, the link to data node N's revision table is `memorybank_shard_version_N`.
SHARD_VERSION_TABLE = "memorybank_shard_version_{number}"
VERSION_TABLE = "memorybank_alembic_version"
SERVER_NAME = "memorybank_shard_{number}"

_bookkeeping = sa.Table(
    BOOKKEEPING_TABLE,
    sa.MetaData(),
    sa.Column("table_name", sa.String(64), primary_key=True),
    sa.Column("definition_sha256", sa.CHAR(64), nullable=False),
    mysql_engine="InnoDB",
)

_UNIQUE_KEY = re.compile(r"^(\s*(?:PRIMARY KEY|UNIQUE KEY `[^`]+`) \()(.*)(\),?)$")
_TABLE_OPTIONS = re.compile(r"\) ENGINE=InnoDB(.*)$", re.DOTALL)
_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=\d+")


def server_name(number: int) -> str:
    """The head's name for data node `number` (1-based)."""
    return SERVER_NAME.format(number=number)


def is_sharded(table: str, columns: Sequence[str]) -> bool:
    """True when `table` is spread over the data nodes by `user_id`."""
    return SHARD_KEY in columns and table not in UNSHARDED_TABLES


def _literal(value: str) -> str:
    """A SQL string literal (CREATE SERVER takes no bound parameters)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def server_statement(number: int, url: URL) -> str:
    """`CREATE OR REPLACE SERVER` for data node `number` at `url`."""
    options = [
        f"HOST {_literal(url.host or '127.0.0.1')}",
        f"PORT {int(url.port or 3306)}",
        f"USER {_literal(url.username or '')}",
        f"PASSWORD {_literal(url.password or '')}",
        f"DATABASE {_literal(url.database or '')}",
    ]
    return f"CREATE OR REPLACE SERVER {server_name(number)} FOREIGN DATA WRAPPER mysql OPTIONS ({', '.join(options)})"


def head_definition(create_table: str, columns: Sequence[str], table: str, shards: int) -> str:
    """The head's Spider table for a data node's `SHOW CREATE TABLE` text."""
    sharded = is_sharded(table, columns)
    lines = []
    for line in create_table.splitlines():
        key = _UNIQUE_KEY.match(line)
        if sharded and key is not None and f"`{SHARD_KEY}`" not in key.group(2).split(","):
            line = f"{key.group(1)}{key.group(2)},`{SHARD_KEY}`{key.group(3)}"
        lines.append(line)
    body = _AUTO_INCREMENT.sub("", "\n".join(lines))
    options = _TABLE_OPTIONS.search(body)
    if options is None:
        raise SchemaNotReadyError(f"the data nodes' table {table} is not an InnoDB table")
    if sharded:
        partitions = ", ".join(f"PARTITION p{n} COMMENT = 'srv \"{server_name(n)}\"'" for n in range(1, shards + 1))
        spider = (
            f') ENGINE=SPIDER{options.group(1)} COMMENT=\'wrapper "mysql", table "{table}"\''
            f" PARTITION BY KEY (`{SHARD_KEY}`) ({partitions})"
        )
    else:
        spider = (
            f') ENGINE=SPIDER{options.group(1)} COMMENT=\'wrapper "mysql", srv "{server_name(1)}", table "{table}"\''
        )
    return body[: options.start()] + spider


def _version_link(number: int) -> str:
    return (
        f"CREATE TABLE `{SHARD_VERSION_TABLE.format(number=number)}` (version_num VARCHAR(32) NOT NULL PRIMARY KEY)"
        f' ENGINE=SPIDER COMMENT=\'wrapper "mysql", srv "{server_name(number)}", table "{VERSION_TABLE}"\''
    )


def _tables(source: sa.Connection) -> dict[str, tuple[str, list[str]]]:
    """Each base table of the data node: its `SHOW CREATE TABLE` text and its columns."""
    inspector = sa.inspect(source)
    found = {}
    for table in inspector.get_table_names():
        create = source.exec_driver_sql(f"SHOW CREATE TABLE `{table}`").one()[1]
        found[table] = (create, [column["name"] for column in inspector.get_columns(table)])
    return found


def apply_to_head(head: sa.Connection, source: sa.Connection, shards: Sequence[URL]) -> list[str]:
    """Make the head's Spider definitions match the data nodes; the names of the tables (re)created.

    `source` is a connection to the first data node (all are at the same revision by now).

    Raises:
        SchemaNotReadyError: the head already spreads its tables over a different number of data
            nodes (moving users between nodes is an export/import, see docs/scaling.md).
    """
    _refuse_a_new_shard_count(head, len(shards))
    for number, url in enumerate(shards, start=1):
        head.exec_driver_sql(server_statement(number, url))
    _bookkeeping.create(head, checkfirst=True)
    wanted = {
        table: head_definition(create, columns, table, len(shards))
        for table, (create, columns) in _tables(source).items()
    }
    wanted.update({SHARD_VERSION_TABLE.format(number=n): _version_link(n) for n in range(1, len(shards) + 1)})
    recorded: dict[str, str] = {
        row.table_name: row.definition_sha256 for row in head.execute(sa.select(_bookkeeping)).all()
    }
    existing = set(sa.inspect(head).get_table_names())
    changed = []
    for table, definition in wanted.items():
        digest = hashlib.sha256(definition.encode()).hexdigest()
        if recorded.get(table) == digest and table in existing:
            continue
        head.exec_driver_sql(f"DROP TABLE IF EXISTS `{table}`")
        head.exec_driver_sql(definition)
        head.execute(_bookkeeping.delete().where(_bookkeeping.c.table_name == table))
        head.execute(_bookkeeping.insert().values(table_name=table, definition_sha256=digest))
        changed.append(table)
    for table in set(recorded) - set(wanted):
        head.exec_driver_sql(f"DROP TABLE IF EXISTS `{table}`")
        head.execute(_bookkeeping.delete().where(_bookkeeping.c.table_name == table))
    # Spider caches its connections per server: new server options take effect after a flush.
    head.exec_driver_sql("FLUSH TABLES")
    _log.info("spider head: %d tables (re)defined over %d data nodes", len(changed), len(shards))
    return changed


def _refuse_a_new_shard_count(head: sa.Connection, shards: int) -> None:
    rows = head.execute(
        sa.text(
            "SELECT TABLE_NAME, COUNT(*) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = DATABASE() "
            "AND PARTITION_NAME IS NOT NULL GROUP BY TABLE_NAME"
        )
    ).all()
    for table, count in rows:
        if count != shards:
            raise SchemaNotReadyError(
                f"the head spreads {table} over {count} data nodes, not {shards}: changing the number of nodes "
                "moves users between them (export and import each user, see docs/scaling.md)"
            )


def is_spider_head(connection: sa.Connection) -> bool:
    """True when the connection's database is a Spider head made by `apply_to_head`."""
    return BOOKKEEPING_TABLE in sa.inspect(connection).get_table_names()


def shard_revisions(connection: sa.Connection) -> list[str | None]:
    """Each data node's revision, read through the head's links, in node order.

    Raises:
        sqlalchemy.exc.OperationalError: a data node cannot be reached (Spider's error 1429).
    """
    tables = sorted(
        (name for name in sa.inspect(connection).get_table_names() if name.startswith("memorybank_shard_version_")),
        key=lambda name: int(name.rsplit("_", 1)[1]),
    )
    version = sa.column("version_num", sa.String)
    return [
        connection.execute(sa.select(sa.func.max(version)).select_from(sa.table(name))).scalar_one() for name in tables
    ]


def check_shards(connection: sa.Connection, *, head_revision: str, fix_command: str) -> None:
    """Refuse to serve a Spider head unless every data node answers and is at `head_revision`.

    Raises:
        SchemaNotReadyError: a data node is behind or ahead; the message names the node and the fix.
    """
    for number, revision in enumerate(shard_revisions(connection), start=1):
        if revision != head_revision:
            raise SchemaNotReadyError(
                f"data node {number} ({server_name(number)}) is at revision {revision}, not {head_revision}: "
                f"run `{fix_command} --shards URL,URL,…`"
            )


def refuse_a_spider_head(connection: sa.Connection, fix_command: str) -> None:
    """Stop a plain `migrate` on a Spider head: its DDL would reach only the head and the first node.

    Raises:
        SchemaNotReadyError: naming the sharded command.
    """
    if is_spider_head(connection):
        raise SchemaNotReadyError(
            f"this database is a Spider head: migrate the data nodes and the head together with "
            f"`{fix_command} --shards URL,URL,…`"
        )
