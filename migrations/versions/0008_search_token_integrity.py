"""Sealed search tokens authenticated per row, and the reindex generation that keeps rotation miss-free.

Revision ID: 0008
Revises: 0010
Create Date: 2026-12-03

`memory.search_mac` holds the authenticator of a sealed row's search tokens (adapters_mysql.sealed_rows);
NULL for plaintext rows and for rows sealed before this revision, whose tokens have no format
stamp (token format 1): they keep working, and `memorybank keys rotate` (or `reindex`) rewrites
them in format 2 with an authenticator. `reindex_generation` is one row counting the batches that
rewrote search tokens (adapters_mysql.rewrite_fence). Sizes are literals on purpose, as in 0001.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0010"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    """Add the token authenticator column and the reindex generation table."""
    op.add_column("memory", sa.Column("search_mac", sa.String(64), nullable=True))
    op.create_table(
        "reindex_generation",
        sa.Column("id", sa.SmallInteger(), primary_key=True, autoincrement=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        **_TABLE_OPTIONS,
    )


def downgrade() -> None:
    """Drop what revision 0008 added; refused while a row's tokens are in format 2 (0010 cannot read them)."""
    if op.get_bind().execute(sa.text("SELECT 1 FROM memory WHERE search_mac IS NOT NULL LIMIT 1")).first():
        raise RuntimeError(
            "this database holds search tokens in format 2, which revision 0010 cannot read: not downgraded"
        )
    op.drop_table("reindex_generation")
    op.drop_column("memory", "search_mac")
