"""Create memory, memory_context and api_token, then the search structures.

Revision ID: 0001
Revises:
Create Date: 2026-07-02

Column sizes are written out here on purpose: a revision is a snapshot of history and
must not move when `memorybank_core.limits` changes later (that takes a new revision).
The tests prove this snapshot equals the current metadata.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from adapters_mysql.bootstrap import bootstrap
from adapters_mysql.sqlite_fts5 import drop_fts5

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def _id() -> sa.String:
    return sa.String(64)


def _timestamp() -> sa.types.TypeEngine[datetime]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    """Create the three tables, then run the bootstrap (FULLTEXT index or FTS5 table)."""
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
    # Autogenerate cannot see FULLTEXT/FTS5; the same idempotent step runs on the fresh path.
    bootstrap(op.get_bind())


def downgrade() -> None:
    """Drop everything revision 0001 created."""
    if op.get_bind().dialect.name == "sqlite":
        drop_fts5(op.get_bind())
    op.drop_table("api_token")
    op.drop_table("memory_context")
    op.drop_table("memory")
