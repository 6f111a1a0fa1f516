"""The seed's search, literally: the comparison the benchmarks measure the owner-scoped engine against.

It left production (revision 0003, ADR 0007): `MATCH(content) AGAINST(:query IN NATURAL LANGUAGE
MODE)` ranks with whole-table statistics, so another user's saves and deletes change a user's
scores, and its index costs every write a second full-text structure. The benchmarks add its
FULLTEXT index to their own databases and search through `SeedFulltextSearch`; `fts5_query` is
the seed's safe FTS5 expression, which the recall benchmark's FTS5 baseline uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match

from adapters_mysql.errors import driver_error_code
from adapters_mysql.owner import owned_memories
from adapters_mysql.schema import memory
from memorybank_core import SearchEngine, SearchHit

SEED_INDEX_NAME = "memory_content_fulltext"
#: MySQL's "You have an error in your SQL syntax", which the FULLTEXT query parser also raises.
_PARSE_ERROR = 1064
#: What InnoDB's default parser treats as word characters (letters, digits, `_`).
_WORD = re.compile(r"\w+")


def add_seed_index(engine: sa.Engine) -> None:
    """Give the benchmark database the seed's FULLTEXT index over `content`, unless it has it."""
    with engine.begin() as connection:
        found = connection.execute(
            sa.text(
                "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME = 'memory' AND INDEX_NAME = :name"
            ),
            {"name": SEED_INDEX_NAME},
        ).scalar_one()
        if not found:
            connection.exec_driver_sql(f"CREATE FULLTEXT INDEX {SEED_INDEX_NAME} ON memory (content)")


class SeedFulltextSearch(SearchEngine):
    """The seed's `MATCH(content)` in natural-language mode, owner predicate in the same WHERE."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def search(self, *, user_id: str, query: str, limit: int) -> Sequence[SearchHit]:
        with self._engine.connect() as connection:
            try:
                rows = connection.execute(_statement(user_id, query, limit)).all()
            except sa.exc.ProgrammingError as error:
                if driver_error_code(error) != _PARSE_ERROR:
                    raise
                # The parser rejects a few inputs even in natural-language mode: retry with the words.
                words = " ".join(_WORD.findall(query))
                if not words:
                    return []
                rows = connection.execute(_statement(user_id, words, limit)).all()
        return [SearchHit(memory_id=row.id, score=float(row.score)) for row in rows]


def _statement(user_id: str, query: str, limit: int) -> sa.Select[tuple[str, float]]:
    relevance = match(memory.c.content, against=sa.bindparam("query", query, type_=sa.Text)).in_natural_language_mode()
    score = relevance.label("score")
    return (
        sa.select(memory.c.id, score)
        .where(owned_memories(user_id), relevance > 0)
        .order_by(score.desc(), memory.c.id.desc())
        .limit(limit)
    )


def fts5_query(text: str) -> str | None:
    """A safe FTS5 expression for any text: each `\\w+` token quoted, joined with OR; None if none remain."""
    tokens = dict.fromkeys(_WORD.findall(text))
    if not tokens:
        return None
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)
