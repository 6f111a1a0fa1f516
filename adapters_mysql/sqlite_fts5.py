"""`Fts5Search`: owner-scoped bm25 search for the embedded SQLite store, and its FTS5 schema.

An external-content FTS5 table indexes `memory.content` by the memory's rowid; triggers
keep it in step inside the same transaction as every insert, update and delete. The
SQLite-specific SQL lives here only.

Raw user text is never handed to MATCH: `fts5_query` turns any text into a safe
expression (FTS5 syntax would otherwise raise on `AND`, `c++`, `e-mail`, `"`, `*`, …).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs
import sqlalchemy as sa

from adapters_mysql.errors import unavailable_on_driver_error
from adapters_mysql.schema import memory
from adapters_mysql.store import owned_memories
from memorybank_core import SearchEngine, SearchHit

FTS_TABLE_NAME = "memory_fts"

#: Names of the table and triggers this module creates, for readiness checks and migrations.
FTS_TRIGGER_NAMES = ("memory_fts_after_insert", "memory_fts_after_delete", "memory_fts_after_update")

# unicode61 with diacritics removed: case- and accent-insensitive, like utf8mb4_unicode_ci on MySQL.
# Static DDL, no input in it: hence text(). The names are FTS_TABLE_NAME and FTS_TRIGGER_NAMES.
_CREATE_STATEMENTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5("
    "content, content='memory', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_insert AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_fts(rowid, content) VALUES (new.rowid, new.content); END",
    # An external-content 'delete' must be given the old values exactly.
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_delete AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, content) VALUES ('delete', old.rowid, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_update AFTER UPDATE OF content ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, content) VALUES ('delete', old.rowid, old.content); "
    "INSERT INTO memory_fts(rowid, content) VALUES (new.rowid, new.content); END",
)
_REBUILD = "INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')"
_DROP_STATEMENTS = (
    "DROP TRIGGER IF EXISTS memory_fts_after_insert",
    "DROP TRIGGER IF EXISTS memory_fts_after_delete",
    "DROP TRIGGER IF EXISTS memory_fts_after_update",
    "DROP TABLE IF EXISTS memory_fts",
)

_sqlite_master = sa.table("sqlite_master", sa.column("type", sa.String), sa.column("name", sa.String))
_fts = sa.table(FTS_TABLE_NAME, sa.column("rowid", sa.Integer))

#: A run of word characters; each becomes one quoted FTS5 string.
_TOKEN = re.compile(r"\w+")


def fts5_query(text: str) -> str | None:
    """A safe FTS5 expression for any user text: each token quoted, joined with OR; None if none remain.

    Inside double quotes FTS5 only tokenizes (doubled quotes escape a quote), so operators,
    column filters and prefix stars in the user's text become plain words.
    """
    tokens = dict.fromkeys(_TOKEN.findall(text))
    if not tokens:
        return None
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)


class Fts5Search(SearchEngine):
    """The `SearchEngine` port over SQLite FTS5 with bm25 ranking (higher score is better)."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        expression = fts5_query(query)
        if expression is None:
            return []
        # bm25() is lower-is-better and negative; negated it is a positive score, higher better.
        score = (-sa.func.bm25(sa.literal_column(FTS_TABLE_NAME))).label("score")
        statement = (
            sa.select(memory.c.id, score)
            .select_from(_fts.join(memory, sa.literal_column("memory.rowid") == _fts.c.rowid))
            .where(
                sa.literal_column(FTS_TABLE_NAME).op("MATCH")(sa.bindparam("query", expression, type_=sa.Text)),
                owned_memories(user_id),
            )
            .order_by(score.desc(), memory.c.id.desc())
            .limit(limit)
        )
        with unavailable_on_driver_error("search"), self._engine.connect() as connection:
            rows = connection.execute(statement).all()
        return [SearchHit(memory_id=row.id, score=float(row.score)) for row in rows if row.score > 0]


@attrs.frozen
class Fts5Objects:
    """An external-content FTS5 table and the triggers that keep it in step with `memory`."""

    table: str
    triggers: tuple[str, ...]
    create_statements: tuple[str, ...]
    rebuild_statement: str
    drop_statements: tuple[str, ...]

    def ready(self, connection: sa.Connection) -> bool:
        """True when the table and all its triggers exist."""
        names = set(
            connection.execute(
                sa.select(_sqlite_master.c.name).where(
                    _sqlite_master.c.name.in_([self.table, *self.triggers]),
                    _sqlite_master.c.type.in_(["table", "trigger"]),
                )
            ).scalars()
        )
        return names == {self.table, *self.triggers}

    def ensure(self, connection: sa.Connection) -> bool:
        """Create the table and triggers if missing (indexing existing rows); True if anything was made."""
        if self.ready(connection):
            return False
        for statement in self.create_statements:
            connection.execute(sa.text(statement))
        # Rows written while the table or a trigger was missing are not indexed: rebuild from `memory`.
        connection.execute(sa.text(self.rebuild_statement))
        return True

    def drop(self, connection: sa.Connection) -> None:
        """Drop the table and its triggers (for downgrades)."""
        for statement in self.drop_statements:
            connection.execute(sa.text(statement))


CONTENT_FTS = Fts5Objects(FTS_TABLE_NAME, FTS_TRIGGER_NAMES, _CREATE_STATEMENTS, _REBUILD, _DROP_STATEMENTS)


def fts5_ready(connection: sa.Connection) -> bool:
    """True when the FTS5 table and all its triggers exist."""
    return CONTENT_FTS.ready(connection)


def ensure_fts5(connection: sa.Connection) -> bool:
    """Create the FTS5 table and triggers if missing (indexing existing rows); True if anything was made."""
    return CONTENT_FTS.ensure(connection)


def drop_fts5(connection: sa.Connection) -> None:
    """Drop the FTS5 table and its triggers (for downgrades)."""
    CONTENT_FTS.drop(connection)
