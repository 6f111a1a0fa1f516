"""Hybrid search: each memory's vector in its own table, keyed by owner and memory.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03

Empty until an embedder writes it (`serve --search hybrid` on save, `memorybank reindex
--embeddings` for memories saved before). Keyed by (user_id, memory_id) so a Spider head shards it
by user like the memory tables. Sizes are literals on purpose, as in 0001; ids are binary on MySQL
as revision 0011 made every id column.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def _id() -> sa.types.TypeEngine[str]:
    return sa.String(64).with_variant(mysql.VARCHAR(64, charset="utf8mb4", collation="utf8mb4_bin"), "mysql")


def upgrade() -> None:
    """Create `memory_vector`."""
    op.create_table(
        "memory_vector",
        sa.Column("user_id", _id(), primary_key=True),
        sa.Column("memory_id", _id(), primary_key=True),
        sa.Column("model", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("seal_state", sa.String(32), nullable=True),
        **_TABLE_OPTIONS,
    )


def downgrade() -> None:
    """Drop `memory_vector` (hybrid search then finds only by words until re-indexed)."""
    op.drop_table("memory_vector")
