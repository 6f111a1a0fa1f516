"""Offboarding purges: one row per run, with its counts and the digest of the removed ids.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

`memorybank purge` records each run here and updates the row in the same transaction as each
batch it deletes, so a run interrupted by a crash is resumed by the next purge of the same subject.
The DDL is written out: this revision imports nothing of memorybank.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def _datetime() -> sa.types.TypeEngine[Any]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    """Create the `purge_run` table."""
    op.create_table(
        "purge_run",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("subject_kind", sa.String(16), nullable=False),
        sa.Column("subject_id", sa.String(64), nullable=False),
        sa.Column("memories", sa.BigInteger(), nullable=False),
        sa.Column("contexts", sa.BigInteger(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("panel_sessions", sa.Integer(), nullable=False),
        sa.Column("batches", sa.Integer(), nullable=False),
        sa.Column("digest", sa.CHAR(64), nullable=False),
        sa.Column("started_at", _datetime(), nullable=False),
        sa.Column("updated_at", _datetime(), nullable=False),
        sa.Column("finished_at", _datetime(), nullable=True),
        **_TABLE_OPTIONS,
    )
    op.create_index("purge_run_subject", "purge_run", ["subject_id", "subject_kind", "finished_at"])


def downgrade() -> None:
    """Drop the `purge_run` table (the receipts printed by `memorybank purge` are the operator's copy)."""
    op.drop_table("purge_run")
