"""Memories that change: a revision counter, who wrote each version, retirement, and the kept earlier versions.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04

`memory.revision` counts the memory's versions (1 when saved; every edit, retirement or restore makes
the next, and it is the memory's ETag); `retired_by` names the memory that replaced it (a save's
`supersedes`; NULL for a current memory); `written_via` and `written_by` say through which door
(`rest`, `mcp`, `panel`, `import`) and with which credential (a token or session id, or an issuer;
never a secret) the current version was written; NULL for memories saved before this revision.

`memory_revision` keeps each memory's earlier versions, keyed by owner, memory and revision (so a
Spider head shards it by user like the memory tables): `body` holds the version's content, tags and
contexts as one JSON text, or on a sealed database that sealed (`seal_state`), so an old version is
never plaintext and never in a search index. Sizes are literals on purpose, as in 0001; ids are binary
on MySQL as revision 0011 made every id column. The DDL is written out: this revision imports nothing
of memorybank.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def _id() -> sa.types.TypeEngine[str]:
    return sa.String(64).with_variant(mysql.VARCHAR(64, charset="utf8mb4", collation="utf8mb4_bin"), "mysql")


def _datetime() -> sa.types.TypeEngine[Any]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    """Add the memory's revision columns and create `memory_revision`."""
    # Plain ADD COLUMN, never a batch copy: SQLite's FTS5 table indexes `memory` by rowid.
    op.add_column("memory", sa.Column("revision", sa.Integer(), nullable=False, server_default="1"))
    op.add_column("memory", sa.Column("retired_by", _id(), nullable=True))
    op.add_column("memory", sa.Column("written_via", sa.String(16), nullable=True))
    op.add_column("memory", sa.Column("written_by", sa.String(255), nullable=True))
    op.create_table(
        "memory_revision",
        sa.Column("user_id", _id(), primary_key=True),
        sa.Column("memory_id", _id(), primary_key=True),
        sa.Column("revision", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("body", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql"), nullable=False),
        sa.Column("written_at", _datetime(), nullable=False),
        sa.Column("written_via", sa.String(16), nullable=True),
        sa.Column("written_by", sa.String(255), nullable=True),
        sa.Column("seal_state", sa.String(32), nullable=True),
        **_TABLE_OPTIONS,
    )


def downgrade() -> None:
    """Drop `memory_revision` and the memory's revision columns (every kept earlier version is lost)."""
    op.drop_table("memory_revision")
    for column in ("written_by", "written_via", "retired_by", "revision"):
        op.drop_column("memory", column)
