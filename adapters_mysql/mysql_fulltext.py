"""`MysqlFulltextSearch`: the seed's search, literally, on InnoDB FULLTEXT.

`MATCH(content) AGAINST(:query IN NATURAL LANGUAGE MODE)` with the query bound verbatim,
in one WHERE with the owner predicate. Natural-language mode ignores `+ - * ~ < > ( )`
but honours "quoted phrases"; the few inputs its parser still rejects are retried with
their words alone. The MySQL-specific SQL lives here only.

Relevance uses whole-table statistics (all users), a 3-character minimum token,
InnoDB's stopwords and no stemming: see docs/storage.md.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match

from adapters_mysql.errors import driver_error_code, unavailable_on_driver_error
from adapters_mysql.schema import memory
from adapters_mysql.store import owned_memories
from memorybank_core import SearchEngine, SearchHit

#: Created by `adapters_mysql.bootstrap`; the name is the reference host's.
FULLTEXT_INDEX_NAME = "memory_content_fulltext"

#: MySQL's "You have an error in your SQL syntax", which the FULLTEXT query parser also raises.
_PARSE_ERROR = 1064
#: What InnoDB's default parser treats as word characters (letters, digits, `_`).
_WORD = re.compile(r"\w+")

_log = logging.getLogger("memorybank.storage")


class MysqlFulltextSearch(SearchEngine):
    """The `SearchEngine` port over MySQL/MariaDB FULLTEXT in natural-language mode."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        with unavailable_on_driver_error("search"), self._engine.connect() as connection:
            try:
                rows = connection.execute(_statement(user_id, query, limit)).all()
            except sa.exc.ProgrammingError as error:
                if driver_error_code(error) != _PARSE_ERROR:
                    raise
                # The FULLTEXT parser rejects a few inputs even in natural-language mode
                # (`*` after nothing indexable, `"" *`). Natural-language mode searches for
                # the words anyway: retry with the words alone, or match nothing.
                words = " ".join(_WORD.findall(query))
                _log.debug("FULLTEXT parser rejected a query; retrying with its %d words", len(words.split()))
                if not words:
                    return []
                rows = connection.execute(_statement(user_id, words, limit)).all()
        return [SearchHit(memory_id=row.id, score=float(row.score)) for row in rows]


def _statement(user_id: str, query: str, limit: int) -> sa.Select[tuple[str, float]]:
    relevance = match(memory.c.content, against=sa.bindparam("query", query, type_=sa.Text)).in_natural_language_mode()
    score = relevance.label("score")
    return (
        sa.select(memory.c.id, score)
        # `> 0` keeps the FULLTEXT index in use and drops the negative scores that
        # deleted-but-not-optimized rows can produce.
        .where(owned_memories(user_id), relevance > 0)
        .order_by(score.desc(), memory.c.id.desc())
        .limit(limit)
    )


#: MySQL's "Duplicate key name": a concurrent creator won the race.
_DUPLICATE_KEY_NAME = 1061

_statistics = sa.table(
    "STATISTICS",
    sa.column("TABLE_SCHEMA", sa.String),
    sa.column("TABLE_NAME", sa.String),
    sa.column("INDEX_NAME", sa.String),
    sa.column("INDEX_TYPE", sa.String),
    schema="information_schema",
)

# Static DDL with no input in it, hence text(). `IF NOT EXISTS` on indexes is MariaDB-only.
_CREATE_FULLTEXT = f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX_NAME} ON {memory.name} (content)"


def fulltext_index_exists(connection: sa.Connection, name: str = FULLTEXT_INDEX_NAME) -> bool:
    """True when `memory` in the connection's current database has the FULLTEXT index `name`."""
    found = connection.execute(
        sa.select(sa.func.count())
        .select_from(_statistics)
        .filter_by(
            TABLE_SCHEMA=sa.func.database(),
            TABLE_NAME=memory.name,
            INDEX_NAME=name,
            INDEX_TYPE="FULLTEXT",
        )
    ).scalar_one()
    return bool(found)


def ensure_fulltext_index(connection: sa.Connection) -> bool:
    """Create the FULLTEXT index on `memory.content` if it is missing; True if this call created it.

    The first FULLTEXT index rebuilds the table and blocks writes while it builds.
    """
    return create_fulltext_index_if_missing(connection, FULLTEXT_INDEX_NAME, _CREATE_FULLTEXT)


def create_fulltext_index_if_missing(connection: sa.Connection, name: str, create_statement: str) -> bool:
    """Run `create_statement` unless the FULLTEXT index `name` exists; True if this call created it.

    A concurrent creator winning the race (duplicate key name) counts as "already there".
    """
    if fulltext_index_exists(connection, name):
        return False
    try:
        connection.execute(sa.text(create_statement))
    except (sa.exc.OperationalError, sa.exc.ProgrammingError) as error:
        if driver_error_code(error) == _DUPLICATE_KEY_NAME:
            return False
        raise
    return True
