"""Add the owner-scoped search document to memory, then its full-text structure.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

`search_terms` (owner-tagged tokens), `doc_length` and `search_version`; the owner index
gains `scope` and `doc_length` so an owner's BM25 statistics are read from the index alone.
The bootstrap then creates the FULLTEXT index on `search_terms` (MySQL) or the
`memory_terms_fts` FTS5 table (SQLite). Existing rows get `search_version` 0:
`memorybank migrate` re-indexes them afterwards (`memorybank reindex` does it on demand).
Sizes are literals on purpose, as in 0001.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from adapters_mysql.bootstrap import bootstrap
from adapters_mysql.owner_fulltext import drop_owner_fulltext_index
from adapters_mysql.sqlite_owner_fts5 import drop_terms_fts5

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the search columns, widen the owner index, then run the bootstrap."""
    op.add_column("memory", sa.Column("search_terms", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql")))
    op.add_column("memory", sa.Column("doc_length", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("memory", sa.Column("search_version", sa.SmallInteger(), nullable=False, server_default="0"))
    _owner_index(["user_id", "created_at", "id", "scope", "doc_length"])
    bootstrap(op.get_bind())


def downgrade() -> None:
    """Drop what revision 0002 added, the full-text structure first."""
    if op.get_bind().dialect.name == "sqlite":
        drop_terms_fts5(op.get_bind())
    else:
        drop_owner_fulltext_index(op.get_bind())
    _owner_index(["user_id", "created_at", "id"])
    op.drop_column("memory", "search_version")
    op.drop_column("memory", "doc_length")
    op.drop_column("memory", "search_terms")


def _owner_index(columns: list[str]) -> None:
    op.drop_index("memory_user_id_created_at_id", table_name="memory")
    op.create_index("memory_user_id_created_at_id", "memory", columns)
