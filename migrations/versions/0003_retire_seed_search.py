"""Retire the seed's search: drop the full-text structure over `content`.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

The seed-literal engines (`MATCH(content)` on MySQL, FTS5 over `content` on SQLite) left
production: their whole-table statistics let other users' memories change a user's scores,
and every write paid for a second full-text structure. Search reads only the owner-scoped
structure of revision 0002. The downgrade recreates the old structure (and re-indexes the rows
into it on SQLite). The DDL is written out, as in 0001: this revision imports nothing of memorybank.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_SQLITE_DROP_CONTENT_FTS = (
    "DROP TRIGGER IF EXISTS memory_fts_after_insert",
    "DROP TRIGGER IF EXISTS memory_fts_after_delete",
    "DROP TRIGGER IF EXISTS memory_fts_after_update",
    "DROP TABLE IF EXISTS memory_fts",
)
_SQLITE_CONTENT_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5("
    "content, content='memory', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_insert AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_delete AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, content) VALUES ('delete', old.rowid, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS memory_fts_after_update AFTER UPDATE OF content ON memory BEGIN "
    "INSERT INTO memory_fts(memory_fts, rowid, content) VALUES ('delete', old.rowid, old.content); "
    "INSERT INTO memory_fts(rowid, content) VALUES (new.rowid, new.content); END",
    "INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')",
)


def upgrade() -> None:
    """Drop the FULLTEXT index (MySQL) or the FTS5 table and its triggers (SQLite) over `content`."""
    if op.get_bind().dialect.name == "mysql":
        if _mysql_index_exists("memory_content_fulltext"):
            op.execute("DROP INDEX memory_content_fulltext ON memory")
    else:
        for statement in _SQLITE_DROP_CONTENT_FTS:
            op.execute(statement)


def downgrade() -> None:
    """Recreate the structure over `content`; building the MySQL index blocks writes while it runs."""
    if op.get_bind().dialect.name == "mysql":
        if not _mysql_index_exists("memory_content_fulltext"):
            op.execute("CREATE FULLTEXT INDEX memory_content_fulltext ON memory (content)")
    else:
        for statement in _SQLITE_CONTENT_FTS:
            op.execute(statement)


def _mysql_index_exists(name: str) -> bool:
    # An operator may have dropped it by hand already; the names are literals, not input.
    statistics = sa.table(
        "STATISTICS",
        sa.column("TABLE_SCHEMA", sa.String),
        sa.column("TABLE_NAME", sa.String),
        sa.column("INDEX_NAME", sa.String),
        schema="information_schema",
    )
    query = (
        sa.select(sa.func.count())
        .select_from(statistics)
        .filter_by(TABLE_SCHEMA=sa.func.database(), TABLE_NAME="memory", INDEX_NAME=name)
    )
    return bool(op.get_bind().execute(query).scalar_one())
