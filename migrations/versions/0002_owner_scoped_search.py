"""Add the owner-scoped search document to memory, then its full-text structure.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

`search_terms` (owner-tagged tokens), `doc_length` and `search_version`; the owner index
gains `scope` and `doc_length` so an owner's BM25 statistics are read from the index alone.
Then the FULLTEXT index on `search_terms` (MySQL) or the `memory_terms_fts` FTS5 table
(SQLite). Existing rows get `search_version` 0: `memorybank migrate` re-indexes them
afterwards (`memorybank reindex` does it on demand). Sizes and DDL are literals on purpose,
as in 0001: this revision imports nothing of memorybank.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

#: The FTS5 table over the tagged tokens and its triggers (SQLite); `_` keeps a token whole.
_SQLITE_TERMS_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms_fts USING fts5(search_terms, content='memory', "
    "content_rowid='rowid', tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\", detail=none)",
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_insert AFTER INSERT ON memory BEGIN "
    "INSERT INTO memory_terms_fts(rowid, search_terms) VALUES (new.rowid, new.search_terms); END",
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_delete AFTER DELETE ON memory BEGIN "
    "INSERT INTO memory_terms_fts(memory_terms_fts, rowid, search_terms) "
    "VALUES ('delete', old.rowid, old.search_terms); END",
    "CREATE TRIGGER IF NOT EXISTS memory_terms_fts_after_update AFTER UPDATE OF search_terms ON memory BEGIN "
    "INSERT INTO memory_terms_fts(memory_terms_fts, rowid, search_terms) "
    "VALUES ('delete', old.rowid, old.search_terms); "
    "INSERT INTO memory_terms_fts(rowid, search_terms) VALUES (new.rowid, new.search_terms); END",
    "INSERT INTO memory_terms_fts(memory_terms_fts) VALUES ('rebuild')",
)
_SQLITE_DROP_TERMS_FTS = (
    "DROP TRIGGER IF EXISTS memory_terms_fts_after_insert",
    "DROP TRIGGER IF EXISTS memory_terms_fts_after_delete",
    "DROP TRIGGER IF EXISTS memory_terms_fts_after_update",
    "DROP TABLE IF EXISTS memory_terms_fts",
)


def upgrade() -> None:
    """Add the search columns, widen the owner index, then the full-text structure over `search_terms`."""
    op.add_column("memory", sa.Column("search_terms", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql")))
    op.add_column("memory", sa.Column("doc_length", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("memory", sa.Column("search_version", sa.SmallInteger(), nullable=False, server_default="0"))
    _owner_index(["user_id", "created_at", "id", "scope", "doc_length"])
    if op.get_bind().dialect.name == "mysql":
        op.execute("CREATE FULLTEXT INDEX memory_search_terms_fulltext ON memory (search_terms)")
    else:
        for statement in _SQLITE_TERMS_FTS:
            op.execute(statement)


def downgrade() -> None:
    """Drop what revision 0002 added, the full-text structure first."""
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_DROP_TERMS_FTS:
            op.execute(statement)
    else:
        op.execute("DROP INDEX memory_search_terms_fulltext ON memory")
    _owner_index(["user_id", "created_at", "id"])
    op.drop_column("memory", "search_version")
    op.drop_column("memory", "doc_length")
    op.drop_column("memory", "search_terms")


def _owner_index(columns: list[str]) -> None:
    op.drop_index("memory_user_id_created_at_id", table_name="memory")
    op.create_index("memory_user_id_created_at_id", "memory", columns)
