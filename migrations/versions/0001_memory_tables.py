"""Create memory, memory_context and api_token, then the seed's full-text structure over `content`.

Revision ID: 0001
Revises:
Create Date: 2026-07-02

Everything is written out here on purpose, sizes and DDL alike: a revision is a snapshot of
history and must not move when `memorybank_core.limits` or the adapters change later (that
takes a new revision). It imports nothing of memorybank. Revision 0003 drops the structure
over `content` again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


#: The FTS5 table over `content` and the triggers that kept it in step (SQLite).
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
)
_SQLITE_DROP_CONTENT_FTS = (
    "DROP TRIGGER IF EXISTS memory_fts_after_insert",
    "DROP TRIGGER IF EXISTS memory_fts_after_delete",
    "DROP TRIGGER IF EXISTS memory_fts_after_update",
    "DROP TABLE IF EXISTS memory_fts",
)


def _id() -> sa.String:
    return sa.String(64)


def _timestamp() -> sa.types.TypeEngine[datetime]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    """Create the three tables, then the FULLTEXT index (MySQL) or FTS5 table (SQLite) over `content`."""
    op.create_table(
        "memory",
        sa.Column("id", _id(), primary_key=True),
        sa.Column("user_id", _id(), nullable=False),
        sa.Column("org_id", _id(), nullable=False),
        sa.Column("scope", sa.Enum("user", "org", name="memory_scope"), nullable=False, server_default="user"),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Column("updated_at", _timestamp(), nullable=False),
        sa.Index("memory_user_id_created_at_id", "user_id", "created_at", "id"),
        **_TABLE_OPTIONS,
    )
    op.create_table(
        "memory_context",
        sa.Column("id", _id(), primary_key=True),
        sa.Column("memory_id", _id(), nullable=False),
        sa.Column("user_id", _id(), nullable=False),
        sa.Column("citation", sa.JSON(), nullable=True),
        sa.Column("snippet", sa.Text(), nullable=False),
        sa.Column(
            "origin",
            sa.Enum("active_conversation", "searched_conversation", name="memory_context_origin"),
            nullable=True,
        ),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Index("memory_context_user_id_memory_id", "user_id", "memory_id"),
        **_TABLE_OPTIONS,
    )
    op.create_table(
        "api_token",
        sa.Column("id", _id(), primary_key=True),
        sa.Column("token_hash", sa.CHAR(64), nullable=False),
        sa.Column("user_id", _id(), nullable=False),
        sa.Column("org_id", _id(), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Column("revoked_at", _timestamp(), nullable=True),
        sa.UniqueConstraint("token_hash", name="api_token_token_hash"),
        sa.Index("api_token_user_id", "user_id"),
        **_TABLE_OPTIONS,
    )
    # Autogenerate cannot see FULLTEXT/FTS5: written by hand.
    if op.get_bind().dialect.name == "mysql":
        op.execute("CREATE FULLTEXT INDEX memory_content_fulltext ON memory (content)")
    else:
        for statement in _SQLITE_CONTENT_FTS:
            op.execute(statement)


def downgrade() -> None:
    """Drop everything revision 0001 created."""
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_DROP_CONTENT_FTS:
            op.execute(statement)
    op.drop_table("api_token")
    op.drop_table("memory_context")
    op.drop_table("memory")
